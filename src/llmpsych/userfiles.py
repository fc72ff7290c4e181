"""Files a user hands us (scale files, situations, grids, imported answers, configs, template sets, released
logs to re-score): one bounded reader and one safe JSON/YAML parser, so that no such file can cost more
memory than its kind's cap, hang the command, or end it with a traceback.

:func:`read_bytes` opens the file once (without blocking, so a FIFO cannot hang it), refuses anything but a
regular file, compares the size the file has *now* with the cap before reading a byte, and then reads at
most ``cap + 1`` bytes, so a file that grows between the check and the read is refused too. Measured on
``scales validate`` with a sparse file: 512 MiB cost 1.09 GB of memory before (the whole file read, then
decoded, then parsed) and 2 GiB cost 4.2 GB; with this reader both are refused in one line at the 40 MB a
bare command costs.

:func:`parse_json` and :func:`parse_yaml` turn every way a document can fail into one error line: a syntax
error (with its line and column), an integer longer than Python converts (``ValueError``, 4,300 digits), a
nesting deeper than the parser's recursion (``RecursionError``), and after parsing a document nested deeper
than :data:`MAX_NESTING` or expanding to more than :data:`MAX_VALUES` values (a "billion laughs" of YAML
aliases is 1 kB on disk and 10^9 values in memory).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .errors import DataError, LlmpsychError

#: Deepest nesting of lists and mappings a user's JSON or YAML document may have (a scale file is 4 deep, a
#: run config 5): deeper documents are refused before anything walks them recursively.
MAX_NESTING = 64

#: Largest data file read: official data in the data folder, a released log, save or run file handed to a
#: ``rescore`` command (the largest released file, a reliability save, is 3 MB).
MAX_DATA_FILE_BYTES = 64 * 2**20

#: Most values one document may expand to (YAML aliases share one node however often they are used).
MAX_VALUES = 100_000


def read_bytes(
    path: str | os.PathLike[str], what: str, limit: int, *, error: type[LlmpsychError] = DataError
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; anything else (missing, a folder,
    a pipe or device, larger than ``limit`` now or by the time it is read, unreadable) is one ``error``
    naming the file as ``what``. Never reads more than ``limit + 1`` bytes."""
    file = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file, flags)
    except FileNotFoundError:
        raise error(f"{file}: {what} not found") from None
    except IsADirectoryError:
        raise error(f"{file}: a folder, not a {what}") from None
    except OSError as exc:
        raise error(f"{file}: cannot read the {what}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"{file}: a folder, not a {what}")
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{file}: not a regular file (a pipe, socket or device); give the {what} as a file")
        if info.st_size > limit:
            raise error(too_large(file, info.st_size, what, limit))
        chunks: list[bytes] = []
        left = limit + 1  # one byte more than the cap: a file that grew since the check is seen
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise error(f"{file}: cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise error(
            f"{file}: grew while it was read: {too_large(file, len(data), what, limit)[len(str(file)) + 2 :]}"
        )
    return data


def too_large(file: str | os.PathLike[str], size: int, what: str, limit: int) -> str:
    """The one message for a file over its kind's cap."""
    article = "an" if what[:1].lower() in "aeiou" else "a"
    return f"{file}: {size:,} bytes, more than {article} {what} may hold ({limit:,})"


def read_text(
    path: str | os.PathLike[str],
    what: str,
    limit: int,
    *,
    error: type[LlmpsychError] = DataError,
    encoding: str = "utf-8",
) -> str:
    """:func:`read_bytes`, decoded (``utf-8``, or ``utf-8-sig`` to drop a byte-order mark); a file that is
    not such text is one ``error`` line."""
    data = read_bytes(path, what, limit, error=error)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start} cannot be decoded)") from None


def parse_json(
    text: str | bytes,
    origin: str,
    *,
    error: type[LlmpsychError] = DataError,
    **options: Any,
) -> Any:
    """``json.loads(text, **options)``, every failure one ``error`` line naming ``origin``; the result is
    within :data:`MAX_NESTING` (JSON has no aliases: its values are bounded by its bytes)."""
    try:
        data = json.loads(text, **options)
    except json.JSONDecodeError as exc:
        raise error(f"{origin}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise error(f"{origin}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits, a byte string that is not UTF-8
        raise error(f"{origin}: invalid JSON: {reason(exc)}") from None
    check_shape(data, origin, error=error, values=None)
    return data


def parse_yaml(
    text: str, origin: str, *, error: type[LlmpsychError] = DataError, values: int = MAX_VALUES
) -> Any:
    """``yaml.safe_load(text)``, every failure one ``error`` line naming ``origin``; the result is within
    :data:`MAX_NESTING` and ``values`` values."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise error(f"{origin}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise error(f"{origin}: invalid YAML{at}: {problem}") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise error(f"{origin}: invalid YAML: {reason(exc)}") from None
    check_shape(data, origin, error=error, values=values)
    return data


def parse_toml(text: str, origin: str, *, error: type[LlmpsychError] = DataError) -> dict[str, Any]:
    """``tomllib.loads(text)``, every failure one ``error`` line naming ``origin`` (``config file X is not
    valid TOML: ...``); the result is within :data:`MAX_NESTING` and :data:`MAX_VALUES` values."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{origin} is not valid TOML: {exc}") from None
    except (RecursionError, ValueError) as exc:  # nested too deeply; an integer of 4,300+ digits
        raise error(f"{origin} is not valid TOML: {reason(exc)}") from None
    check_shape(data, origin, error=error)
    return data


def check_shape(
    data: object, origin: str, *, error: type[LlmpsychError] = DataError, values: int | None = MAX_VALUES
) -> None:
    """Refuse a parsed document nested deeper than :data:`MAX_NESTING` or holding more than ``values``
    values (None: no count), walking it without recursion (and at most ``values`` steps)."""
    budget = values if values is not None else float("inf")
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise error(f"{origin}: expands to more than {values:,} values (repeated YAML aliases?)")
        if depth > MAX_NESTING:
            raise error(f"{origin}: nested more than {MAX_NESTING} levels deep")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def reason(exc: Exception) -> str:
    """Why a parser failed, in a few words: "nested too deeply" for a ``RecursionError``, else the first
    clause of the message (Python's int-str limit adds advice on interpreter settings)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    text = str(exc).split(";")[0].strip()
    return text[:200] or type(exc).__name__

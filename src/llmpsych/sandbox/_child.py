"""Inside the sandbox: run one program, then answer calls of its entry point (standard library only).

This runs in the untrusted process itself, so nothing here is trusted: it is the program's side of the
protocol, and a program may replace any of it. The verdict never depends on it being honest (see
``_pool``): it only ever reports values, and the trusted side checks them.

Frames on the channel (fd 3) are a 4-byte big-endian length and JSON. The trusted side sends
``{"source", "filename", "name", "entry", "judge"}``; the child executes the source and answers
``{"loaded": true}`` (or ``{"error": ...}``), then, for each ``{"call": [args, kwargs]}`` (tagged values,
see ``_codec``), ``{"value": ...}``, ``{"raise": [exception type name, message]}``, or ``{"refused":
why}`` when the value is not a plain one.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the checker reads the package; inside the sandbox it is a top-level module
    from llmpsych.sandbox import _codec
else:
    import _codec

CHANNEL = 3
#: Largest frame the child accepts from the trusted side.
MAX_FRAME = 64 << 20


def _read_exact(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive(fd: int) -> dict[str, Any]:
    """One frame from the trusted side (EOFError when it closed the channel)."""
    size = int.from_bytes(_read_exact(fd, 4), "big")
    if size > MAX_FRAME:
        raise EOFError
    message: dict[str, Any] = json.loads(_read_exact(fd, size))
    return message


def send(fd: int, message: dict[str, Any]) -> None:
    """One frame to the trusted side."""
    data = _codec.dumps(message)
    while data:
        data = data[os.write(fd, data) :]


def _describe(exc: BaseException) -> list[str]:
    return [type(exc).__name__, str(exc)[:2000]]


def _judge(fd: int, namespace: dict[str, Any], entry: str | None) -> int:
    """A check from an unverified data folder, run here rather than in llmpsych's process: it gets a
    stand-in for the candidate whose calls go out on the channel (llmpsych answers them from the
    program's own sandbox) and its outcome is sent as ``{"verdict": ...}``."""

    def candidate(*args: Any, **kwargs: Any) -> Any:
        send(fd, {"request": [_codec.encode(list(args)), _codec.encode(kwargs)]})
        reply = receive(fd)
        if "value" in reply:
            return _codec.decode(reply["value"])
        name, message = reply["raise"]
        kind = getattr(builtins, name, None)
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            kind = RuntimeError
        raise kind(message)

    if entry:
        namespace[entry] = candidate
    send(fd, {"loaded": True})
    try:
        namespace["check"](candidate)
    except BaseException as exc:
        send(fd, {"verdict": False, "error": _describe(exc)})
        return 1
    send(fd, {"verdict": True})
    return 0


def serve(fd: int = CHANNEL) -> int:
    """Run the program sent on ``fd`` and answer its calls until the channel closes; the exit status."""
    request = receive(fd)
    namespace: dict[str, Any] = {"__builtins__": builtins}
    if request.get("name"):
        namespace["__name__"] = request["name"]
    try:
        # dont_inherit: this module's ``from __future__ import annotations`` must not reach the program
        # (its annotations would no longer be evaluated, and a missing ``List`` import would pass)
        code = compile(request["source"], request.get("filename", "<program>"), "exec", dont_inherit=True)
        exec(code, namespace)
    except BaseException as exc:
        traceback.print_exc()
        sys.stderr.flush()
        send(fd, {"error": _describe(exc)})
        return 1
    entry = request.get("entry")
    if request.get("judge"):
        return _judge(fd, namespace, entry)
    function = namespace.get(entry) if entry else None
    if entry and not callable(function):
        send(fd, {"error": ["NameError", f"{entry!r} is not defined"]})
        return 1
    sys.stdout.flush()
    send(fd, {"loaded": True})
    while True:
        try:
            message = receive(fd)
        except EOFError:
            return 0
        try:
            args, kwargs = _codec.decode(message["call"][0]), _codec.decode(message["call"][1])
            value = function(*args, **kwargs)  # type: ignore[misc]
        except BaseException as exc:
            send(fd, {"raise": _describe(exc)})
            continue
        try:
            reply: dict[str, Any] = {"value": _codec.encode(value)}
        except BaseException as exc:  # not a plain value: the trusted side refuses it
            reply = {"refused": str(exc)[:500]}
        sys.stdout.flush()
        send(fd, reply)

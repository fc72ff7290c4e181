"""The two public question sets of PsychoBench's validity check, read at run time in their own formats.

* **TruthfulQA** (Lin et al. 2022): the authors' ``TruthfulQA.csv`` (columns ``Question``, ``Best
  Answer``, ``Incorrect Answers``, ...; answers in a cell are separated by ``;``). A question becomes a
  multiple-choice item with the best answer and every incorrect answer as options, the thesis's "only
  one option being the best answer" (000:1397), the MC1 setting of TruthfulQA.
* **SafetyQA** (Yuan et al. 2024, CipherChat, the thesis's [250]): ``data_en_zh.dict``, a PyTorch-saved
  ``{language: {domain: [questions]}}``. It is a zip holding a pickle; the pickle is read by an unpickler
  that refuses every class and persistent id, so a hostile file can hold only dicts, lists and strings,
  and a member larger than :data:`MAX_MEMBER_BYTES` is refused before it is read.

Neither file is part of llmpsych: ``llmpsych data fetch SafetyQA`` and ``llmpsych data fetch TruthfulQA``
put them, at their pinned commits, into the data directory. A run reads only the pinned files
(:func:`question_file`): TruthfulQA's current head is a revised 790-question file, not the 817 questions
the thesis asked, and another file is refused unless the user passes ``--trust-unpinned``.
"""

from __future__ import annotations

import csv
import io
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.sources import is_pinned_copy, pinned_data_file
from ..errors import DataError
from ..userfiles import MAX_DATA_FILE_BYTES, read_text

TRUTHFULQA_FILE = "TruthfulQA.csv"
SAFETYQA_FILE = "data_en_zh.dict"
#: Largest pickle member of the SafetyQA file read (the published one is 0.7 MB).
MAX_MEMBER_BYTES = 64 << 20
#: Most options a multiple-choice item may have (one letter each).
MAX_OPTIONS = 26


@dataclass(frozen=True)
class MultipleChoice:
    """A TruthfulQA question: its options (the best answer first) and its category."""

    index: int
    question: str
    options: tuple[str, ...]
    category: str = ""


@dataclass(frozen=True)
class OpenQuestion:
    """A SafetyQA question and its domain."""

    index: int
    question: str
    category: str


def _answers(cell: str) -> list[str]:
    return [part.strip() for part in cell.split(";") if part.strip()]


def read_truthfulqa(path: Path) -> list[MultipleChoice]:
    """Every question of a TruthfulQA CSV; DataError naming the file and row for a malformed one."""
    try:
        text = read_text(path, "TruthfulQA file", MAX_DATA_FILE_BYTES, encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read TruthfulQA file {path}: {exc}") from None
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as exc:
        raise DataError(f"{path}: not a readable CSV ({exc})") from None
    needed = ("Question", "Best Answer", "Incorrect Answers")
    header = set(rows[0]) if rows else set()
    if not rows or not all(name in header for name in needed):
        raise DataError(
            f"{path}: not a TruthfulQA CSV (needs the columns {', '.join(needed)})",
            "use the authors' TruthfulQA.csv (`llmpsych data fetch TruthfulQA`)",
        )
    questions: list[MultipleChoice] = []
    for number, row in enumerate(rows, start=2):  # line 1 is the header
        question = (row.get("Question") or "").strip()
        best = (row.get("Best Answer") or "").strip()
        wrong = [a for a in _answers(row.get("Incorrect Answers") or "") if a != best]
        if not question or not best or not wrong:
            raise DataError(f"{path}, line {number}: a question needs a best answer and an incorrect answer")
        options = tuple(dict.fromkeys([best, *wrong]))
        if len(options) > MAX_OPTIONS:
            raise DataError(f"{path}, line {number}: {len(options)} options (at most {MAX_OPTIONS})")
        category = (row.get("Category") or "").strip()
        questions.append(MultipleChoice(len(questions), question, options, category))
    return questions


class _DataOnly(pickle.Unpickler):
    """Builds only the pickle's plain values (dict, list, str, numbers); any class or persistent id is
    refused, so loading cannot run code."""

    def find_class(self, module: str, name: str) -> Any:  # noqa: ANN401 - pickle's signature
        raise pickle.UnpicklingError(f"the file asks for {module}.{name}; only plain data is read")

    def persistent_load(self, pid: Any) -> Any:  # noqa: ANN401 - pickle's signature
        raise pickle.UnpicklingError(
            "the file holds tensors or other stored objects; only plain data is read"
        )


def read_safetyqa(path: Path, language: str = "en") -> list[OpenQuestion]:
    """Every question of one language of a SafetyQA file, domain by domain in the file's order."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = [i for i in archive.infolist() if i.filename.endswith("data.pkl")]
            if len(members) != 1:
                raise DataError(f"{path}: expected one data.pkl in the archive, found {len(members)}")
            if members[0].file_size > MAX_MEMBER_BYTES:
                raise DataError(
                    f"{path}: data.pkl is {members[0].file_size} bytes (at most {MAX_MEMBER_BYTES})"
                )
            raw = archive.read(members[0])
        data = _DataOnly(io.BytesIO(raw)).load()
    except DataError:
        raise
    except (OSError, zipfile.BadZipFile, pickle.UnpicklingError, EOFError, ValueError, RuntimeError) as exc:
        raise DataError(
            f"{path}: not a SafetyQA file ({type(exc).__name__}: {str(exc)[:120]})",
            "use CipherChat's data/data_en_zh.dict (`llmpsych data fetch SafetyQA`)",
        ) from None
    except Exception as exc:  # noqa: BLE001 - a hostile pickle can raise anything while it is built
        raise DataError(f"{path}: not a SafetyQA file ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise DataError(f"{path}: expected a mapping of languages to domains")
    domains = data.get(language)
    if not isinstance(domains, dict) or not domains:
        found = ", ".join(sorted(k for k in data if isinstance(k, str))) or "none"
        raise DataError(f"{path}: no questions in language {language!r}", f"languages in the file: {found}")
    questions: list[OpenQuestion] = []
    for domain, items in domains.items():
        if not isinstance(domain, str) or not isinstance(items, list):
            raise DataError(f"{path}: domain {str(domain)[:40]!r} is not a list of questions")
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise DataError(f"{path}: domain {domain!r} holds a question that is not text")
            questions.append(OpenQuestion(len(questions), item.strip(), domain))
    return questions


#: benchmark -> (dataset, file name in its folder)
QUESTION_FILES: dict[str, tuple[str, str]] = {
    "truthfulqa": ("TruthfulQA", TRUTHFULQA_FILE),
    "safetyqa": ("SafetyQA", SAFETYQA_FILE),
}


def question_file(benchmark: str, data_dir: Path | None, *, trust_unpinned: bool = False) -> Path:
    """The file of a benchmark in the data directory (``TruthfulQA/TruthfulQA.csv``, ...), refused with one
    line unless it is the pinned file (``trust_unpinned``: any file of that name)."""
    dataset, name = QUESTION_FILES[benchmark]
    return pinned_data_file(dataset, name, data_dir, trust_unpinned=trust_unpinned)


def pinned_question_file(benchmark: str, path: str, sha256: str) -> bool | None:
    """Whether a file a run read (path and sha256, from its manifest) is the benchmark's pinned file; None
    if the path is not that benchmark's file."""
    dataset, name = QUESTION_FILES[benchmark]
    where = Path(path)
    if where.name != name or where.parent.name != dataset:
        return None
    return is_pinned_copy(dataset, name, sha256)

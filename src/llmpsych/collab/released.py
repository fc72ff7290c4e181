"""The released MAS-Resilience runs: HumanEval verdicts of OpenAI's harness, read at run time.

CUHK-ARISE/MAS-Resilience@d88dbdc releases, in ``Experiments/<System>/``, each code-generation run of a
system as ``<run>.jsonl`` (``{task_id, completion}``) and its verdicts as ``<run>.jsonl_results.jsonl``
(``{task_id, completion, result, passed}``, judged by OpenAI's human-eval harness). The data directory
holds that folder as ``MAS-Resilience-Experiments/`` (kept apart from ``MAS-Resilience/``, whose files
match the data manifest). Nothing of it is copied into the repository.

Reading is bounded and strict: a file larger than :data:`MAX_BYTES`, with more than :data:`MAX_ROWS`
rows, a line that is not a JSON object, a ``task_id`` that is not ``HumanEval/<0-163>``, a ``passed``
that is not true or false, a completion that is not text, or (for :func:`read_verdicts`) a run that is not one
verdict per task of HumanEval is one
:class:`~llmpsych.errors.DataError` naming the file (and the line). Reading the 40 files that the thesis
tables use takes about 0.1 s."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError
from ..userfiles import read_text, reason

FOLDER = "MAS-Resilience-Experiments"
#: HumanEval's size: pass@1 of a run is its passed tasks over these.
HUMANEVAL_TASKS = 164
#: The largest released verdict file is 0.1 MB; a file of more than this is not one.
MAX_BYTES = 16 * 2**20
MAX_ROWS = 10_000
_TASK_ID = re.compile(r"HumanEval/(\d{1,3})")


@dataclass(frozen=True)
class Verdicts:
    """One released run's verdicts: task id -> passed, in file order."""

    path: Path
    passed: dict[str, bool]

    @property
    def n_passed(self) -> int:
        return sum(self.passed.values())

    @property
    def pass_at_1(self) -> float:
        """Percentage of HumanEval's 164 tasks the run passed (one sample per task)."""
        return 100.0 * self.n_passed / HUMANEVAL_TASKS


def experiments_dir(data_dir: Path | None = None) -> Path:
    """``<data dir>/MAS-Resilience-Experiments``; DataError when it is absent."""
    from ..data.sources import resolve_data_dir

    root = resolve_data_dir(data_dir)
    folder = root / FOLDER
    if not folder.is_dir():
        raise DataError(
            f"{FOLDER} not found in {root}",
            f"put the Experiments folder of CUHK-ARISE/MAS-Resilience@d88dbdc there, named {FOLDER}/",
        )
    return folder


@dataclass(frozen=True)
class Verdict:
    """One released row: the task, the completion as released (None when it is null) and the verdict."""

    task_id: str
    completion: str | None
    passed: bool


def read_rows(path: Path) -> list[Verdict]:
    """Every row of one ``*_results.jsonl`` file, in file order; DataError (one line naming the file and
    the line) when it is unreadable or a row is malformed. Rows of one task may repeat (some released
    files hold two runs)."""
    what = "MAS-Resilience verdicts"
    text = read_text(path, what, MAX_BYTES)  # DataError naming the file: missing, too large, not UTF-8
    rows: list[Verdict] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(rows) >= MAX_ROWS:
            raise DataError(f"{what} {path} has more than {MAX_ROWS:,} rows: not HumanEval runs")
        try:
            row = json.loads(line)
        except RecursionError:
            raise DataError(f"{what} {path} line {number} is nested too deeply") from None
        except ValueError as exc:
            raise DataError(f"{what} {path} line {number} is not valid JSON: {reason(exc)}") from None
        if not isinstance(row, dict):
            raise DataError(f"{what} {path} line {number} is not a JSON object")
        task = row.get("task_id")
        match = _TASK_ID.fullmatch(task) if isinstance(task, str) else None
        if not isinstance(task, str) or match is None or int(match.group(1)) >= HUMANEVAL_TASKS:
            raise DataError(
                f"{what} {path} line {number}: task_id {str(task)[:60]!r} is not a HumanEval task"
            )
        verdict = row.get("passed")
        if not isinstance(verdict, bool):
            raise DataError(
                f"{what} {path} line {number}: passed is {str(verdict)[:60]!r}, not true or false"
            )
        completion = row.get("completion")
        if completion is not None and not isinstance(completion, str):
            raise DataError(f"{what} {path} line {number}: completion is not text")
        rows.append(Verdict(task, completion, verdict))
    return rows


def read_verdicts(path: Path) -> Verdicts:
    """One ``*_results.jsonl`` file as one whole run: one verdict per HumanEval task; DataError (one line
    naming the file) when it is unreadable, malformed (:func:`read_rows`) or not one whole run."""
    passed: dict[str, bool] = {}
    for row in read_rows(path):
        if row.task_id in passed:
            raise DataError(
                f"MAS-Resilience verdicts {path}: a second verdict for {row.task_id}: not one run"
            )
        passed[row.task_id] = row.passed
    if len(passed) != HUMANEVAL_TASKS:
        raise DataError(
            f"MAS-Resilience verdicts {path} has verdicts for {len(passed)} of HumanEval's {HUMANEVAL_TASKS} "
            "tasks: not one whole run"
        )
    return Verdicts(path, passed)

"""The ground truth of a fault endpoint's runs, and the score of an attribution method against it.

**Ground-truth table** (:func:`truth_frame`, written as ``ground_truth.csv`` in each run folder): one row
per message the endpoint changed, in the order the requests arrived:

``run`` (the run folder's name), ``call`` (the request's number at the endpoint), ``agent``, ``turn`` (the
agent's request number, 1-based), ``attempt``, ``source`` (``fault`` or ``defence``), ``kind``
(autoinject, autotransform, timeout, malformed, refusal; inspector, challenger), ``target`` (reply, system
prompt, last message), ``error_type`` (semantic / syntactic for AutoInject, else the kind), ``category``
(the taxonomy category of each edited code line, :mod:`llmpsych.collab.taxonomy`, ``;``-separated),
``lines`` (changed lines of the delivered text, ``;``-separated, 1-based), ``original``, ``injected``.

**Predictions** (the file an attribution method writes; CSV or JSON lines): one row per run it judged,
with ``run``, ``agent`` (the agent it blames; ``none`` for "no fault") and optionally ``turn``.

**Score** (:func:`attribution_score`): a run's true fault is its first fault row (lowest call); the agent
is right when it names that agent, the step when it also names that turn. Runs the truth holds that the
predictions miss, runs with no fault, and predictions for unknown runs are counted apart, never guessed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError, DataError
from ..runs.record import RunRecord, read_run
from ..userfiles import read_text
from .session import UnitResult

TRUTH_FILE = "ground_truth.csv"
COLUMNS = (
    "run",
    "call",
    "agent",
    "turn",
    "attempt",
    "source",
    "kind",
    "target",
    "error_type",
    "category",
    "lines",
    "original",
    "injected",
)
#: The largest predictions or truth file read.
MAX_FILE_BYTES = 256 * 2**20
NO_FAULT = "none"


def requests_of(record: RunRecord) -> list[UnitResult]:
    """Each answered request of an endpoint run, in the order the endpoint received them."""
    return sorted((r for _, r in record.results(UnitResult)), key=lambda r: r.call)


def truth_frame(record: RunRecord) -> pd.DataFrame:
    """The ground-truth table of one run (see the module docstring)."""
    rows: list[dict[str, Any]] = []
    for request in requests_of(record):
        for change in request.changes:
            rows.append(
                {
                    "run": record.run_dir.name,
                    "call": request.call,
                    "agent": request.agent,
                    "turn": request.turn,
                    "attempt": request.attempt,
                    "source": change.source,
                    "kind": change.kind,
                    "target": change.target,
                    "error_type": change.error_type,
                    "category": ";".join(change.categories),
                    "lines": ";".join(str(n) for n in change.lines),
                    "original": change.original,
                    "injected": change.injected,
                }
            )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def read_table(path: Path, what: str) -> pd.DataFrame:
    """A CSV, Parquet or JSON-lines table a user gives (bounded; one error line if unreadable)."""
    if path.is_dir():
        return truth_frame(read_run(path))
    if path.suffix.lower() == ".parquet":
        if path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
            raise ConfigError(f"{path}: larger than a {what} may be ({MAX_FILE_BYTES:,} bytes)")
        try:
            return pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many kinds
            raise ConfigError(f"{path}: not a readable Parquet {what}: {type(exc).__name__}") from None
    text = read_text(path, what, MAX_FILE_BYTES, error=ConfigError)
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                raise ConfigError(f"{path}: line {number} is not JSON") from None
            if not isinstance(row, dict):
                raise ConfigError(f"{path}: line {number} is not a JSON object")
            rows.append(row)
        return pd.DataFrame(rows)
    from io import StringIO

    try:
        return pd.read_csv(StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ConfigError(f"{path}: not a readable CSV {what}: {' '.join(str(exc).split())[:200]}") from None


@dataclass(frozen=True)
class AttributionScore:
    """Accuracy of an attribution method at agent and step level, with every n."""

    n_runs: int  # runs in the truth with at least one fault
    n_predicted: int  # of those, runs the predictions judge
    agent_correct: int
    step_correct: int
    step_n: int  # predictions that name a turn (the step level is scored on these)
    missing: list[str]  # faulty runs without a prediction
    clean_runs: int  # runs in the truth without any fault
    clean_said_none: int  # of those judged, predictions of "none"
    clean_judged: int
    unknown: list[str]  # predicted runs the truth does not hold

    @property
    def agent_accuracy(self) -> float:
        return self.agent_correct / self.n_predicted if self.n_predicted else math.nan

    @property
    def step_accuracy(self) -> float:
        return self.step_correct / self.step_n if self.step_n else math.nan

    def lines(self) -> list[str]:
        """The score as the command prints it."""

        def share(k: int, n: int) -> str:
            return f"{k}/{n} = {k / n:.3f}" if n else "no runs to score (n = 0)"

        out = [
            f"agent level: {share(self.agent_correct, self.n_predicted)} (faulty runs judged)",
            f"step level:  {share(self.step_correct, self.step_n)} "
            "(judged runs whose prediction names a turn)",
        ]
        if self.missing:
            out.append(
                f"{len(self.missing)} faulty run(s) have no prediction, not scored: "
                + ", ".join(self.missing[:5])
            )
        if self.clean_runs:
            out.append(
                f"{self.clean_runs} run(s) without a fault; {self.clean_said_none} of the "
                f"{self.clean_judged} "
                f"judged were predicted '{NO_FAULT}'"
            )
        if self.unknown:
            out.append(
                f"{len(self.unknown)} predicted run(s) are not in the truth, ignored: "
                + ", ".join(self.unknown[:5])
            )
        return out


def _turn(value: Any, where: str) -> int | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == "":
        return None
    text = str(value).strip()
    if not text.lstrip("-").isdigit() or int(text) < 1:
        raise ConfigError(f"{where}: turn must be a whole number from 1, not {text[:40]!r}")
    return int(text)


def attribution_score(
    truth: pd.DataFrame, predictions: pd.DataFrame, runs: list[str] | None = None
) -> AttributionScore:
    """Score ``predictions`` against ``truth`` (see the module docstring). ``runs``: every run the truth
    covers, faulty or not (default: the runs in ``truth``)."""
    for name, frame, needed in (
        ("truth", truth, ("run", "call", "agent", "turn", "source")),
        ("predictions", predictions, ("run", "agent")),
    ):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise ConfigError(f"the {name} table lacks the column(s) {', '.join(missing)}")
    faults = truth[truth["source"].astype(str) == "fault"].copy()
    faults["call"] = pd.to_numeric(faults["call"], errors="coerce")
    if faults["call"].isna().any():
        raise DataError("the truth table has a call that is not a number")
    first: dict[str, tuple[str, int]] = {}
    for run, group in faults.groupby(faults["run"].astype(str)):
        row = group.sort_values("call").iloc[0]
        first[str(run)] = (str(row["agent"]), int(row["turn"]))
    every = set(runs or []) | set(truth["run"].astype(str)) | set(first)
    predicted: dict[str, tuple[str, int | None]] = {}
    for index, row in predictions.iterrows():
        run = str(row["run"])
        where = f"predictions row {int(str(index)) + 1} (run {run})"
        if run in predicted:
            raise ConfigError(f"{where}: a second prediction for the same run")
        predicted[run] = (str(row["agent"]).strip(), _turn(row.get("turn"), where))
    agent_ok = step_ok = step_n = judged = 0
    for run, (agent, turn) in first.items():
        if run not in predicted:
            continue
        judged += 1
        blamed, blamed_turn = predicted[run]
        agent_ok += blamed == agent
        if blamed_turn is not None:
            step_n += 1
            step_ok += blamed == agent and blamed_turn == turn
    clean = sorted(every - set(first))
    clean_judged = [r for r in clean if r in predicted]
    return AttributionScore(
        n_runs=len(first),
        n_predicted=judged,
        agent_correct=agent_ok,
        step_correct=step_ok,
        step_n=step_n,
        missing=sorted(set(first) - set(predicted)),
        clean_runs=len(clean),
        clean_said_none=sum(predicted[r][0].lower() == NO_FAULT for r in clean_judged),
        clean_judged=len(clean_judged),
        unknown=sorted(set(predicted) - every),
    )

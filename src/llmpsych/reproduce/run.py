"""Run the reproducers of some systems on a data folder and write the report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError
from .cells import Outcome
from .compare import Summary, compare, summarize
from .harness import COMMAND as HARNESS_COMMAND
from .harness import HarnessResult
from .mas import SYSTEM as MAS_SYSTEM
from .registry import NEEDS_MODELS, NOT_YET_COVERED, REPRODUCERS, SYSTEMS, Reproducer, Uncovered


@dataclass
class TableResult:
    reproducer: Reproducer
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: str | None = None  # why the table was not recomputed (its dataset is absent)
    seconds: float = 0.0

    @property
    def summary(self) -> Summary:
        return summarize(self.outcomes, f"{self.reproducer.system} {self.reproducer.table}")


@dataclass
class Reproduction:
    tables: list[TableResult]
    systems: tuple[str, ...]
    harness: HarnessResult | None = None  # the released HumanEval verdicts judged again (--harness)

    @property
    def outcomes(self) -> list[Outcome]:
        return [o for t in self.tables for o in t.outcomes]

    @property
    def total(self) -> Summary:
        return summarize(self.outcomes, "total")

    @property
    def unexplained(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "unexplained"]

    @property
    def harness_line(self) -> str | None:
        """The harness comparison's line, or, when it was not asked for, how to ask (None: not chosen)."""
        if self.harness is not None:
            return self.harness.line()
        if MAS_SYSTEM in self.systems:
            return (
                "skipped unless asked: MAS-Resilience HumanEval verdicts (every released completion run "
                f"again in the sandbox, a minute or two): `{HARNESS_COMMAND}`"
            )
        return None

    @property
    def needs_models(self) -> list[Uncovered]:
        return list(NEEDS_MODELS)

    @property
    def not_covered(self) -> list[Uncovered]:
        return list(NOT_YET_COVERED)


def _present(dataset: str, data_dir: Path | None) -> bool:
    """Whether the data folder has the dataset's folder (registered or not, e.g. the MAS-Resilience
    Experiments folder): a reproducer failing on a folder that is there is a malformed file, never a skip."""
    from ..data.sources import resolve_data_dir

    try:
        return (resolve_data_dir(data_dir) / dataset).is_dir()
    except DataError:
        return False


def reproduce(
    systems: Sequence[str] = (), data_dir: Path | None = None, *, harness: bool = False
) -> Reproduction:
    """Recompute every covered table of ``systems`` (all when empty). A table whose dataset is not in
    the data folder is skipped, saying so; DataError when none could be recomputed, or when a dataset
    that is there cannot be read (a malformed file is named, never skipped). With ``harness`` (and
    MAS-Resilience chosen), every released HumanEval verdict is judged again in the sandbox."""
    chosen = tuple(systems) or SYSTEMS
    results = []
    for reproducer in REPRODUCERS:
        if reproducer.system not in chosen:
            continue
        start = time.perf_counter()
        result = TableResult(reproducer)
        try:
            result.outcomes = compare(reproducer.run(data_dir))
        except DataError as exc:
            if _present(reproducer.dataset, data_dir):
                raise  # the data is there but unreadable or malformed: said, never skipped
            result.skipped = str(exc)
        result.seconds = time.perf_counter() - start
        results.append(result)
    if results and all(r.skipped for r in results):
        raise DataError(
            f"no published table could be recomputed: {results[0].skipped}",
            "pass --data-dir with the authors' released data (`llmpsych data fetch <dataset>`)",
        )
    checked = None
    if harness and MAS_SYSTEM in chosen:
        from .harness import harness_verdicts

        checked = harness_verdicts(data_dir)
    return Reproduction(results, chosen, checked)

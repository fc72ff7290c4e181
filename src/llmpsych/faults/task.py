"""The run kind of a fault endpoint (task ``faults``): its requests arrive from outside, one unit each.

The endpoint (:mod:`.endpoint`) writes the run store as requests come; this class is what the rest of
llmpsych sees of such a run: ``llmpsych analyze`` / ``load_runs`` / the web pages read it as any run, and
its analysis writes the ground-truth table and a short report. Its units cannot be expanded from the
config (they are the requests a framework sent), so ``llmpsych run --resume`` refuses it in one line and
names ``llmpsych faults serve --resume``, which continues it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..errors import ConfigError
from ..models.chat_context import ChatContext
from ..report.files import atomic_write_text, write_csv, write_parquet
from ..runs.record import RunRecord
from ..runs.task import Task, WorkUnit
from .plan import FaultPlan
from .session import UnitResult
from .truth import TRUTH_FILE, requests_of, truth_frame


class FaultsOptions(BaseModel):
    """The endpoint's plan, as it served it."""

    model_config = ConfigDict(extra="forbid")

    plan: FaultPlan = FaultPlan()


class FaultsTask(Task[FaultsOptions]):
    """A fault endpoint's run."""

    name = "faults"
    Options = FaultsOptions
    Result = UnitResult
    score_tables = ()  # its table is the ground truth (ground_truth.csv), not scores

    def units(self) -> list[WorkUnit]:
        raise ConfigError(
            "a fault endpoint's run holds the requests a framework sent; it is continued by serving it again",
            "llmpsych faults serve --resume RUN_DIR",
        )

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> UnitResult:
        raise ConfigError("a fault endpoint's units are answered by the endpoint")

    def analyze(self, record: RunRecord) -> list[Path]:
        requests = requests_of(record)
        truth = truth_frame(record)
        table = write_csv(truth, record.run_dir / TRUTH_FILE)
        parquet = write_parquet(truth, (record.run_dir / TRUTH_FILE).with_suffix(".parquet"))
        per_agent = Counter(r.agent for r in requests)
        changed = Counter((str(a), str(k)) for a, k in zip(truth["agent"], truth["kind"], strict=True))
        failed = len(record.failed())
        lines = [
            f"# Fault endpoint run {record.run_dir.name}",
            "",
            f"{len(requests)} requests answered ({failed} failed upstream); "
            f"{len(truth)} messages changed ({int((truth['source'] == 'fault').sum())} by faults, "
            f"{int((truth['source'] == 'defence').sum())} by defences); every change is a row of "
            f"{TRUTH_FILE}.",
            "",
            "| agent | requests | changes |",
            "|---|---:|---|",
        ]
        for agent, n in sorted(per_agent.items()):
            kinds = ", ".join(f"{k} {c}" for (a, k), c in sorted(changed.items()) if a == agent) or "none"
            lines.append(f"| {agent} | {n} | {kinds} |")
        report = atomic_write_text(record.run_dir / "report.md", "\n".join(lines) + "\n")
        return [table, parquet, report]

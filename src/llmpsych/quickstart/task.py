"""The quickstart task: administer the demonstration scale several times and report the scores."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from ..instruments.administration import AdministrationResult, administer
from ..models.types import GenerationParams
from ..report.markdown import bar_chart, table, write_report
from ..runs.store import RunStore
from ..runs.task import Task, WorkUnit
from .demo_scale import REASK, demo_scale


class QuickstartOptions(BaseModel):
    """How many independent administrations (each with its own item order)."""

    model_config = ConfigDict(extra="forbid")

    runs: int = Field(default=5, ge=1, le=100)
    max_reasks: int = Field(default=2, ge=0, le=5)
    max_tokens: int = Field(default=96, ge=16)


class QuickstartTask(Task):
    """Administration, parsing, scoring and a report on a built-in demonstration scale."""

    name = "quickstart"
    Options = QuickstartOptions

    def units(self) -> list[WorkUnit]:
        return [WorkUnit(f"run-{r:03d}", {"run": r}) for r in range(1, self.options.runs + 1)]

    async def run_unit(self, unit: WorkUnit, ctx: Any) -> Any:
        scale = demo_scale()
        order = list(scale.item_indices)
        ctx.rng("item-order").shuffle(order)
        params = GenerationParams(
            **{**self.config.params.model_dump(), "max_tokens": self.options.max_tokens}
        )
        result = await administer(
            scale,
            ctx,
            order=order,
            params=params,
            reask_template=REASK,
            max_reasks=self.options.max_reasks,
            sample=unit.payload["run"],
        )
        return {"order": order, **result.to_json()}

    def analyze(self, run_dir: Path) -> list[Path]:
        scale = demo_scale()
        store = RunStore.in_dir(run_dir)
        try:
            units = store.units()
            calls = list(store.calls())
            manifest = store.get_meta("manifest") or {}
        finally:
            store.close()
        answer_rows, score_rows = [], []
        for unit in units:
            if unit.status != "done":
                continue
            result = AdministrationResult.from_json(unit.result)
            for index in scale.item_indices:
                answer_rows.append({"run": unit.unit_id, "item": index, "answer": result.answers.get(index)})
            scores = scale.score(result.answers)
            score_rows.append(
                {
                    "run": unit.unit_id,
                    **scores,
                    "valid_rate": result.valid_rate(scale),
                    "asks": result.asks,
                    "refused": result.refused,
                }
            )
        answers = pd.DataFrame(answer_rows)
        scores = pd.DataFrame(score_rows)
        outputs = [run_dir / "answers.csv", run_dir / "scores.csv"]
        answers.to_csv(outputs[0], index=False)
        scores.to_csv(outputs[1], index=False)
        summary = _summary(scores, scale.subscale_names) if not scores.empty else pd.DataFrame()
        chart = (
            bar_chart(
                {
                    row["subscale"]: (row["mean"], 0.0 if math.isnan(row["sd"]) else row["sd"])
                    for _, row in summary.iterrows()
                    if not math.isnan(row["mean"])
                },
                run_dir / "scores.png",
                "llmpsych demo scale: mean ± sd over runs",
                (1, 5),
            )
            if not summary.empty
            else None
        )
        n_done = len(score_rows)
        latency = sum(c["latency_s"] or 0 for c in calls) / max(1, len(calls))
        model = manifest.get("config", {}).get("model", "?")
        n_valid = int(answers["answer"].notna().sum()) if not answers.empty else 0
        measured = (
            f"Model `{model}` answered the llmpsych demonstration scale ({scale.n_items} statements, 1-5, "
            "two subscales of four items, items 3 and 6 reverse-keyed) "
            f"{n_done} times, each time with its own item order (seed {manifest.get('seed', 0)}). "
            "The scale is written for llmpsych, is not validated and has no human norms: it demonstrates "
            "the pipeline, not a finding. n = number of administrations."
        )
        valid = (
            f"{n_valid} of {scale.n_items * n_done} items answered in range after re-asking; "
            f"{len(calls)} model calls, mean latency {latency:.2f} s."
        )
        sections = [
            ("What was measured", measured),
            ("Scores (mean ± sd over runs, ddof = 1)", table(summary)),
            ("Valid answers", valid),
            ("Per run", table(scores)),
            (
                "Files",
                "answers.csv (one row per run and item), scores.csv (one row per run), "
                "run.sqlite (every request and answer); `llmpsych export` writes the transcripts.",
            ),
        ]
        if chart:
            sections.insert(2, ("Chart", f"![scores]({chart.name})"))
            outputs.append(chart)
        outputs.append(write_report(run_dir / "report.md", "llmpsych quickstart report", sections))
        (run_dir / "summary.json").write_text(json.dumps(summary.to_dict(orient="records"), indent=1))
        outputs.append(run_dir / "summary.json")
        return outputs


def _summary(scores: pd.DataFrame, subscales: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    for name in subscales:
        column = scores[name].dropna()
        rows.append(
            {
                "subscale": name,
                "n": len(column),
                "mean": column.mean() if len(column) else math.nan,
                "sd": column.std(ddof=1) if len(column) > 1 else math.nan,
            }
        )
    return pd.DataFrame(rows)

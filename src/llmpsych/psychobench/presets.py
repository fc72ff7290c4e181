"""The thesis's PsychoBench sensitivity experiments as presets (``llmpsych psychobench preset NAME``).

A preset expands into ordinary ``psychobench`` run configs, one run directory per model and setting
(``<out>/<model>/<setting>``), run one after the other through the one sweep runner
(:mod:`llmpsych.runs.sweep`): the same command with the same ``--out`` resumes unfinished runs without
re-sending answered requests, and a folder holding a different run is refused before anything is sent.
Then it writes the comparison of all its runs (``comparison.md``/``.html``/``.csv``, bold highest and
underlined lowest) and ``summary.md`` with the thesis's published values beside it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError, LlmpsychError
from ..report.html import write_html
from ..report.markdown import table, write_report
from ..runs import presets as shared
from ..runs.config import DEFAULT_MODEL
from ..runs.presets import PresetRun, Variant
from ..runs.store import STORE_FILE
from .variants import TEMPLATES

BFI = ("Openness", "Conscientiousness", "Extraversion", "Agreeableness", "Neuroticism")


@dataclass(frozen=True)
class Published:
    """A table the thesis prints for the experiment (GPT-3.5-Turbo unless a column says otherwise)."""

    caption: str
    columns: tuple[str, ...]
    rows: dict[str, tuple[tuple[float, float], ...]]


@dataclass(frozen=True)
class Preset:
    """A thesis experiment: its settings and the values it printed."""

    name: str
    title: str
    paper: str
    variants: Callable[[], list[Variant]]
    published: Published


def _rows(*values: tuple[float, ...]) -> dict[str, tuple[tuple[float, float], ...]]:
    """BFI rows from ``(m1, sd1, m2, sd2, ...)`` tuples, in :data:`BFI` order."""
    return {
        name: tuple((row[i], row[i + 1]) for i in range(0, len(row), 2))
        for name, row in zip(BFI, values, strict=True)
    }


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "templates",
            "Prompt templates v1-v5 and v1 + chain-of-thought, on the BFI",
            "thesis Section 4.3.3, Tables 4.9-4.10; v2-v5 need the LLMPersonality data folder",
            lambda: (
                [Variant(t, {"template": t}) for t in TEMPLATES]
                + [Variant("v1+CoT", {"template": "v1", "cot": True})]
            ),
            Published(  # thesis 000:1357-1362
                "Table 4.10, gpt-3.5-turbo",
                ("V1 (Ours)", "V2", "V3", "V4", "V5", "V1 (Ours) + CoT"),
                _rows(
                    (4.15, 0.32, 3.85, 0.23, 4.34, 0.26, 4.15, 0.22, 4.10, 0.32, 4.62, 0.21),
                    (4.28, 0.33, 3.89, 0.12, 4.11, 0.23, 4.21, 0.20, 4.19, 0.27, 4.29, 0.26),
                    (3.66, 0.20, 3.44, 0.14, 3.86, 0.19, 3.50, 0.20, 3.66, 0.19, 3.89, 0.43),
                    (4.37, 0.18, 4.10, 0.20, 4.24, 0.10, 4.22, 0.17, 4.21, 0.15, 4.41, 0.26),
                    (2.29, 0.38, 2.19, 0.11, 2.04, 0.26, 2.21, 0.18, 2.24, 0.16, 2.26, 0.48),
                ),
            ),
        ),
        Preset(
            "assistant",
            "With and without the helpful-assistant role in the system prompt, on the BFI",
            "thesis Section 4.3.3, Table 4.11",
            lambda: [
                Variant("assistant", {"system_prompt": "assistant"}),
                Variant("no-assistant", {"system_prompt": "no-assistant"}),
            ],
            Published(  # thesis 000:1374-1379
                "Table 4.11, gpt-3.5-turbo",
                ("w/ Helpful Assistant", "w/o Helpful Assistant"),
                _rows(
                    (4.15, 0.32, 4.16, 0.28),
                    (4.28, 0.33, 4.06, 0.27),
                    (3.66, 0.20, 3.60, 0.22),
                    (4.37, 0.18, 4.17, 0.18),
                    (2.29, 0.38, 2.21, 0.19),
                ),
            ),
        ),
        Preset(
            "temperatures",
            "Temperatures 0, 0.01 and 0.8, on the BFI",
            "thesis Section 4.3.3, Table 4.12",
            lambda: [Variant(f"temperature={t:g}", params={"temperature": t}) for t in (0.0, 0.01, 0.8)],
            Published(  # thesis 000:1385-1391
                "Table 4.12",
                (
                    "LLaMA-2-7B T=0.01",
                    "LLaMA-2-13B T=0.01",
                    "gpt-3.5-turbo T=0",
                    "gpt-3.5-turbo T=0.01",
                    "gpt-3.5-turbo T=0.8",
                ),
                _rows(
                    (4.24, 0.27, 4.13, 0.45, 4.15, 0.32, 4.17, 0.31, 4.23, 0.26),
                    (3.89, 0.28, 4.41, 0.35, 4.28, 0.33, 4.24, 0.28, 4.14, 0.18),
                    (3.62, 0.20, 3.94, 0.38, 3.66, 0.20, 3.79, 0.24, 3.69, 0.17),
                    (3.83, 0.37, 4.74, 0.27, 4.37, 0.18, 4.21, 0.13, 4.21, 0.21),
                    (2.70, 0.42, 1.95, 0.50, 2.29, 0.38, 2.25, 0.23, 2.09, 0.20),
                ),
            ),
        ),
    )
}
#: Other names accepted for presets.
ALIASES = {
    "template": "templates",
    "prompts": "templates",
    "prompt-versions": "templates",
    "assistant-role": "assistant",
    "no-assistant": "assistant",
    "temperature": "temperatures",
}


def get_preset(name: str) -> Preset:
    """The preset called ``name`` (or an alias)."""
    return shared.get_preset(name, PRESETS, ALIASES, "llmpsych psychobench presets")


@dataclass
class PresetSettings(shared.PresetSettings):
    """What the user sets on top of a preset (None keeps the thesis's value)."""

    scales: list[str] | None = None


def expand(preset: Preset, settings: PresetSettings) -> list[PresetRun]:
    """The run configs of ``preset`` for the given models and settings (nothing is run)."""
    if settings.temperature is not None and preset.name == "temperatures":
        raise ConfigError("--temperature conflicts with the 'temperatures' preset, which sets it per run")
    base_options: dict[str, Any] = {"scale": settings.scales or ["BFI"], **settings.options}
    if settings.runs is not None:
        base_options["runs"] = settings.runs
    base_params = settings.params(temperature=0.0)

    def config(model: str, variant: Variant) -> dict[str, Any]:
        clash = sorted(set(variant.options) & set(settings.options))
        if clash:
            raise ConfigError(
                f"option {clash[0]!r} is what preset {preset.name!r} varies", "leave it out of --option"
            )
        options = {**base_options, **variant.options}
        return settings.run_config("psychobench", model, {**base_params, **variant.params}, options)

    models = settings.models or [DEFAULT_MODEL]
    return shared.plan(models, preset.variants(), config, run_class=PresetRun, keep_plus=True)


def describe(runs: Sequence[PresetRun]) -> pd.DataFrame:
    """The runs of a preset as a table (for ``--dry-run``)."""
    rows = []
    for r in runs:
        o = r.options
        extra = {k: v for k, v in o.items() if k not in ("scale", "runs")}
        rows.append(
            {
                "directory": r.directory,
                "model": r.model,
                "setting": r.setting,
                "scales": ",".join(o["scale"]),
                "runs": o.get("runs", 10),
                "temperature": r.config["params"]["temperature"],
                "options": json.dumps(extra, sort_keys=True) if extra else "",
            }
        )
    return pd.DataFrame(rows)


def execute(
    runs: Sequence[PresetRun],
    out: Path,
    *,
    progress: bool = True,
    debug: bool = False,
    on_outcome: Callable[[PresetRun, Any], None] | None = None,
) -> list[Any]:
    """Run the preset through the one sweep runner (:func:`llmpsych.runs.presets.execute`); every setting is
    built first (e.g. a template needs level labels), so a setting that cannot be built fails before any
    request is sent. Returns the outcomes."""
    from .task import PsychoBenchTask

    return shared.execute(
        runs, out, progress=progress, debug=debug, on_outcome=on_outcome, check=PsychoBenchTask
    )


def published_frame(published: Published) -> pd.DataFrame:
    """The thesis's table as printed (two decimals)."""
    return pd.DataFrame(
        [
            {
                "BFI": name,
                **{c: f"{m:.2f} ± {sd:.2f}" for c, (m, sd) in zip(published.columns, cells, strict=True)},
            }
            for name, cells in published.rows.items()
        ]
    )


def summarize(preset: Preset, runs: Sequence[PresetRun], out: Path) -> list[Path]:
    """Write the comparison of the preset's analysed runs and ``summary.md`` into ``out`` (no model call)."""
    from .compare import write_comparison

    analysed = [out / r.directory for r in runs if (out / r.directory / "summary.csv").is_file()]
    if not analysed:
        started = any((out / r.directory / STORE_FILE).is_file() for r in runs)
        raise LlmpsychError(
            f"no {'analysed ' if started else ''}run of preset {preset.name!r} found under {out}",
            "finish it with the same command and --out" if started else None,
        )
    paths = write_comparison(analysed, out)
    sections = [
        ("Preset", f"Preset `{preset.name}`: {preset.title} ({preset.paper})."),
        (
            "Results",
            "Every run of this preset side by side, with each run's prompt variant and temperature: "
            "[comparison.md](comparison.md).",
        ),
        (
            "Published values",
            f"The thesis's {preset.published.caption}: mean ± sd over its runs, for comparison.\n\n"
            + table(published_frame(preset.published)),
        ),
    ]
    summary = write_report(out / "summary.md", f"PsychoBench preset {preset.name}", sections)
    return [*paths, summary, write_html(summary, md_links=["comparison.md"])]

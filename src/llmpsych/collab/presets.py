"""The thesis's MAS-Resilience experiments as presets (``llmpsych mas preset NAME``), run through the one
preset command (:func:`llmpsych.clikit.preset_command`) as the PsychoBench and GAMA-Bench presets are.

A preset is a grid of ``mas`` runs (:func:`~llmpsych.collab.experiments.expand_preset`: system × task ×
condition), each in ``OUT/<run name>`` (with several ``--model`` values, ``OUT/<model>/<run name>``), run
through the one sweep runner: the same command with the same ``--out`` resumes unfinished runs without
re-sending answered requests. Then :func:`~llmpsych.collab.experiments.compare_runs` writes the comparison.

The task's options are the run command's flags (``--items``, ``--max-tokens``, ...), layered over every run;
an option the preset varies (the system, the dataset, the condition) is refused there: ``--systems`` and
``--datasets`` choose a subset of the grid instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import pandas as pd

from ..errors import ConfigError, LlmpsychError
from ..runs import presets as shared
from ..runs.config import DEFAULT_MODEL
from ..runs.presets import PresetRun
from .experiments import PRESETS as NAMES
from .experiments import compare_runs, expand_preset
from .systems import SYSTEMS
from .task import MasOptions


@dataclass(frozen=True)
class Preset:
    """A thesis experiment: its name, what it runs and where the thesis prints it."""

    name: str
    title: str
    paper: str


_ABOUT = {
    "main": ("every system on every task: clean, AutoTransform, AutoInject", "Tables 7.2-7.4"),
    "error-rates": ("six systems on HumanEval at nine AutoInject error rates", "Table 7.5"),
    "error-types": ("six systems on HumanEval: semantic vs syntactic errors", "Table 7.6"),
    "defences": ("Self-collab and Camel with the Challenger, the Inspector and both", "Table 7.7"),
    "single-agent": ("one agent alone on the four tasks", "Fig. 7.4"),
    "distraction": ("corrupted lines, bare and marked as corrected", "Fig. 7.6b"),
    "rounds": ("Camel's messages per item, clean and AutoInject, first 50 problems", "section 7.4.6"),
}
PRESETS: dict[str, Preset] = {
    name: Preset(name, _ABOUT[name][0], f"thesis {_ABOUT[name][1]}") for name in NAMES
}
#: What a preset varies: given as a task option, it would be overwritten run by run.
VARIED = frozenset({"system", "dataset", "fault", "p_m", "p_e", "error_type", "defence", "distraction"})


def get_preset(name: str) -> Preset:
    """The preset called ``name``."""
    return shared.get_preset(name, PRESETS, {}, "docs/mas-resilience.md")


@dataclass
class PresetSettings(shared.PresetSettings):
    """What the user sets on top of a preset: a subset of its systems and datasets (None: all)."""

    systems: str | None = None
    datasets: str | None = None


def _names(text: str | None) -> list[str] | None:
    return [part.strip() for part in text.split(",") if part.strip()] if text else None


def expand(preset: Preset, settings: PresetSettings) -> list[PresetRun]:
    """The run configs of ``preset`` for the given models and settings (nothing is run). One model keeps
    the flat ``<run name>`` folders the presets have always written, so an earlier preset folder resumes."""
    varied = sorted(VARIED & settings.options.keys())
    if varied:
        raise ConfigError(
            f"option {varied[0]!r} is what preset {preset.name!r} varies",
            "choose a subset with --systems / --datasets, or run one setting with `llmpsych mas run`",
        )
    systems, datasets = _names(settings.systems), _names(settings.datasets)
    known_datasets = get_args(MasOptions.model_fields["dataset"].annotation)
    for flag, given, known in (("--systems", systems, SYSTEMS), ("--datasets", datasets, known_datasets)):
        unknown = [name for name in given or [] if name not in known]
        if unknown:
            raise ConfigError(f"{flag}: unknown {unknown[0]!r}", f"choose among {', '.join(known)}")
    plan = expand_preset(preset.name, systems, datasets)
    if not plan:
        raise ConfigError(f"preset {preset.name!r} has no run for these --systems / --datasets")
    params = {} if settings.temperature is None else {"temperature": settings.temperature}
    models = settings.models or [DEFAULT_MODEL]
    prefixes = [""] if len(models) == 1 else [f"{d}/" for d in _model_dirs(models)]
    return [
        PresetRun(
            prefix + name,
            model,
            name,
            settings.run_config("mas", model, params, {**options, **settings.options}),
        )
        for model, prefix in zip(models, prefixes, strict=True)
        for name, options in plan
    ]


def _model_dirs(models: list[str]) -> list[str]:
    names = [shared.dir_name(m) for m in models]
    return [n if names.count(n) == 1 else f"{n}-{i + 1}" for i, n in enumerate(names)]


def describe(runs: Sequence[PresetRun]) -> pd.DataFrame:
    """The runs of a preset as a table (for ``--dry-run``)."""
    rows = []
    for r in runs:
        o = r.options
        extra = {k: v for k, v in o.items() if k not in ("system", "dataset", "fault")}
        rows.append(
            {
                "directory": r.directory,
                "model": r.model,
                "system": o["system"],
                "dataset": o["dataset"],
                "fault": o.get("fault", "none"),
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
    """Run the preset through the one sweep runner (:func:`llmpsych.runs.presets.execute`)."""
    return shared.execute(runs, out, progress=progress, debug=debug, on_outcome=on_outcome)


def summarize(preset: Preset, runs: Sequence[PresetRun], out: Path) -> list[Path]:
    """The comparison of the preset's runs in ``out`` (no model call): comparison.md, runs.csv, charts."""
    if not runs:
        raise LlmpsychError(f"preset {preset.name!r} planned no run")
    return compare_runs([out / r.directory for r in runs], out)

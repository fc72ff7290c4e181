"""What the benchmark presets share: a setting, the user's settings, the planned run folders and their
names, the run config of one folder, and running the plan through the one sweep runner.

A preset of a research package (:mod:`llmpsych.psychobench.presets`, :mod:`llmpsych.games.presets`,
:mod:`llmpsych.collab.presets`) keeps what is its own: the experiments and the values the paper printed,
the settings only it takes (scales; games, players and rounds; a subset of systems and datasets), how its
options are layered, and its summary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigError

if TYPE_CHECKING:
    from .config import RunConfig
    from .runner import RunOutcome

P = TypeVar("P")
R = TypeVar("R", bound="PresetRun")


def get_preset(name: str, presets: Mapping[str, P], aliases: Mapping[str, str], listing: str) -> P:
    """The preset called ``name`` (or an alias); ``listing`` is the command that lists them."""
    preset = presets.get(aliases.get(name, name))
    if preset is None:
        raise ConfigError(f"unknown preset {name!r}", f"presets: {', '.join(presets)} (`{listing}`)")
    return preset


@dataclass(frozen=True)
class Variant:
    """One setting of a preset: a label, task options and sampling parameters layered on the base."""

    label: str
    options: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class PresetSettings:
    """What the user sets on top of a preset (None keeps the paper's value); a package adds its own."""

    models: list[str] = field(default_factory=list)
    runs: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    base_url: str | None = None
    concurrency: int | None = None
    data_dir: Path | None = None
    seed: int = 0
    cache: bool = True
    options: dict[str, Any] = field(default_factory=dict)

    def params(self, temperature: float) -> dict[str, Any]:
        """The sampling parameters of every run: the user's temperature (else ``temperature``, the
        paper's) and answer limit."""
        params: dict[str, Any] = {
            "temperature": temperature if self.temperature is None else self.temperature
        }
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        return params

    def run_config(
        self, task: str, model: str, params: dict[str, Any], options: dict[str, Any]
    ) -> dict[str, Any]:
        """The run config mapping of one run of ``task`` on ``model`` with these settings."""
        config: dict[str, Any] = {
            "task": task,
            "model": model,
            "seed": self.seed,
            "cache": self.cache,
            "params": params,
            "options": options,
        }
        for key in ("base_url", "concurrency"):
            if getattr(self, key) is not None:
                config[key] = getattr(self, key)
        if self.data_dir is not None:
            config["data_dir"] = str(self.data_dir)
        return config


@dataclass(frozen=True)
class PresetRun:
    """One run directory of a preset: where, which model and setting, and its run config mapping."""

    directory: str
    model: str
    setting: str
    config: dict[str, Any]

    @property
    def options(self) -> dict[str, Any]:
        """The run's task options."""
        options: dict[str, Any] = self.config["options"]
        return options


def dir_name(text: str, *, keep_plus: bool = False) -> str:
    """A folder name for a model spec or setting (``openai/gpt-4o`` -> ``openai_gpt-4o``).

    PsychoBench presets have kept ``+`` (``v1+CoT``) and GAMA-Bench presets have replaced it since they were
    written; each keeps its rule, so a preset run again with the same ``--out`` finds its earlier runs."""
    allowed = "A-Za-z0-9.=+_-" if keep_plus else "A-Za-z0-9.=_-"
    return re.sub(f"[^{allowed}]+", "_", text).strip("_") or "x"


def plan(
    models: Sequence[str],
    variants: Iterable[Variant],
    config: Callable[[str, Variant], dict[str, Any]],
    *,
    run_class: type[R],
    keep_plus: bool = False,
) -> list[R]:
    """The runs (``run_class``) of every model × variant, in ``<model>/<setting>`` folders; ``config(model,
    variant)`` is a run's config mapping. Models with one folder name are told apart by position (``-1``)."""
    names = [dir_name(m, keep_plus=keep_plus) for m in models]
    model_dirs = [n if names.count(n) == 1 else f"{n}-{i + 1}" for i, n in enumerate(names)]
    variants = list(variants)
    return [
        run_class(
            f"{model_dir}/{dir_name(variant.label, keep_plus=keep_plus)}",
            model,
            variant.label,
            config(model, variant),
        )
        for model, model_dir in zip(models, model_dirs, strict=True)
        for variant in variants
    ]


def execute(
    runs: Sequence[R],
    out: Path,
    *,
    progress: bool = True,
    debug: bool = False,
    on_outcome: Callable[[R, RunOutcome], None] | None = None,
    check: Callable[[RunConfig], object] | None = None,
) -> list[RunOutcome]:
    """Run a preset's plan through the one sweep runner (:mod:`llmpsych.runs.sweep`): a new folder is
    started, a folder holding the same run is resumed (taking this invocation's endpoint, data folder,
    concurrency and cache), a folder holding a different run is refused before anything is sent.

    ``check`` is called on every run config before the first run starts (e.g. building the task, so that a
    setting that cannot be built fails before anything is sent). Returns the outcomes."""
    from .config import parse_run_config
    from .sweep import PlannedRun, run_sweep

    by_directory = {r.directory: r for r in runs}
    planned = [
        PlannedRun(
            r.directory,
            parse_run_config(r.config, f"preset run {r.directory}"),
            {"model": r.model, "setting": r.setting},
        )
        for r in runs
    ]
    if check is not None:
        for run in planned:
            check(run.config)

    def report(run: PlannedRun, outcome: RunOutcome) -> None:
        if on_outcome is not None:
            on_outcome(by_directory[run.directory], outcome)

    return list(run_sweep(planned, out, progress=progress, debug=debug, on_outcome=report))

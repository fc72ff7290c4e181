"""The reliability task: the BFI perturbation grid (optionally steered) through the run engine.

One work unit is one configuration (× steering target × repeat). A unit shuffles the 44 items with its
own seeded generator, asks them in chunks of 17-27 as successive turns of one conversation (the system
prompt and the templates come from the official files), maps every label back to the canonical 1-5
level and scores the five dimensions. A reply that leaves items without a valid label makes the unit
try again with a fresh shuffle (at most ``max_attempts`` times; the released code retried without a
bound); the attempt with the most valid answers is kept and its valid-answer rate recorded.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import ConfigError, DataError, LlmpsychError
from ..models.chat_context import ChatContext
from ..models.types import CallParams, GenerationParams, Message
from ..psychobench.logprob import weighted_scores
from ..runs.context import derived_seed
from ..runs.optionfields import CommaList, Renamed, new_names, off_switch
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable, require_columns
from ..runs.task import Task, WorkUnit
from ..stats.compare import METHOD_ALIASES, METHODS
from .answers import chunk_levels, parse_chunk
from .grid import CHUNK_MAX, CHUNK_MIN, GRID_FACTORS, Configuration, build_grid, chunk_sizes, shuffled_chunks
from .logprobs import expected_levels, label_distributions
from .official import OfficialBFI, data_files, load_bfi, load_steering, load_template
from .outliers import EPS, MIN_PTS
from .prompts import questionnaire_prompt
from .results import ReliabilityResult
from .steering import (
    KINDS,
    STYLES,
    SteeringPlan,
    character_plan,
    environment_plan,
    persona_plan,
    personality_plan,
)

if TYPE_CHECKING:
    import pandas as pd

    from ..instruments.scale import Scale
    from ..runs.items import Administration


#: The t-test's names and aliases: the values an old ``method`` option held (now ``test``).
T_TESTS = frozenset({*METHODS, *METHOD_ALIASES})


class ReliabilityOptions(BaseModel):
    """Which part of the grid, how to steer, how to ask (``docs/reliability.md``)."""

    model_config = ConfigDict(extra="forbid")
    #: Old option names (stored runs and configs, ``-O``, the old flags): read as the new ones.
    renamed_options: ClassVar[tuple[Renamed, ...]] = (
        Renamed("repeats", "runs"),
        Renamed("method", "test", T_TESTS),
        Renamed("mode", "method"),
    )

    templates: CommaList | None = Field(default=None, description="t1..t5 (default: all)")
    versions: CommaList | None = Field(default=None, description="item versions v1..v5 (default: all)")
    languages: CommaList | None = Field(
        default=None, description="En, Zh, Ko, Es, Fr, De, It, Ar, Ru, Ja (default: all ten)"
    )
    labels: CommaList | None = Field(
        default=None,
        description="label formats n, al, au, rl, ru (Arabic numerals, lower/upper Latin, lower/upper "
        "Roman; default: all)",
    )
    orders: CommaList | None = Field(default=None, description="f (ascending), r (descending)")
    steer: Literal["environment", "personality", "character", "persona"] | None = Field(
        default=None,
        description="environment, personality (personality:QA|BIO|POR also sets style), character, or "
        "persona (with targets)",
    )
    style: Literal["QA", "BIO", "POR"] = Field(default="POR", description="personality assignment style")
    cot: bool = Field(default=False, description="a description of the target stays in context")
    targets: list[str] | None = Field(
        default=None,
        description="emotions / profiles / characters / persona texts (default: all in the data)",
    )
    source: Literal["dataset", "generate"] = Field(
        default="dataset", description="stories, descriptions, biographies: official files or the model"
    )
    runs: int = Field(default=1, ge=1, le=1000, description="units per configuration and target")
    item_order: Literal["random", "fixed", "original"] = Field(
        default="random",
        description="random: a new shuffle per configuration; fixed: one shuffle for all; original: 1..44",
    )
    method: Literal["generate", "logprob"] = Field(
        default="generate",
        description="scoring method: generate, or logprob: also score by the expected level under the "
        "label probabilities",
    )
    top_logprobs: int = Field(default=20, ge=1, le=20, description="label probabilities asked for (logprob)")
    max_attempts: int = Field(
        default=3, ge=1, le=10, description="tries per configuration when labels are missing or invalid"
    )
    max_tokens: int = Field(default=512, ge=32, description="maximum tokens per chunk answer")
    tokens_per_item: int | None = Field(
        default=None, ge=1, description="cap each answer at 32 + this × statements (small local models)"
    )
    story_tokens: int = Field(
        default=256, ge=16, description="answer limit of a generated story (source generate)"
    )
    chunk_min: int = Field(default=CHUNK_MIN, ge=1, description="fewest statements per prompt")
    chunk_max: int = Field(default=CHUNK_MAX, ge=1, description="most statements per prompt")
    fit_on: Literal["data", "full-grid"] = Field(
        default="data", description="the map's PCA fit: the data, or all 5^5 vectors (the released code)"
    )
    eps: float = Field(default=EPS, gt=0, description="DBSCAN radius on the 2-D map (outliers)")
    min_pts: int = Field(default=MIN_PTS, ge=1, description="DBSCAN minPts, self included (outliers)")
    test: Literal["f-test", "welch", "student"] = Field(
        default="f-test",
        description="t-test of Tables 3.3 and 3.10: f-test (the authors' F-test chooses Student or Welch; "
        "'paper' is accepted for it), welch, student",
    )
    published: bool = Field(
        default=False,
        description="published: the original code's test details (population SDs + 1e-8); corrected (the "
        "default): see docs/statistics.md, 'Published or corrected'",
        json_schema_extra=off_switch("corrected"),
    )
    default_data: list[str] | None = Field(
        default=None, description="unsteered results (save files or run dirs) to compare steering with"
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return new_names(data, cls.renamed_options)

    @field_validator("test", mode="before")
    @classmethod
    def _test_name(cls, value: Any) -> Any:
        return METHOD_ALIASES.get(value, value) if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _steer_style(cls, data: Any) -> Any:
        """``steer: personality:POR`` sets steer and style at once (the command line's short form)."""
        if isinstance(data, dict) and isinstance(data.get("steer"), str):
            kind, colon, style = data["steer"].partition(":")
            data = {**data, "steer": kind.strip().lower(), **({"style": style.strip()} if colon else {})}
        return data

    @field_validator("style", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check(self) -> ReliabilityOptions:
        if self.chunk_min > self.chunk_max:
            raise ValueError("chunk_min must not exceed chunk_max")
        if self.steer == "persona" and not self.targets:
            raise ValueError("steer=persona needs targets: the persona descriptions")
        return self


def slug(text: str) -> str:
    """A short id-safe form of a target name (a hash suffix keeps long, similar texts apart)."""
    short = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    if len(short) <= 32 and short == text:
        return short
    return f"{short[:32] or 'x'}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


#: the BFI grid's factors, in the order of its configuration ids (``t1-v1-En-n-f``)
_BFI_FACTORS = ("template", "version", "language", "label", "order")
#: columns of data_points.csv that are not scores (each other column is a dimension)
_BFI_KEYS = (
    "unit_id",
    *_BFI_FACTORS,
    "append_label",
    "case",
    "n_valid",
    "n_items",
    "valid_rate",
    "attempts",
    "n_logprob_items",
    "refused",
    "pc1",
    "pc2",
    "outlier",
    "configuration",
    "framing",
    "persona",
    "repeat",
)


def _bfi_points(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """The BFI grid's data points (``data_points.csv``) for :func:`llmpsych.load_runs`: a configuration
    id, the grid's factor columns (``framing``: the label format and the order, e.g. ``al-r``;
    ``persona``: the steering target) and the repeat (1, 2, ...) from the unit's payload in the store."""
    require_columns(table, path, ("unit_id", *_BFI_FACTORS))
    repeats = {u.unit_id: int(u.payload.get("repeat", 0)) + 1 for u in record.units}
    units = table["unit_id"].astype(str)
    unknown = units[~units.isin(repeats)]
    if len(unknown):
        raise DataError(f"{path}: unit {unknown.iloc[0][:60]!r} is not a unit of this run")
    factors = table[list(_BFI_FACTORS)].astype(str)
    target = table["append_label"] if "append_label" in table.columns else None
    return table.assign(
        configuration=factors.agg("-".join, axis=1),
        framing=factors["label"] + "-" + factors["order"],
        persona=target,
        repeat=units.map(repeats),
    )


class ReliabilityTask(Task[ReliabilityOptions]):
    """Scale reliability: the BFI grid, steering, maps and the thesis's statistics."""

    answers_counted = True
    name = "reliability"
    Options = ReliabilityOptions
    Result = ReliabilityResult
    score_tables = (
        ScoreTable(
            "data_points.csv",
            group="configuration",
            repeat="repeat",
            keys=_BFI_KEYS,
            factors=GRID_FACTORS,
            prepare=_bfi_points,
        ),
    )

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        _ = self.grid  # a bad factor level is a config error before any file is written

    @cached_property
    def bfi(self) -> OfficialBFI:
        """The official BFI (all languages and versions)."""
        return load_bfi(self.config.data_dir)

    @cached_property
    def grid(self) -> list[Configuration]:
        """The chosen configurations."""
        o = self.options
        try:
            return build_grid(o.templates, o.versions, o.languages, o.labels, o.orders)
        except ValueError as exc:
            raise ConfigError(f"options for task 'reliability': {exc}") from None

    @cached_property
    def steering_data(self) -> dict[str, dict[str, str]]:
        """Official texts for the steering kind (empty for personas)."""
        kind = self.options.steer
        return (
            load_steering(kind, self.config.data_dir)
            if kind in ("environment", "personality", "character")
            else {}
        )

    @cached_property
    def targets(self) -> list[str | None]:
        """The steering targets (``[None]`` without steering)."""
        o = self.options
        if o.steer is None:
            return [None]
        if o.targets:
            if o.steer in ("environment", "personality") and o.source == "dataset":
                unknown = [t for t in o.targets if t not in self.steering_data]
                if unknown:
                    raise ConfigError(
                        f"unknown {o.steer} target {unknown[0]!r}",
                        f"available: {', '.join(self.steering_data)}",
                    )
            return list(dict.fromkeys(o.targets))
        if o.steer == "persona":
            raise ConfigError("steer=persona needs targets")
        return list(self.steering_data)

    def data_files(self) -> list[Path]:
        o = self.options
        return data_files(self.config.data_dir, o.steer, o.languages, o.templates)

    def units(self) -> list[WorkUnit]:
        units = []
        for config in self.grid:
            for target in self.targets:
                for repeat in range(self.options.runs):
                    parts = [config.config_id]
                    if target is not None:
                        parts.append(slug(target))
                    if self.options.runs > 1:
                        parts.append(f"r{repeat + 1}")
                    payload = {**config.as_dict(), "target": target, "repeat": repeat}
                    units.append(WorkUnit("/".join(parts), payload))
        return units

    def calls_per_unit(self) -> float:
        """For the ETA: one call per chunk of the 44 BFI items, one more for a generated steering turn."""
        o = self.options
        chunks = len(chunk_sizes(44, random.Random(0), o.chunk_min, o.chunk_max))
        return chunks + int(o.source == "generate" and (o.steer == "environment" or o.cot))

    def params(self, max_tokens: int) -> GenerationParams:
        """A call's parameters: the token limit as a default (the user's wins), and in log-prob mode the
        fixed ``logprobs``/``top_logprobs`` the expected levels are read from (cached: one per limit)."""
        cache: dict[int, GenerationParams] = self.__dict__.setdefault("_params", {})
        if max_tokens not in cache:
            if self.options.method == "logprob":
                top = self.options.top_logprobs
                fixed = {"logprobs", "top_logprobs"}
                cache[max_tokens] = CallParams(
                    max_tokens=max_tokens, logprobs=True, top_logprobs=top, fixed=fixed
                )
            else:
                cache[max_tokens] = GenerationParams(max_tokens=max_tokens)
        return cache[max_tokens]

    def item_order(self, attempt: int) -> list[int] | None:
        """The fixed item order of the item-order experiment (``None``: shuffle per unit)."""
        items = list(self.bfi.scale("En", "v1").item_indices)
        if self.options.item_order == "original":
            return items
        if self.options.item_order == "fixed":
            random.Random(derived_seed(self.config.seed, "fixed-item-order", attempt)).shuffle(items)
            return items
        return None

    # -- one unit -----------------------------------------------------------------------------------
    def _official(self, target: str, repeat: int) -> str | None:
        cases = self.steering_data.get(target)
        if self.options.source != "dataset" or not cases:
            return None
        keys = sorted(cases, key=lambda k: int(k) if k.isdigit() else k)
        return cases[keys[repeat % len(keys)]]

    def plan(self, target: str | None, repeat: int, ctx: ChatContext) -> SteeringPlan:
        """The steering turns for a unit (deterministic for its seed)."""
        o = self.options
        if o.steer is None or target is None:
            return SteeringPlan()
        if o.steer == "environment":
            return environment_plan(target, self._official(target, repeat))
        if o.steer == "personality":
            description = self._official(target, repeat) if o.cot else None
            others = list(self.steering_data) or list(o.targets or [])
            return personality_plan(target, o.style, others, ctx.rng("qa-options"), o.cot, description)
        if o.steer == "character":
            return character_plan(target, o.cot, self._official(target, repeat) if o.cot else None)
        return persona_plan(target)

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        p = unit.payload
        config = Configuration(p["template"], p["version"], p["language"], p["label"], p["order"])
        o = self.options
        scale = self.bfi.scale(config.language, config.version)
        pack = self.bfi.pack(config.language)
        body = load_template(config.language, config.template, self.config.data_dir)
        params = self.params(o.max_tokens)
        story_params = self.params(o.story_tokens)

        messages: list[Message] = (
            [{"role": "system", "content": pack.system_prompt}] if pack.system_prompt else []
        )
        plan = self.plan(p.get("target"), p.get("repeat", 0), ctx)
        for turn in plan.turns:
            if turn.generate:
                reply = await ctx.chat(messages, story_params, sample=f"steer:{p.get('repeat', 0)}")
                messages.append({"role": "assistant", "content": reply.text})
            else:
                messages.append({"role": turn.role, "content": turn.content or ""})
        preamble = list(messages)

        best: dict[str, Any] | None = None
        n_levels = len(pack.level_texts)
        for attempt in range(o.max_attempts):
            chunks = shuffled_chunks(
                scale.item_indices,
                ctx.rng("chunks", attempt),
                o.chunk_min,
                o.chunk_max,
                self.item_order(attempt),
            )
            messages = list(preamble)
            answers: dict[int, int] = {}
            expected: dict[int, float] = {}
            invalid: dict[str, str] = {}
            refused = False
            for number, chunk in enumerate(chunks):
                prompt = questionnaire_prompt(
                    body, config.label, config.order, pack, [scale.item(i).text for i in chunk]
                )
                if number == 0 and plan.prefix:
                    prompt = f"{plan.prefix}\n\n{prompt}"
                messages.append({"role": "user", "content": prompt})
                chunk_params = params
                if o.tokens_per_item:
                    cap = min(o.max_tokens, 32 + o.tokens_per_item * len(chunk))
                    chunk_params = self.params(cap)
                reply = await ctx.chat(messages, chunk_params, sample=f"{p.get('repeat', 0)}:{attempt}")
                messages.append({"role": "assistant", "content": reply.text})
                parsed = parse_chunk(reply.text, len(chunk), config.label, n_levels)
                answers.update(chunk_levels(parsed, chunk, config.order, n_levels))
                if o.method == "logprob":
                    found = label_distributions(reply.logprobs or [], len(chunk), config.label, n_levels)
                    found = {i: d for i, d in found.items() if i in parsed.positions}
                    expected.update(expected_levels(found, chunk, config.order, n_levels))
                invalid.update({str(chunk[i - 1]): v for i, v in parsed.invalid.items()})
                refused = refused or (parsed.refused and not parsed.positions)
            outcome = {
                "attempt": attempt + 1,
                "chunks": chunks,
                "answers": answers,
                "expected": expected,
                "invalid": invalid,
                "refused": refused,
            }
            if best is None or len(answers) > len(best["answers"]):
                best = outcome
            if len(answers) == scale.n_items:
                break
        assert best is not None
        scores = scale.score(best["answers"])
        return {
            "config": config.as_dict(),
            "target": p.get("target"),
            "repeat": p.get("repeat", 0),
            "steering": {"kind": o.steer, **plan.details} if o.steer else None,
            "attempts": attempt + 1,
            "kept_attempt": best["attempt"],
            "chunks": best["chunks"],
            "answers": {str(k): v for k, v in sorted(best["answers"].items())},
            "invalid": best["invalid"],
            "refused": best["refused"],
            "n_items": scale.n_items,
            "n_valid": len(best["answers"]),
            "valid_rate": len(best["answers"]) / scale.n_items,
            "scores": {k: (None if math.isnan(v) else v) for k, v in scores.items()},
            **(self._expected_fields(scale, best) if o.method == "logprob" else {}),
        }  # the conversation is in the stored calls: attempt k is the unit's k-th thread (results.py)

    @staticmethod
    def _expected_fields(scale: Any, best: dict[str, Any]) -> dict[str, Any]:
        """Expected levels (written label where no distribution was found) and their scores."""
        values = {i: float(v) for i, v in best["answers"].items()} | best["expected"]
        scores = weighted_scores(scale, values)
        return {
            "expected": {str(k): v for k, v in sorted(best["expected"].items())},
            "n_logprob_items": len(best["expected"]),
            "scores_expected": {k: (None if math.isnan(v) else v) for k, v in scores.items()},
        }

    def administrations(self, record: RunRecord) -> list[Administration]:
        """Every data point's BFI answers (the item keys and dimensions from the BFI data)."""
        from .quality import grid_administrations

        record.results(ReliabilityResult)  # every stored result fits, or one error naming the unit
        return grid_administrations(record.done(), self.bfi.scale("En", "v1"))

    def analyze(self, record: RunRecord) -> list[Path]:
        from .report import analyze_record

        try:  # the item keys and dimensions; the rest of the analysis reads only the store
            scale: Scale | str = self.bfi.scale("En", "v1")
        except LlmpsychError as exc:
            scale = f"Not computed: the item keys come from the BFI data, which could not be read ({exc})."
        return analyze_record(record, self.options, scale)


__all__ = ["KINDS", "STYLES", "ReliabilityOptions", "ReliabilityTask"]

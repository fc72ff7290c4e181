"""The perturbation grid for any instrument (PsyBORGS-style): a scale file and a small grid file.

Factors: prompt templates × item versions × languages × response framings × personas. The templates,
framings and personas are the grid file's (our users' wording); the item versions are the scale file's
optional per-item ``versions`` (version 0 is the item's ``text``); the languages are the ``language``
fields of several scale files of one instrument. One work unit is one configuration (× repeat): the
items in a seeded order, asked in one message, read as ``number: score`` lines, mapped from the
framing's points back onto the scale's range (linearly: point 1 is the scale minimum, the last point its
maximum) and scored per subscale (reverse keys applied). See ``docs/reliability.md``.
"""

from __future__ import annotations

import itertools
import math
import random
import string
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError, DataError
from ..instruments.native import (
    MAX_SCALE_FILE_BYTES,
    FileFormat,
    StoredText,
    detect_format,
    load_scale_text,
    read_text_file,
    scales_from_native,
)
from ..instruments.parsing import parse_item_answers
from ..instruments.scale import Scale
from ..models.chat_context import ChatContext
from ..models.types import GenerationParams, Message
from ..psychobench.logprob import weighted_scores
from ..runs.context import derived_seed
from ..runs.optionfields import Renamed, new_names, off_switch
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable, require_columns, whole_numbers
from ..runs.task import Task, WorkUnit
from ..stats.compare import METHOD_ALIASES
from ..userfiles import parse_yaml
from .grid import GRID_FACTORS
from .outliers import EPS, MIN_PTS
from .results import GridResult

if TYPE_CHECKING:
    import pandas as pd

    from ..runs.items import Administration

#: The grid's factors, in the order of a configuration id (the factor columns of ``load_runs`` scores).
#: The placeholders a template may use (``$items`` is required).
PLACEHOLDERS = ("instructions", "framing", "levels", "low", "high", "n", "items")
MAX_GRID_FILE_BYTES = 200_000
NO_LANGUAGE = "default"

Localised = str | dict[str, str]


def _text_for(value: Any, language: str, where: str) -> Any:
    """``value`` itself, or its entry for ``language`` when it is a mapping language -> value."""
    if isinstance(value, dict):
        if language not in value:
            raise ConfigError(f"{where} has no text for language {language!r}", f"give: {language}: ...")
        return value[language]
    return value


class Framing(BaseModel):
    """A response framing: how many points, their labels, and what the numbers mean."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    points: int | None = Field(default=None, ge=2, le=11, description="None: the scale's own range")
    labels: list[str] | dict[str, list[str]] | None = None
    text: Localised = "how much you agree with each statement"

    @model_validator(mode="after")
    def _labels_fit(self) -> Framing:
        lists = self.labels.values() if isinstance(self.labels, dict) else [self.labels or []]
        for labels in lists:
            if labels and self.points is not None and len(labels) != self.points:
                raise ValueError(f"{len(labels)} labels for {self.points} points")
            if labels and self.points is None:
                raise ValueError("labels need 'points' (or leave both out to use the scale's own)")
        return self


def _default_framings() -> dict[str, Framing]:
    return {"scale": Framing()}


def _default_personas() -> dict[str, Localised | None]:
    return {"none": None}


class GridSpec(BaseModel):
    """A grid file: templates, framings, personas, and optionally which versions and languages to use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    templates: dict[str, Localised] = Field(min_length=1)
    framings: dict[str, Framing] = Field(default_factory=_default_framings, min_length=1)
    personas: dict[str, Localised | None] = Field(default_factory=_default_personas, min_length=1)
    versions: list[int] | None = Field(default=None, description="item versions (0: the item's text)")
    languages: list[str] | None = Field(default=None, description="default: every scale file's language")

    @field_validator("templates")
    @classmethod
    def _placeholders(cls, value: dict[str, Localised]) -> dict[str, Localised]:
        for name, body in value.items():
            for text in body.values() if isinstance(body, dict) else [body]:
                template = string.Template(text)
                if not template.is_valid():
                    raise ValueError(f"template {name!r}: a '$' that is not a placeholder (write $$)")
                unknown = sorted(set(template.get_identifiers()) - set(PLACEHOLDERS))
                if unknown:
                    raise ValueError(
                        f"template {name!r}: unknown placeholder ${unknown[0]} "
                        f"(known: {', '.join('$' + p for p in PLACEHOLDERS)})"
                    )
                if "items" not in template.get_identifiers():
                    raise ValueError(f"template {name!r} has no $items placeholder")
        return value

    @field_validator("templates", "framings", "personas")
    @classmethod
    def _names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not name or not all(c.isalnum() or c in "_." for c in name):
                raise ValueError(f"level name {name!r}: use letters, digits, '_' or '.'")
        return value


def parse_structured_text(text: str, origin: str) -> Any:
    """A YAML or JSON document (JSON is YAML), by the one safe parser (:func:`llmpsych.userfiles.parse_yaml`:
    a clear error line, bounded nesting, an alias-bomb guard)."""
    return parse_yaml(text, origin)


def _stored(value: Any, what: str, limit: int) -> Any:
    if isinstance(value, str | Path):
        path, digest, text = read_text_file(value, what, limit)
        return {"path": path, "sha256": digest, "content": text}
    return value


@dataclass(frozen=True)
class LanguageForm:
    """One language of the instrument: its scale and each version's item texts."""

    scale: Scale
    versions: dict[int, dict[int, str]]
    path: str


def scale_with_versions(
    stored: StoredText, name: str | None = None
) -> tuple[Scale, dict[int, dict[int, str]]]:
    """The file's scale (``name`` when it holds several) and its item versions ``{k: {index: text}}``.

    Version 0 is each item's ``text``; version ``k`` its ``versions[k-1]``; only versions that every item
    has are kept. ``versions`` is read here (and left out before the scale is checked), so a file with
    paraphrases loads whether or not the native format knows the field.
    """
    origin = stored.path
    data = parse_structured_text(stored.content, origin)
    kind: FileFormat = detect_format(data)
    found: dict[str, dict[int, list[str]]] = {}
    if kind == "native":
        entries = data.get("scales") if isinstance(data, dict) and "scales" in data else data
        for entry in entries if isinstance(entries, list) else [entries]:
            if not isinstance(entry, dict) or not isinstance(entry.get("items"), list):
                continue
            per_item: dict[int, list[str]] = {}
            for item in entry["items"]:
                if isinstance(item, dict) and "versions" in item:
                    versions = item.pop("versions")
                    if not isinstance(versions, list) or not all(
                        isinstance(v, str) and v.strip() for v in versions
                    ):
                        raise DataError(
                            f"{origin}: item {item.get('index')!r}: 'versions' must be a list of texts"
                        )
                    if isinstance(item.get("index"), int):
                        per_item[item["index"]] = versions
            found[str(entry.get("name"))] = per_item
        scales = scales_from_native(data, origin=origin)
    else:
        scales = load_scale_text(stored.content, origin=origin, suffix=Path(origin).suffix)
    if name is not None:
        chosen = [s for s in scales if s.name.lower() == name.lower()]
        if not chosen:
            raise DataError(
                f"{origin}: no scale named {name!r}", f"it holds: {', '.join(s.name for s in scales)}"
            )
    elif len(scales) > 1:
        raise DataError(f"{origin} holds {len(scales)} scales", "choose one with --scale NAME")
    else:
        chosen = scales
    scale = chosen[0]
    if scale.unscored:
        raise DataError(f"{origin}: scale {scale.name!r} cannot be scored: {scale.unscored_reason}")
    per_item = found.get(scale.name, {})
    count = min((len(per_item.get(item.index, [])) for item in scale.items), default=0)
    versions = {0: {item.index: item.text for item in scale.items}}
    for k in range(1, count + 1):
        versions[k] = {item.index: per_item[item.index][k - 1] for item in scale.items}
    return scale, versions


def _same_instrument(first: LanguageForm, other: LanguageForm) -> None:
    a, b = first.scale, other.scale
    checks = [
        ("name", a.name.lower(), b.name.lower()),
        ("item numbers", a.item_indices, b.item_indices),
        ("reverse keys", a.reverse_indices, b.reverse_indices),
        ("response range", (a.response_min, a.response_max), (b.response_min, b.response_max)),
        (
            "subscales",
            [(s.name, s.item_indices) for s in a.subscales],
            [(s.name, s.item_indices) for s in b.subscales],
        ),
        ("scoring", a.scoring, b.scoring),
    ]
    for what, x, y in checks:
        if x != y:
            raise ConfigError(
                f"{other.path}: {what} not as in {first.path}",
                "the scale files of a grid are one instrument in several languages",
            )


class CustomGridOptions(BaseModel):
    """Which scale files, which grid, how to ask (``docs/reliability.md``, "Any instrument")."""

    model_config = ConfigDict(extra="forbid")
    #: Old option names (stored runs and configs): read as the new ones.
    renamed_options: ClassVar[tuple[Renamed, ...]] = (
        Renamed("scale_files", "scale_file"),
        Renamed("repeats", "runs"),
        Renamed("method", "test"),
    )

    scale_file: list[StoredText] = Field(min_length=1, description="one scale file per language")
    scale: str | None = Field(default=None, description="the scale's name when a file holds several")
    grid: StoredText = Field(description="the grid file (YAML or JSON)")
    runs: int = Field(default=1, ge=1, le=1000, description="units per configuration")
    item_order: Literal["random", "original"] = Field(
        default="random", description="random: a new shuffle per attempt; original: the file's order"
    )
    max_attempts: int = Field(
        default=3, ge=1, le=10, description="tries per configuration when answers are missing or invalid"
    )
    max_tokens: int = Field(default=512, ge=16, description="maximum tokens per answer")
    eps: float = Field(default=EPS, gt=0, description="DBSCAN radius on the 2-D map, in score units")
    min_pts: int = Field(default=MIN_PTS, ge=1, description="DBSCAN minPts, self included (outliers)")
    test: Literal["f-test", "welch", "student"] = Field(
        default="f-test",
        description="t-test of the factor levels: f-test (the authors' F-test chooses Student or Welch), "
        "welch, student",
    )
    published: bool = Field(
        default=False,
        description="published: the original code's test details (population SDs + 1e-8); corrected (the "
        "default): see docs/statistics.md, 'Published or corrected'",
        json_schema_extra=off_switch("corrected"),
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return new_names(data, cls.renamed_options)

    @field_validator("scale_file", mode="before")
    @classmethod
    def _read_scales(cls, value: Any) -> Any:
        values = value if isinstance(value, list) else [value]
        return [_stored(v, "scale file", MAX_SCALE_FILE_BYTES) for v in values]

    @field_validator("grid", mode="before")
    @classmethod
    def _read_grid(cls, value: Any) -> Any:
        return _stored(value, "grid file", MAX_GRID_FILE_BYTES)

    @field_validator("test", mode="before")
    @classmethod
    def _test_name(cls, value: Any) -> Any:
        return METHOD_ALIASES.get(value, value) if isinstance(value, str) else value


def load_grid_spec(stored: StoredText) -> GridSpec:
    """The grid file's content, checked (one error line naming the file and the field)."""
    data = parse_structured_text(stored.content, stored.path)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{stored.path}: a grid file is a mapping with 'templates' (and framings, personas)"
        )
    try:
        return GridSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{stored.path}: {where}: {first['msg'].removeprefix('Value error, ')}") from None


@dataclass(frozen=True)
class GridConfiguration:
    """One cell of an instrument's grid."""

    template: str
    version: str
    language: str
    framing: str
    persona: str

    @property
    def config_id(self) -> str:
        """E.g. ``plain-v0-en-agree5-none``."""
        return "-".join((self.template, self.version, self.language, self.framing, self.persona))


def point_value(point: int, points: int, low: int, high: int) -> float:
    """A framing's point (1..``points``) on the scale's range: 1 -> ``low``, ``points`` -> ``high``."""
    return low + (point - 1) * (high - low) / (points - 1)


def levels_text(labels: list[str] | None, low: int, high: int) -> str:
    """``1 = Strongly disagree`` lines for the labelled points (the bare range when none is labelled)."""
    if not labels or not any(labels):
        return f"{low} (lowest) to {high} (highest)"
    return "\n".join(f"{low + i} = {text}" for i, text in enumerate(labels) if text)


#: columns of data_points.csv that are not scores (each other column is one of the scale's subscales)
_GRID_KEYS = (
    "unit_id",
    *GRID_FACTORS,
    "repeat",
    "n_valid",
    "n_items",
    "valid_rate",
    "pc1",
    "pc2",
    "outlier",
    "configuration",
)


def _grid_points(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """The grid's data points for :func:`llmpsych.load_runs`: a configuration id and the repeat counted
    from 1."""
    require_columns(table, path, (*GRID_FACTORS, "repeat"))
    factors = table[list(GRID_FACTORS)].astype(str)
    return table.assign(
        configuration=factors.agg("-".join, axis=1),
        repeat=whole_numbers(table["repeat"], path, "repeat") + 1,
    )


class CustomGridTask(Task[CustomGridOptions]):
    """Any scale file through the perturbation grid; the reliability analysis per factor."""

    name = "reliability-grid"
    Options = CustomGridOptions
    Result = GridResult
    score_tables = (
        ScoreTable(
            "data_points.csv",
            group="configuration",
            repeat="repeat",
            keys=_GRID_KEYS,
            factors=GRID_FACTORS,
            prepare=_grid_points,
        ),
    )

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        config.options.pop("scale_files", None)  # the old name of scale_file (a run stored before)
        config.options["scale_file"] = [f.model_dump() for f in self.options.scale_file]
        config.options["grid"] = self.options.grid.model_dump()  # the run keeps its files' text
        _ = self.grid  # every error before a run folder exists

    @cached_property
    def spec(self) -> GridSpec:
        """The grid file's content."""
        return load_grid_spec(self.options.grid)

    @cached_property
    def forms(self) -> dict[str, LanguageForm]:
        """The instrument's languages, by name (``default`` for a single file without a language)."""
        forms: dict[str, LanguageForm] = {}
        for stored in self.options.scale_file:
            scale, versions = scale_with_versions(stored, self.options.scale)
            if not scale.subscales:
                raise ConfigError(
                    f"{stored.path}: scale {scale.name!r} has no subscales", "the grid scores subscales"
                )
            language = scale.language or NO_LANGUAGE
            if language in forms:
                raise ConfigError(
                    f"{stored.path}: language {language!r} is also {forms[language].path}'s",
                    "give each scale file of a grid its own 'language'",
                )
            form = LanguageForm(scale, versions, stored.path)
            if forms:
                _same_instrument(next(iter(forms.values())), form)
            forms[language] = form
        return forms

    @property
    def scale(self) -> Scale:
        """The instrument (its first language) for scoring and subscales."""
        return next(iter(self.forms.values())).scale

    @cached_property
    def grid(self) -> list[GridConfiguration]:
        """Every configuration of the chosen levels."""
        spec = self.spec
        languages = spec.languages or list(self.forms)
        for language in languages:
            if language not in self.forms:
                raise ConfigError(
                    f"grid language {language!r} has no scale file", f"files give: {', '.join(self.forms)}"
                )
        available = min(len(f.versions) for f in self.forms.values())
        versions = spec.versions if spec.versions is not None else list(range(available))
        for k in versions:
            if not 0 <= k < available:
                raise ConfigError(
                    f"grid version {k} is not in the scale files",
                    f"the files give versions 0-{available - 1}: 0 is the item text, k its versions[k-1]",
                )
        for language in languages:  # every localised text exists before anything runs
            for name, body in spec.templates.items():
                _text_for(body, language, f"template {name!r}")
            for name, framing in spec.framings.items():
                _text_for(framing.text, language, f"framing {name!r}")
                if framing.labels is not None:
                    _text_for(framing.labels, language, f"framing {name!r} labels")
            for name, persona in spec.personas.items():
                _text_for(persona, language, f"persona {name!r}")
        return [
            GridConfiguration(t, f"v{v}", lang, f, p)
            for t, v, lang, f, p in itertools.product(
                spec.templates,
                dict.fromkeys(versions),
                dict.fromkeys(languages),
                spec.framings,
                spec.personas,
            )
        ]

    def data_files(self) -> list[Path]:
        files = [Path(f.path) for f in self.options.scale_file] + [Path(self.options.grid.path)]
        return [f for f in files if f.is_file()]

    def units(self) -> list[WorkUnit]:
        repeats = self.options.runs
        return [
            WorkUnit(
                config.config_id + (f"/r{repeat + 1}" if repeats > 1 else ""),
                {**config.__dict__, "repeat": repeat},
            )
            for config in self.grid
            for repeat in range(repeats)
        ]

    def calls_per_unit(self) -> float:
        return 1.0

    def params(self) -> GenerationParams:
        """The answer's token limit, a default (the user's wins: runs/params.py)."""
        return GenerationParams(max_tokens=self.options.max_tokens)

    def prompt(self, config: GridConfiguration, statements: list[str]) -> tuple[str | None, str, int, int]:
        """The system text, the user message, and the framing's answer range for one configuration."""
        spec, form = self.spec, self.forms[config.language]
        scale, language = form.scale, config.language
        framing = spec.framings[config.framing]
        labels: list[str] | None
        if framing.points is None:
            low, high = scale.response_min, scale.response_max
            labels = [scale.level_labels.get(v, "") for v in range(low, high + 1)]
        else:
            low, high = 1, framing.points
            labels = _text_for(framing.labels, language, "") if framing.labels is not None else None
        body = string.Template(_text_for(spec.templates[config.template], language, ""))
        message = body.substitute(
            instructions=scale.instructions or "",
            framing=_text_for(framing.text, language, ""),
            levels=levels_text(labels, low, high),
            low=str(low),
            high=str(high),
            n=str(len(statements)),
            items="\n".join(f"{i}. {text}" for i, text in enumerate(statements, start=1)),
        )
        persona = _text_for(spec.personas[config.persona], language, "")
        system = "\n\n".join(t for t in (persona, scale.system_prompt) if t) or None
        return system, message.strip(), low, high

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        p = unit.payload
        config = GridConfiguration(*(p[f] for f in GRID_FACTORS))
        form = self.forms[config.language]
        scale = form.scale
        texts = form.versions[int(config.version[1:])]
        repeat = int(p.get("repeat", 0))
        params = self.params()
        best: dict[str, Any] | None = None
        for attempt in range(self.options.max_attempts):
            order = list(scale.item_indices)
            if self.options.item_order == "random":
                random.Random(derived_seed(self.config.seed, unit.unit_id, attempt)).shuffle(order)
            system, message, low, high = self.prompt(config, [texts[i] for i in order])
            messages: list[Message] = [{"role": "system", "content": system}] if system else []
            messages.append({"role": "user", "content": message})
            reply = await ctx.chat(messages, params, sample=f"{repeat}:{attempt}")
            parsed = parse_item_answers(reply.text, range(1, len(order) + 1), low, high)
            points = {order[k - 1]: v for k, v in parsed.answers.items()}
            if best is None or len(points) > len(best["points"]):
                best = {
                    "attempt": attempt + 1,
                    "order": order,
                    "points": points,
                    "range": [low, high],
                    "refused": parsed.refused,
                    "transcript": [*messages, {"role": "assistant", "content": reply.text}],
                }
            if len(points) == scale.n_items:
                break
        assert best is not None
        low, high = best["range"]
        own_range = self.spec.framings[config.framing].points is None
        values = {
            i: float(v)
            if own_range
            else point_value(v, high - low + 1, scale.response_min, scale.response_max)
            for i, v in best["points"].items()
        }
        scores = weighted_scores(scale, values)
        return {
            "config": {f: p[f] for f in GRID_FACTORS},
            "repeat": repeat,
            "attempts": attempt + 1,
            "kept_attempt": best["attempt"],
            "order": best["order"],
            "points": {str(k): v for k, v in sorted(best["points"].items())},
            "answers": {str(k): v for k, v in sorted(values.items())},
            "refused": best["refused"],
            "n_items": scale.n_items,
            "n_valid": len(values),
            "valid_rate": len(values) / scale.n_items,
            "scores": {k: (None if math.isnan(v) else v) for k, v in scores.items()},
            "transcript": best["transcript"],
        }

    def administrations(self, record: RunRecord) -> list[Administration]:
        """Every data point's answers (a reply that followed the positions, not the statements, as
        ``invalid``, as the analysis leaves it out)."""
        from .custom_analysis import order_independent_units
        from .quality import grid_administrations

        record.results(GridResult)  # every stored result fits, or one error naming the unit
        done = record.done()
        return grid_administrations(done, self.scale, set(order_independent_units(done)))

    def analyze(self, record: RunRecord) -> list[Path]:
        from .custom_analysis import analyze_custom_record

        return analyze_custom_record(record, self.options, self.scale)


def grid_summary(task: CustomGridTask) -> dict[str, Any]:
    """The levels of every factor (for the CLI's dry listing and the report)."""
    levels: dict[str, list[str]] = {f: [] for f in GRID_FACTORS}
    for config in task.grid:
        for f in GRID_FACTORS:
            if getattr(config, f) not in levels[f]:
                levels[f].append(getattr(config, f))
    return {"configurations": len(task.grid), "levels": levels, "scale": task.scale.name}


__all__ = [
    "GRID_FACTORS",
    "CustomGridOptions",
    "CustomGridTask",
    "Framing",
    "GridConfiguration",
    "GridResult",
    "GridSpec",
    "point_value",
]

"""The EmotionBench task: default runs, then N runs per selected situation, each an independent query.

Work units (one model query each, plus bounded re-asks in the same conversation):

* ``default/run001`` ... - the scale without a situation (``default_runs``; 50 for PANAS and 10 for the
  other scales by default, as in the released runs);
* ``Anger-1/s03/run001`` ... - the scale after the situation line, ``runs`` times per situation, for
  ``situations_per_factor`` situations per factor (5 by default, sampled with the run seed);
* with ``positive`` (RQ2): ``negative/<situation>/runK`` for each original named by the positive file
  and ``positive/<situation>/runK`` for its rewrite; their baseline is the original's evoked runs.

Items are shuffled per run with the unit's seeded generator (``shuffle=false`` keeps the original order,
as in the released runs). Temperature is the run config's (0 by default).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import warnings
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..instruments.administration import administer
from ..instruments.native import ScaleFileRecord
from ..instruments.official import official_file
from ..instruments.parsing import DEFAULT_REASK_WORDING
from ..instruments.scale import Scale
from ..models.chat_context import ChatContext
from ..models.types import GenerationParams
from ..runs.items import Administration, ScaleItems, unanswered_status
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable
from ..runs.task import Task, WorkUnit
from .options import EmotionBenchOptions, EmotionBenchResult
from .prompts import V2_SYSTEM, PromptSettings, build_prompt
from .scales import EXPECTED_SCALES, load_scales
from .situations import (
    EMOTIONS,
    CountWarning,
    PositivePair,
    Situation,
    SituationSet,
    canonical_emotion,
    load_positive_file,
    load_situations,
    load_situations_file,
    situations_path,
)

if TYPE_CHECKING:
    from .finetune import Person

#: The emotion each emotion-specific scale belongs to (spec §2.2).
SCALE_EMOTION: dict[str, str] = {
    "AGQ": "Anger",
    "DASS-21": "Anxiety",
    "BDI": "Depression",
    "FDS": "Frustration",
    "MJS": "Jealousy",
    "GASP": "Guilt",
    "FSS": "Fear",
    "BFNE": "Embarrassment",
}


_SAID: set[str] = set()
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def say_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Show each :class:`CountWarning` as one line on stderr (``warning: CountWarning: ...``), once per
    process (a run and its analysis load the file twice); other warnings go back to :mod:`warnings`."""
    for entry in caught:
        if not issubclass(entry.category, CountWarning):
            warnings.warn_explicit(entry.message, entry.category, entry.filename, entry.lineno)
            continue
        text = " ".join(_CONTROL.sub(" ", str(entry.message)).split())  # one line, no terminal escapes
        if text not in _SAID:
            _SAID.add(text)
            sys.stderr.write(f"warning: CountWarning: {text}\n")
            sys.stderr.flush()


def file_scale(record: ScaleFileRecord, name: str) -> Scale:
    """The emotion measure from a user's scale file: its only scale, or the one named ``name``; official
    EmotionBench names are refused (they pick the human data and the tables' measures)."""
    scales = record.scales()
    chosen = [s for s in scales if s.name.lower() == name.strip().lower()] if len(scales) > 1 else scales
    if not chosen:
        raise ConfigError(
            f"{record.path}: no scale named {name!r}", f"it holds {', '.join(s.name for s in scales)}"
        )
    scale = chosen[0]
    if scale.name.upper() in EXPECTED_SCALES:
        raise ConfigError(
            f"{record.path}: scale {scale.name!r} has the name of an official EmotionBench scale",
            f"rename yours (e.g. {scale.name}-own)",
        )
    if scale.unscored:
        raise ConfigError(f"{record.path}: scale {scale.name!r} cannot be scored: {scale.unscored_reason}")
    if scale.instructions is None:  # as in PsychoBench: our wording from the range and labels
        from ..psychobench.task import default_instructions

        scale = dataclasses.replace(scale, instructions=default_instructions(scale))
    if scale.system_prompt is None:
        system = V2_SYSTEM.format(min=scale.response_min, max=scale.response_max)
        scale = dataclasses.replace(scale, system_prompt=system)
    return scale


class EmotionBenchTask(Task[EmotionBenchOptions]):
    """EmotionBench: default and evoked emotion measures, tests of the change, comparison with humans."""

    answers_counted = True
    name = "emotionbench"
    not_settings = frozenset(
        {"emotions", "factors", "situations_per_factor", "runs", "default_runs", "alpha"}
    )
    Options = EmotionBenchOptions
    Result = EmotionBenchResult
    score_tables = (
        ScoreTable(
            "runs.csv",
            group="factor",
            repeat="run",
            item="situation",
            keys=(
                "kind",
                "factor",
                "situation",
                "run",
                "valid",
                "refused",
                "asks",
                "positional",
                "positional_replies",
            ),
        ),
    )

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        config.options["language"] = self.options.language  # resolved from the files: stored for reports
        if self.options.scale_file is not None:  # the stored config keeps the file's text
            config.options["scale_file"] = self.options.scale_file.model_dump()
            _ = self.scale

    # -- data ------------------------------------------------------------------------------------
    def data_files(self) -> list[Path]:
        if self.options.scale_file is not None:  # own measure: the situations are the only official data
            own = Path(self.options.scale_file.path)
            situations = (
                Path(self.options.situations_file) if self.options.situations_file else self._official()
            )
            return [situations, *([own] if own.is_file() else [])]
        files = [official_file("EmotionBench", self.config.data_dir)]
        files.append(Path(self.options.situations_file) if self.options.situations_file else self._official())
        if self.options.positive:
            files.append(Path(self.options.positive))
        if self.options.experiment == "heldout":
            from .crowd import crowd_path

            files.append(crowd_path(self.config.data_dir))
        return files

    def _official(self) -> Path:
        return situations_path(self.config.data_dir)

    @cached_property
    def scale(self) -> Scale:
        """The administered scale, from the EmotionBench data file or the user's scale file."""
        if self.options.scale_file is not None:
            return file_scale(self.options.scale_file.record, self.options.scale)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scales = load_scales(self.config.data_dir)
        say_warnings(caught)
        for name, scale in scales.items():
            if name.lower() == self.options.scale.strip().lower():
                return scale
        raise ConfigError(
            f"unknown EmotionBench scale {self.options.scale!r}", f"available: {', '.join(scales)}"
        )

    @cached_property
    def situation_set(self) -> SituationSet:
        """The situations (official, or the user's file). Count differences only warn: the loader's
        :class:`CountWarning` is shown as one console line (once per process), the report repeats it."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if self.options.situations_file:
                loaded = load_situations_file(self.options.situations_file)
            else:
                loaded = load_situations(self.config.data_dir)
        say_warnings(caught)
        return loaded

    @property
    def emotions(self) -> list[str]:
        """The emotions tested."""
        if self.options.emotions:
            chosen = [canonical_emotion(e) for e in self.options.emotions]
            unknown = [e for e in chosen if e not in self.situation_set.emotions]
            if unknown:
                raise ConfigError(f"unknown emotion {unknown[0]!r}", f"use {', '.join(EMOTIONS)}")
            return chosen
        own = SCALE_EMOTION.get(self.scale.name)
        return [own] if own else list(self.situation_set.emotions)

    @cached_property
    def selected(self) -> list[Situation]:
        """The evaluated situations (seeded sample per factor)."""
        chosen = self.situation_set.select(
            self.options.situations_per_factor, self.config.seed, self.emotions
        )
        if self.options.factors:
            wanted = set(self.options.factors)
            known = {f.id for f in self.situation_set.factors}
            if wanted - known:
                raise ConfigError(f"unknown factor {sorted(wanted - known)[0]!r}")
            chosen = [s for s in chosen if s.factor in wanted]
        return chosen

    @cached_property
    def positive_pairs(self) -> list[PositivePair]:
        """Positive rewrites with their originals (empty without ``positive``)."""
        if not self.options.positive:
            return []
        return load_positive_file(self.options.positive, self.situation_set)

    @cached_property
    def heldout_split(self) -> tuple[list[Person], list[Person]]:
        """``(train, test)`` people of ``crowd.xlsx`` (:func:`~llmpsych.emotion.finetune.split_people`)."""
        from .crowd import crowd_path, load_crowd
        from .finetune import split_people

        people = load_crowd(crowd_path(self.config.data_dir), self.scale)
        return split_people(people, self.options.test_size, self.options.split_seed)

    @cached_property
    def describe_negatives(self) -> list[Situation]:
        """The negative situations of the describe experiment (see :mod:`~llmpsych.emotion.describe`)."""
        from .describe import select_from_run

        if self.options.select_from:
            return select_from_run(self.options.select_from, self.situation_set, self.options.select_n)
        if self.positive_pairs:
            return list({p.original.key: p.original for p in self.positive_pairs}.values())
        return self.selected

    @property
    def n_default(self) -> int:
        """Number of default runs."""
        if self.options.default_runs is not None:
            return self.options.default_runs
        return 50 if self.scale.name == "PANAS" else 10

    @property
    def prompt_settings(self) -> PromptSettings:
        """The prompt wording of this run."""
        o = self.options
        return PromptSettings(
            o.prompt, o.stable, o.situation_template, o.system_template, o.instructions_template, o.template
        )

    # -- units -----------------------------------------------------------------------------------
    def units(self) -> list[WorkUnit]:
        if self.options.experiment == "describe":
            from .describe import RefusalRule, check_groups, describe_messages, describe_units

            describe_messages("a situation", "a group", self.prompt_settings)  # a bad own template fails here
            RefusalRule.build(self.options.refusal_patterns)  # and a bad own pattern
            return describe_units(
                check_groups(self.options.groups),
                self.options.runs,
                self.describe_negatives,
                self.positive_pairs,
            )
        if self.options.experiment == "heldout" and (self.scale.name != "PANAS" or self.options.positive):
            raise ConfigError(
                "experiment heldout: the held-out humans answered PANAS", "use scale PANAS without positive"
            )
        for probe in (None, "a situation"):  # a bad own template fails here, before any request
            build_prompt(self.scale, probe, self.prompt_settings)
        units = [
            WorkUnit(f"default/run{r:03d}", {"kind": "default", "run": r})
            for r in range(1, self.n_default + 1)
        ]
        if self.positive_pairs:
            seen: set[str] = set()
            for i, pair in enumerate(self.positive_pairs, start=1):
                if pair.original.key not in seen:
                    seen.add(pair.original.key)
                    units += self._situation_units(f"negative/{pair.original.key}", "negative", pair.original)
                units += self._situation_units(
                    f"positive/{pair.original.key}/p{i:02d}", "positive", pair.original, pair.positive
                )
            return units
        if self.options.experiment == "heldout":
            from .finetune import heldout_units

            return units + heldout_units(self.heldout_split[1], self.situation_set, self.options.runs)
        for situation in self.selected:
            units += self._situation_units(situation.key, "evoked", situation)
        return units

    def _situation_units(
        self, prefix: str, kind: str, situation: Situation, text: str | None = None
    ) -> list[WorkUnit]:
        payload = {
            "kind": kind,
            "factor": situation.factor,
            "situation": situation.index + 1,
            "text": text or situation.text,
        }
        return [
            WorkUnit(f"{prefix}/run{r:03d}", {**payload, "run": r}) for r in range(1, self.options.runs + 1)
        ]

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        if unit.payload.get("experiment") == "describe":
            from .describe import run_describe_unit

            return await run_describe_unit(self, unit, ctx)
        scale = self.scale
        payload = unit.payload
        order = list(scale.item_indices)
        if self.options.shuffle:
            ctx.rng("item-order").shuffle(order)
        situation = payload.get("text") if payload["kind"] != "default" else None
        system, instructions = build_prompt(scale, situation, self.prompt_settings)
        result = await administer(
            scale,
            ctx,
            order=order,
            params=GenerationParams(max_tokens=8 * scale.n_items + 128),  # a default: the user's wins
            reask_template=DEFAULT_REASK_WORDING,
            system_prompt=system,
            instructions=instructions,
            max_reasks=self.options.max_reasks,
            sample=int(payload["run"]),
        )
        return {
            **payload,
            "scale": scale.name,
            "order": order,
            "answers": {str(k): v for k, v in result.answers.items()},
            "unanswered": list(result.unanswered),
            "duplicates": {str(k): list(v) for k, v in result.duplicates.items()},
            "out_of_range": {str(k): v for k, v in result.out_of_range.items()},
            "refused": result.refused,
            "asks": result.asks,
            "positional": list(result.positional),
            "positional_replies": result.positional_replies,
        }  # the conversation itself is in the run store's calls (the analysis writes transcripts.jsonl)

    # -- analysis --------------------------------------------------------------------------------
    def administrations(self, record: RunRecord) -> list[Administration]:
        """Every finished run's answers to the scale (none in the ``describe`` experiment, which asks
        for words, not ratings), numbered in unit order across situations."""
        if self.options.experiment == "describe":
            return []
        from ..instruments.quality import stored_answer  # pandas: not before a run's first request

        scale, found = self.scale, []
        shape = ScaleItems.of(scale)
        for number, (unit, result) in enumerate(record.results(EmotionBenchResult), start=1):
            stored = result.model_extra or {}
            answers = dict(
                stored_answer(scale, item, value, f"unit {unit.unit_id}")
                for item, value in (result.answers or {}).items()
                if value is not None and not stored.get("refused")
            )
            status = unanswered_status(stored, scale.item_indices, answers)
            found.append(Administration(shape, number, answers, status))
        return found

    def analyze(self, record: RunRecord) -> list[Path]:
        if self.options.experiment == "describe":
            from .describe import analyze_describe

            return analyze_describe(self, record)
        from .analysis import analyze_record

        return analyze_record(self, record)

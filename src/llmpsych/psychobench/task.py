"""The PsychoBench task: every chosen scale administered ``runs`` times, each run with its own item order.

One work unit is one (scale, run). The wording comes from the official data file: the scale's
``inner_setting`` is the system prompt and its ``prompt`` the instructions before the numbered
statements; a persona (ours) goes before the system prompt, and the cipher wraps the whole exchange.
Scales from the user's own files (``scale_file``, ``docs/own-instruments.md``) run the same way; the
run config records each file's path, sha256 and text, so the run never needs the file again and a
resume refuses a file that changed.
Prompt variants (``template``, ``cot``, ``system_prompt``; :mod:`.variants`) change only the wording of the
prompt; ``v1`` with the ``assistant`` system prompt and no CoT is the data file's wording, unchanged.
Temperature and other sampling parameters are the run config's (temperature 0 by default, as in the
paper). ``mode="logprob"`` asks one statement per request and reads the option probabilities instead.
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError, DataError, LlmpsychError
from ..instruments.administration import administer, item_block
from ..instruments.native import MAX_SCALE_FILE_BYTES, ScaleFileRecord
from ..instruments.official import load_psychobench_scales, official_file
from ..instruments.parsing import DEFAULT_REASK_WORDING
from ..instruments.scale import STORED_HINT, Scale
from ..models.chat_context import ChatContext, ChatRequest
from ..models.types import CallParams, GenerationParams
from ..runs.config import RunConfig
from ..runs.items import Administration, ScaleItems, unanswered_status
from ..runs.languages import OFFICIAL_LANGUAGE
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable
from ..runs.task import Task, WorkUnit
from ..userfiles import read_bytes
from .cipher import CipherContext
from .logprob import read_item
from .options import PsychoBenchOptions, PsychoBenchResult
from .personas import Persona, persona_label, resolve_persona
from .variants import UserPrompt, fill, level_texts, system_prompt, template_body, template_files, with_cot

if TYPE_CHECKING:  # pandas is imported where a score table is read, not before a run's first request
    import pandas as pd
    from pydantic import BaseModel


def _with_persona(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """The run's persona (:func:`~.personas.persona_label`, from its stored config) on every score row, so
    :func:`llmpsych.load_runs` keeps two runs of one model that differ in persona apart."""
    return table.assign(persona=persona_label((record.config.options or {}).get("persona")))


class PsychoBenchTask(Task[PsychoBenchOptions]):
    """PsychoBench: scales x runs, with personas, cipher and logprob modes; analysis against human norms."""

    answers_counted = True
    name = "psychobench"
    not_settings = frozenset({"scale", "runs", "alpha", "test"})
    Options = PsychoBenchOptions
    Result = PsychoBenchResult
    score_tables = (
        ScoreTable(
            "scores.csv",
            group="scale",
            repeat="run",
            measure="subscale",
            factors=("persona",),
            prepare=_with_persona,
        ),
    )

    @classmethod
    def language(cls, options: BaseModel) -> str | None:
        """The distinct languages of the scales the run administers, comma-joined (official scales are
        English; files naming none are left out); None when its scale files cannot be read."""
        assert isinstance(options, PsychoBenchOptions)
        try:
            in_files = {s.name: s.language for f in options.scale_file for s in f.scales()}
        except LlmpsychError:
            return None
        chosen = options.scale
        if chosen is None:
            names = list(in_files) if in_files else ["official"]
        elif [c.lower() for c in chosen] == ["all"]:
            names = ["official", *in_files]
        else:
            names = list(chosen)
        languages = [in_files.get(n, OFFICIAL_LANGUAGE) for n in names]
        known = sorted({lang for lang in languages if lang})
        return ", ".join(known) or None

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        config.options.pop("scale_files", None)  # the old name of scale_file (a run stored before)
        if self.options.scale_file:  # the stored config keeps each file's text: the run is self-contained
            config.options["scale_file"] = [f.model_dump() for f in self.options.scale_file]
        self.scales  # noqa: B018 - read the data and check the scale names before a run directory exists
        for scale in self.scales:  # and that every prompt variant can be built for every scale
            self.user_prompt(scale)
            system_prompt(scale, self.options.system_prompt)

    # -- data ------------------------------------------------------------------------------------
    def data_files(self) -> list[Path]:
        files = [official_file("PsychoBench", self.config.data_dir)] if self._uses_official else []
        bfi = any(s.name.upper() == "BFI" and self.scale_source(s.name) is None for s in self.scales)
        files += template_files(self.options.template, bfi, self.config.data_dir)
        return files + [Path(f.path) for f in self.options.scale_file if Path(f.path).is_file()]

    @cached_property
    def file_scales(self) -> dict[str, tuple[Scale, ScaleFileRecord]]:
        """Every scale of the scale files, by name, with the file it came from (from the stored text)."""
        found: dict[str, tuple[Scale, ScaleFileRecord]] = {}
        for file in self.options.scale_file:
            record = file.record
            for scale in record.scales():
                twin = next((n for n in found if n.lower() == scale.name.lower()), None)
                if twin is not None:
                    raise ConfigError(
                        f"{record.path}: scale {scale.name!r} is also defined in {found[twin][1].path}",
                        "names identify scales in every table; rename one",
                    )
                if scale.unscored:
                    raise ConfigError(
                        f"{record.path}: scale {scale.name!r} cannot be scored: {scale.unscored_reason}"
                    )
                found[scale.name] = (scale, record)
        return found

    @property
    def _uses_official(self) -> bool:
        """Whether the official data file is needed: no scale file, or a name no scale file defines."""
        if not self.options.scale_file:
            return True
        own = {name.lower() for name in self.file_scales}
        return any(n.strip().lower() not in own for n in self.options.scale or [])

    @cached_property
    def official_scales(self) -> dict[str, Scale]:
        """Every scale in the official data file, by name (corrections applied); {} when none is asked."""
        return load_psychobench_scales(self.config.data_dir) if self._uses_official else {}

    @cached_property
    def all_scales(self) -> dict[str, Scale]:
        """Every scale this run can name: the official file's (if used) and the scale files', by name."""
        official = self.official_scales
        by_lower = {name.lower(): name for name in official}
        for name, (_, record) in self.file_scales.items():
            if name.lower() in by_lower:
                raise ConfigError(
                    f"{record.path}: scale {name!r} has the name of an official PsychoBench scale",
                    "names identify scales in every table; rename yours (e.g. " + f"{name}-own)",
                )
        return {**official, **{name: scale for name, (scale, _) in self.file_scales.items()}}

    @cached_property
    def scales(self) -> list[Scale]:
        """The scales this run administers: those named (in order; ``all`` = every scored official scale),
        then every scale of the scale files; with neither, every scored official scale."""
        available = self.all_scales
        own = [scale for scale, _ in self.file_scales.values()]
        scored_official = [s for s in self.official_scales.values() if not s.unscored]
        if self.options.scale is None:
            return own or scored_official
        by_lower = {name.lower(): scale for name, scale in available.items()}
        chosen: list[Scale] = []
        for name in self.options.scale:
            if name.strip().lower() == "all":
                chosen.extend(s for s in scored_official if s not in chosen)
                continue
            scale = by_lower.get(name.strip().lower())
            scored = ", ".join(n for n, s in available.items() if not s.unscored)
            if scale is None:
                raise ConfigError(f"unknown PsychoBench scale {name!r}", f"available: {scored}")
            if scale.unscored:
                raise ConfigError(f"scale {scale.name!r} cannot be scored: {scale.unscored_reason}")
            if scale not in chosen:
                chosen.append(scale)
        chosen.extend(s for s in own if s not in chosen)
        if not chosen:
            raise ConfigError("option 'scale' is empty", "leave it out to run every scored scale")
        return chosen

    def scale_source(self, name: str) -> ScaleFileRecord | None:
        """The scale file a scale came from (None: the official data file)."""
        found = self.file_scales.get(name)
        return found[1] if found else None

    def check_scale_files(self) -> None:
        """Refuse a resume whose scale file changed on disk since the run recorded it (one line)."""
        for file in self.options.scale_file:
            path = Path(file.path)
            if path.is_file():
                now = hashlib.sha256(read_bytes(path, "scale file", MAX_SCALE_FILE_BYTES)).hexdigest()
                if now != file.sha256:
                    raise ConfigError(
                        f"{path} changed since this run started (sha256 {file.sha256[:12]}… now {now[:12]}…)",
                        "restore the file to finish this run, or start a new run with the changed file",
                    )

    @property
    def persona(self) -> Persona:
        """The resolved persona."""
        return resolve_persona(self.options.persona)

    # -- units -----------------------------------------------------------------------------------
    def model_roles(self) -> set[str] | None:
        return set() if self.options.imported else None

    def units(self) -> list[WorkUnit]:
        if self.options.imported:
            raise ConfigError(
                f"this run was imported from {self.options.imported.get('file')!r}; there is no model to run",
                "rebuild its report with `llmpsych analyze RUN_DIR`",
            )
        self.check_scale_files()  # units() starts every run and resume; analysis never calls it
        return [
            WorkUnit(f"{scale.name}-run{run:03d}", {"scale": scale.name, "run": run})
            for scale in self.scales
            for run in range(1, self.options.runs + 1)
        ]

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        scale = self.all_scales[unit.payload["scale"]]
        run = int(unit.payload["run"])
        order = list(scale.item_indices)
        ctx.rng("item-order").shuffle(order)
        target = CipherContext(ctx, self.options.cipher_shift) if self.options.cipher else ctx
        system = self.persona.system_prompt(system_prompt(scale, self.options.system_prompt))
        head = {"scale": scale.name, "run": run, "mode": self.options.method, "order": order}
        if self.options.method == "logprob":
            return {**head, **await self._run_logprob(scale, target, order, system, run)}
        size = min(self.options.chunk_size or len(order), len(order))
        prompt = self.user_prompt(scale)
        per_item = 96 if self.options.cot else 8  # an explanation per statement before its score
        result = await administer(
            scale,
            target,
            order=order,
            params=GenerationParams(max_tokens=per_item * size + 128),  # a default: the user's wins
            reask_template=DEFAULT_REASK_WORDING,
            system_prompt=system or "",
            instructions=prompt.lead,
            closing=prompt.closing,
            chunk_size=self.options.chunk_size,
            max_reasks=self.options.max_reasks,
            sample=run,
        )
        stored = result.to_json()
        del stored["transcript"]  # the conversation is in the stored calls (transcripts.md renders them)
        return {**head, **stored}

    async def _run_logprob(
        self, scale: Scale, ctx: ChatContext, order: list[int], system_prompt: str | None, run: int
    ) -> dict[str, Any]:
        params = CallParams(
            max_tokens=16,
            logprobs=True,
            top_logprobs=self.options.top_logprobs,
            fixed={"logprobs", "top_logprobs"},  # the scores are read from them
        )
        head = [{"role": "system", "content": system_prompt}] if system_prompt else []
        prompt = self.user_prompt(scale)
        tail = f"\n\n{prompt.closing}" if prompt.closing else ""
        requests: list[ChatRequest] = [
            (
                [
                    *head,
                    {
                        "role": "user",
                        "content": f"{prompt.lead}\n\n{item_block(scale, [i])}".strip() + tail,
                    },
                ],
                params,
                "subject",
                run,
            )
            for i in order
        ]
        replies = await ctx.chat_all(requests)
        items = [
            read_item(i, reply.text, reply.logprobs, scale.response_min, scale.response_max)
            for i, reply in zip(order, replies, strict=True)
        ]
        return {
            "items": [item.to_json() for item in items],
            "answers": {str(item.item): item.argmax for item in items if item.argmax is not None},
            "unanswered": [item.item for item in items if item.argmax is None],
            "asks": len(requests),
        }

    def user_prompt(self, scale: Scale) -> UserPrompt:
        """The text around the statements: the scale's own instructions (``v1``) or a template, with CoT."""
        if self.options.template == "v1":
            prompt = UserPrompt(self._instructions(scale))
        else:
            official = self.scale_source(scale.name) is None
            texts, denotes = level_texts(scale, official, self.config.data_dir)
            prompt = fill(template_body(self.options.template, self.config.data_dir), scale, texts, denotes)
        return with_cot(prompt, self.options.cot_wording) if self.options.cot else prompt

    def _instructions(self, scale: Scale) -> str:
        """The scale's own instructions; ours for a scale file without any (official scales: as given)."""
        if scale.instructions is not None or self.scale_source(scale.name) is None:
            return scale.instructions or ""
        return default_instructions(scale)

    # -- analysis --------------------------------------------------------------------------------
    def administrations(self, record: RunRecord) -> list[Administration]:
        """Each finished (scale, run) unit as an administration: the raw answers (logprob mode: the most
        probable answer), and why the other items have none (an answer out of range, contradicting
        itself or numbered by position: ``invalid``; a refusal: ``refused``). An imported run's
        respondents are people (``psychobench import-answers``)."""
        from ..instruments.quality import stored_answer  # pandas: not before a run's first request

        source: Literal["model", "person"] = "person" if self.options.imported else "model"
        groups = {"persona": persona_label(self.options.persona), "template": str(self.options.template)}
        if self.options.imported:
            groups = {}  # people's answers: no persona or prompt template was involved
        found = []
        for unit, result in record.results(PsychoBenchResult):
            scale = self.all_scales.get(result.scale)
            if scale is None:
                raise DataError(
                    f"run store, unit {unit.unit_id}: unknown scale {result.scale[:40]!r}", STORED_HINT
                )
            answers = {
                index: value
                for index, value in (
                    stored_answer(scale, item, value, f"unit {unit.unit_id}")
                    for item, value in (result.answers or {}).items()
                    if value is not None
                )
            }
            status = unanswered_status(result.model_extra or {}, scale.item_indices, answers)
            found.append(Administration(ScaleItems.of(scale), result.run, answers, status, groups, source))
        return found

    def analyze(self, record: RunRecord) -> list[Path]:
        from .analysis import analyze_record

        return analyze_record(self, record)


def default_instructions(scale: Scale) -> str:
    """Our instructions for a scale file without its own: the range, any level labels, the answer form.

    Official scales always carry theirs (``prompt``); a native file may leave ``instructions`` out.
    """
    labels = "; ".join(f"{level} = {text}" for level, text in sorted(scale.level_labels.items()))
    return (
        f"Rate each statement below with one whole number from {scale.response_min} to "
        f"{scale.response_max}" + (f" ({labels})" if labels else "") + ". Reply with one line per "
        "statement in the form 'number: score' and nothing else."
    )

"""The PsychoBench task: every chosen scale administered ``runs`` times, each run with its own item order.

One work unit is one (scale, run). The wording comes from the official data file: the scale's
``inner_setting`` is the system prompt and its ``prompt`` the instructions before the numbered
statements; a persona (ours) goes before the system prompt, and the cipher wraps the whole exchange.
Temperature and other sampling parameters are the run config's (temperature 0 by default, as in the
paper). ``mode="logprob"`` asks one statement per request and reads the option probabilities instead.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError
from ..instruments.administration import administer, item_block
from ..instruments.official import load_psychobench_scales, official_file
from ..instruments.parsing import DEFAULT_REASK_WORDING
from ..instruments.scale import Scale
from ..models.types import GenerationParams
from ..runs.config import RunConfig
from ..runs.task import Task, WorkUnit
from .cipher import DEFAULT_SHIFT, CipherContext
from .logprob import read_item
from .personas import Persona, resolve_persona


class PsychoBenchOptions(BaseModel):
    """What to administer and how (``docs/psychobench.md``)."""

    model_config = ConfigDict(extra="forbid")

    scales: list[str] | None = Field(default=None, description="scale names; default: every scored scale")
    runs: int = Field(default=10, ge=1, le=1000, description="independent runs (item orders) per scale")
    chunk_size: int | None = Field(
        default=None, ge=1, description="statements per turn (None: whole scale; the official code used 30)"
    )
    max_reasks: int = Field(default=2, ge=0, le=10)
    persona: str = Field(default="default", description="default, psychopath, liar, ordinary, hero, or text")
    cipher: bool = Field(default=False, description="Caesar-cipher jailbreak (shift 3)")
    cipher_shift: int = Field(default=DEFAULT_SHIFT, ge=1, le=25)
    mode: Literal["generate", "logprob"] = "generate"
    top_logprobs: int = Field(default=20, ge=1, le=20)
    alpha: float = Field(default=0.01, gt=0, lt=1, description="significance level (the paper's 0.01)")
    method: Literal["paper", "welch", "student"] = "paper"

    @field_validator("persona")
    @classmethod
    def _known_persona(cls, value: str) -> str:
        resolve_persona(value)
        return value


class PsychoBenchTask(Task):
    """PsychoBench: scales x runs, with personas, cipher and logprob modes; analysis against human norms."""

    name = "psychobench"
    Options = PsychoBenchOptions

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self.scales  # noqa: B018 - read the data and check the scale names before a run directory exists

    # -- data ------------------------------------------------------------------------------------
    def data_files(self) -> list[Path]:
        return [official_file("PsychoBench", self.config.data_dir)]

    @cached_property
    def all_scales(self) -> dict[str, Scale]:
        """Every scale in the data file, by name (corrections applied)."""
        return load_psychobench_scales(self.config.data_dir)

    @cached_property
    def scales(self) -> list[Scale]:
        """The scales this run administers, in the order asked (default: file order, scored only)."""
        available = self.all_scales
        if self.options.scales is None:
            return [s for s in available.values() if not s.unscored]
        by_lower = {name.lower(): scale for name, scale in available.items()}
        chosen: list[Scale] = []
        for name in self.options.scales:
            scale = by_lower.get(name.strip().lower())
            scored = ", ".join(n for n, s in available.items() if not s.unscored)
            if scale is None:
                raise ConfigError(f"unknown PsychoBench scale {name!r}", f"available: {scored}")
            if scale.unscored:
                raise ConfigError(f"scale {scale.name!r} cannot be scored: {scale.unscored_reason}")
            if scale not in chosen:
                chosen.append(scale)
        if not chosen:
            raise ConfigError("option 'scales' is empty", "leave it out to run every scored scale")
        return chosen

    @property
    def persona(self) -> Persona:
        """The resolved persona."""
        return resolve_persona(self.options.persona)

    # -- units -----------------------------------------------------------------------------------
    def units(self) -> list[WorkUnit]:
        return [
            WorkUnit(f"{scale.name}-run{run:03d}", {"scale": scale.name, "run": run})
            for scale in self.scales
            for run in range(1, self.options.runs + 1)
        ]

    async def run_unit(self, unit: WorkUnit, ctx: Any) -> Any:
        scale = self.all_scales[unit.payload["scale"]]
        run = int(unit.payload["run"])
        order = list(scale.item_indices)
        ctx.rng("item-order").shuffle(order)
        target = CipherContext(ctx, self.options.cipher_shift) if self.options.cipher else ctx
        system_prompt = self.persona.system_prompt(scale.system_prompt)
        head = {"scale": scale.name, "run": run, "mode": self.options.mode, "order": order}
        if self.options.mode == "logprob":
            return {**head, **await self._run_logprob(scale, target, order, system_prompt, run)}
        size = self.options.chunk_size or len(order)
        result = await administer(
            scale,
            target,
            order=order,
            params=self._params(max_tokens=8 * min(size, len(order)) + 128),
            reask_template=DEFAULT_REASK_WORDING,
            system_prompt=system_prompt or "",
            instructions=scale.instructions or "",
            chunk_size=self.options.chunk_size,
            max_reasks=self.options.max_reasks,
            sample=run,
        )
        return {**head, **result.to_json()}

    async def _run_logprob(
        self, scale: Scale, ctx: Any, order: list[int], system_prompt: str | None, run: int
    ) -> dict[str, Any]:
        params = self._params(max_tokens=16, logprobs=True, top_logprobs=self.options.top_logprobs)
        head = [{"role": "system", "content": system_prompt}] if system_prompt else []
        requests = [
            (
                [
                    *head,
                    {
                        "role": "user",
                        "content": f"{scale.instructions or ''}\n\n{item_block(scale, [i])}".strip(),
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
            "texts": [reply.text for reply in replies],
        }

    def _params(self, *, max_tokens: int, **extra: Any) -> GenerationParams:
        base = self.config.params.model_dump()
        if base.get("max_tokens") is None:
            base["max_tokens"] = max_tokens
        return GenerationParams(**{**base, **extra})

    # -- analysis --------------------------------------------------------------------------------
    def analyze(self, run_dir: Path) -> list[Path]:
        from .analysis import analyze_run_dir

        return analyze_run_dir(self, run_dir)

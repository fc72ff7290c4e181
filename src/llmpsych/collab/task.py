"""The ``mas`` task: one collaboration system on one benchmark, one work unit per item.

``llmpsych run --task mas -O system=camel -O dataset=humaneval50 -O fault=autoinject ...`` or, shorter,
``llmpsych mas run --system camel --task humaneval50 --fault autoinject``. Units run side by side;
each item's conversation is sequential. HumanEval code runs in the sandbox pool.
"""

from __future__ import annotations

import sys
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ..errors import ConfigError
from ..models.chat_context import ChatContext
from ..models.types import GenerationParams
from ..runs.optionfields import NODE_PATH, split_commas
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable
from ..runs.task import Task, WorkUnit
from ..sandbox import INSTALL_HINT, Limits, Sandbox, SandboxUnavailable, available, open_sandbox
from .analysis import MasResult
from .bleurt import BleurtScorer, check_checkpoint, choose_metric
from .datasets import KIND, Item, load_items, task_files
from .defences import Challenger, Inspector
from .inject import AutoInject
from .runtime import MessageHook, ProfileHook, ReceiveCheck, Runtime
from .scoring import (
    check_humaneval,
    ciar_correct,
    commonmt_score,
    faireval_correct,
    faireval_label,
    official_digests,
    reference_digest,
    translation_of,
)
from .systems import SYSTEMS, system_class
from .systems.base import task_text


class MasOptions(BaseModel):
    """One system × task × condition."""

    model_config = ConfigDict(extra="forbid")

    system: str = Field(default="camel", description="metagpt, selfcollab, camel, spp, mad or agentverse")
    dataset: Literal["humaneval", "humaneval50", "ciar", "commonmt", "faireval"] = Field(
        default="humaneval50", description="the task the system solves"
    )
    items: int | None = Field(default=None, ge=1, description="only the first N items")
    item_ids: list[str] = Field(default_factory=list, description="only these items")
    fault: Literal["none", "autotransform", "autoinject"] = Field(
        default="none", description="how the faulty agent is made faulty"
    )
    faulty_agent: str | None = Field(default=None, description="the faulty agent (default: the system's)")
    p_m: float = Field(
        default=1.0, ge=0.0, le=1.0, description="AutoInject: share of the faulty agent's messages corrupted"
    )
    p_e: float = Field(
        default=0.2, ge=0.0, le=1.0, description="AutoInject: share of lines/sentences corrupted"
    )
    error_type: Literal["semantic", "syntactic"] = Field(
        default="semantic", description="AutoInject: the kind of error injected"
    )
    distraction: bool = Field(
        default=False, description="AutoInject: mark each corrupted line as corrected (the Fig. 7.6b probe)"
    )
    unit_mode: Literal["exact", "bernoulli"] = Field(
        default="exact",
        description="AutoInject: exact (round(p_e x lines)) or bernoulli (a coin flip per line, the "
        "reference code)",
    )
    defence: Annotated[list[Literal["challenger", "inspector"]], BeforeValidator(split_commas)] = Field(
        default_factory=list, description="defences: challenger, inspector (both: challenger,inspector)"
    )
    challenge_policy: Literal["self_correct", "request_revision"] = Field(
        default="self_correct", description="after an 'unsafe' verdict"
    )
    max_rounds: int | None = Field(default=None, ge=1, le=20, description="round limit per item")
    max_messages: int | None = Field(default=None, ge=2, le=200, description="message limit per item")
    max_tokens: int | None = Field(default=None, ge=16, description="maximum tokens per answer")
    sandbox_timeout: float = Field(
        default=3.0,
        gt=0,
        le=60,
        description="HumanEval: wall-time limit of a program in the sandbox, seconds",
    )
    sandbox_workers: int | None = Field(
        default=None, ge=1, le=64, description="HumanEval: warm sandbox workers (default two per core)"
    )
    extraction: Literal["paper", "strict"] = Field(
        default="paper",
        description="HumanEval: paper runs a completion as it is when it compiles, else its last fenced "
        "block; strict always as it is (OpenAI's harness)",
    )
    unsafe_local_exec: bool = Field(
        default=False,
        description="run model-written code WITHOUT isolation when bubblewrap is missing (recorded in the "
        "manifest)",
    )
    metric: Literal["auto", "chrf", "bleurt"] = Field(
        default="auto", description="CommonMT: BLEURT when bleurt_checkpoint is set, else the chrF substitute"
    )
    bleurt_checkpoint: Annotated[str | None, NODE_PATH] = Field(
        default=None, description="a local bleurt-pytorch checkpoint folder"
    )

    @model_validator(mode="after")
    def _known_system(self) -> MasOptions:
        if self.system not in SYSTEMS:
            raise ValueError(f"unknown system {self.system!r}; choose one of {', '.join(SYSTEMS)}")
        return self


class MasTask(Task[MasOptions]):
    """MAS-Resilience: how a collaboration system performs with (and without) a faulty agent."""

    name = "mas"
    not_settings = frozenset({"items", "item_ids", "sandbox_workers"})
    Options = MasOptions
    Result = MasResult
    score_tables = (ScoreTable("results.csv", group=None, repeat=None, item="item"),)
    #: The runtime each item runs in (llmpsych's runner behind a fault endpoint uses its own,
    #: :mod:`llmpsych.faults.inhouse`).
    runtime_class: ClassVar[type[Runtime]] = Runtime

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        o = self.options
        self.kind = KIND[o.dataset]
        self.system_cls = system_class(o.system)
        if self.kind not in self.system_cls.kinds:
            raise ConfigError(
                f"system {o.system} does not run {o.dataset} ({self.kind})",
                f"{o.system} supports: {', '.join(sorted(self.system_cls.kinds))}",
            )
        if not self.system_cls.takes_faults and (o.fault != "none" or o.defence):
            raise ConfigError(f"system {o.system} sends no messages: faults and defences do not apply")
        if o.distraction and o.fault != "autoinject":
            raise ConfigError("distraction marks AutoInject's edits: it needs fault=autoinject")
        self.faulty = o.faulty_agent or self.system_cls.default_faulty
        names = [a.name for a in self.system_cls(self.kind).agents("")]
        if self.faulty not in names:
            raise ConfigError(f"{o.system} has no agent {self.faulty!r}", f"agents: {', '.join(names)}")
        self.metric = choose_metric(self.kind, o.metric, o.bleurt_checkpoint)
        self.bleurt: BleurtScorer | None = None
        self.limits = Limits(timeout_s=o.sandbox_timeout, cpu_s=int(o.sandbox_timeout) + 1)
        self.pool: Sandbox | None = None
        self.official: frozenset[str] = frozenset()

    def sandbox(self) -> Sandbox:
        """The sandbox for model-written code, started (and checked) on first use.

        Without bubblewrap the run stops with one line saying how to install it, unless
        ``unsafe_local_exec`` is set (a loud warning; the option is in the run's manifest).
        """
        if self.pool is None:
            o = self.options
            if not o.unsafe_local_exec and not available():
                raise ConfigError("HumanEval runs model-written code: it needs bubblewrap", INSTALL_HINT)
            pool = open_sandbox(o.sandbox_workers, self.limits, unsafe=o.unsafe_local_exec)
            try:
                pool.probe()
            except SandboxUnavailable as exc:
                pool.close()
                raise ConfigError(f"the sandbox does not start: {exc}", INSTALL_HINT) from None
            self.pool = pool
            self.official = official_digests(self.config.data_dir)
            if any(reference_digest(i.reference) not in self.official for i in self.items):
                print(
                    "note: the HumanEval file does not match the pinned release: its tests run in a sandbox "
                    "of their own, not in llmpsych's process",
                    file=sys.stderr,
                )
        return self.pool

    @cached_property
    def items(self) -> list[Item]:
        """The selected items, in the official order."""
        items = load_items(self.options.dataset, self.config.data_dir)
        if self.options.item_ids:
            wanted = set(self.options.item_ids)
            items = [i for i in items if i.item_id in wanted]
        if self.options.items:
            items = items[: self.options.items]
        return items

    def data_files(self) -> list[Path]:
        return task_files(self.options.dataset, self.config.data_dir)

    def units(self) -> list[WorkUnit]:
        if self.metric == "bleurt" and self.bleurt is None:  # checked when a run starts, not on analysis
            self.bleurt = BleurtScorer(check_checkpoint(self.options.bleurt_checkpoint or ""))
        if self.kind == "code":  # likewise: no model call before the sandbox is known to work
            self.sandbox()
        return [WorkUnit(item.item_id, {"item_id": item.item_id}) for item in self.items]

    def _hooks(self) -> tuple[list[ProfileHook], list[MessageHook], list[ReceiveCheck]]:
        o = self.options
        profile: list[ProfileHook] = []
        message: list[MessageHook] = []
        receive: list[ReceiveCheck] = []
        if o.fault == "autotransform":
            from .transform import AutoTransform

            profile.append(AutoTransform(self.faulty))
        if o.fault == "autoinject":
            message.append(AutoInject(self.faulty, o.p_m, o.p_e, o.error_type, o.unit_mode, o.distraction))
        if "inspector" in o.defence:
            message.append(Inspector())
        if "challenger" in o.defence:
            challenger = Challenger(o.challenge_policy)
            profile.append(challenger)
            receive.append(challenger)
        return profile, message, receive

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        item = next(i for i in self.items if i.item_id == unit.payload["item_id"])
        system = self.system_cls(self.kind, self.options.max_rounds)
        task = task_text(self.kind, item.question)
        # the task's defaults for every call (the run's and the role's parameters win: runs/params.py)
        params = (
            GenerationParams(max_tokens=self.options.max_tokens)
            if self.options.max_tokens
            else GenerationParams()
        )
        profile, message, receive = self._hooks()
        rt = self.runtime_class(
            ctx,
            system.route(),
            system.agents(task),
            params,
            profile,
            message,
            receive,
            max_messages=self.options.max_messages or system.max_messages,
            kind=self.kind,
            task_description=task,
        )
        rt.sandbox = self.sandbox() if self.kind == "code" else None
        await rt.setup()
        result = await system.collaborate(rt, task)
        return {"item_id": item.item_id, "result": result, **await self.score(item, result), **rt.to_json()}

    async def score(self, item: Item, result: str) -> dict[str, Any]:
        """Score a final result (0-100 scale for the item)."""
        if self.kind == "code":
            outcome = await check_humaneval(
                item.reference,
                result,
                self.sandbox(),
                extraction=self.options.extraction,
                official=self.official,
            )
            return {
                "score": 100.0 * outcome.passed,
                "passed": outcome.passed,
                "passed_reference": outcome.extra["reference_passed"],
                "execution": {
                    "status": outcome.status,
                    "detail": outcome.detail[-1500:],
                    "judge": outcome.extra["judge"],
                    "stderr": outcome.stderr[-1500:],
                    "isolation": outcome.isolation,
                    "seconds": outcome.seconds,
                },
            }
        if self.kind == "math":
            ok = ciar_correct(result, item.reference["answers"])
            return {"score": 100.0 * ok, "passed": ok}
        if self.kind == "texteval":
            ok = faireval_correct(result, item.reference["label"])
            return {"score": 100.0 * ok, "passed": ok, "verdict": faireval_label(result)}
        scores: dict[str, Any] = {"metric": self.metric, **commonmt_score(result, item.reference)}
        if self.bleurt is not None:
            hypothesis = translation_of(result)
            good, bad = await self.bleurt.ascore(
                [hypothesis, hypothesis], [item.reference["correct"], item.reference["wrong"]]
            )
            scores |= {
                "bleurt": 100 * good,
                "bleurt_wrong": 100 * bad,
                "closer_to_correct": float(good > bad),
            }
        return {"score": scores[self.metric], "passed": None, **scores}

    @property
    def metric_label(self) -> str:
        """How reports name the metric of this run."""
        from .analysis import METRIC_LABEL

        if self.metric == "bleurt":
            name = Path(self.options.bleurt_checkpoint or "").name
            return f"BLEURT (×100, local checkpoint `{name}`; the paper used BLEURT-20)"
        return METRIC_LABEL[self.kind]

    def analyze(self, record: RunRecord) -> list[Path]:
        from .analysis import analyze_record

        return analyze_record(record, self)

"""A fault plan: which agents an endpoint recognises, which faults it applies to them, which defences it
places on their messages. A plan is data (TOML or JSON), validated here into one typed value; nothing in
it is ever executed (a ``system`` pattern is a regular expression, searched with a length cap).

How a request is matched to an agent (the first rule that fits, in the plan's order):

* ``model``: the model name the framework sends in the request body equals it;
* ``header``: the request's ``X-Llmpsych-Agent`` header equals it;
* ``system``: the regular expression is found in the request's first system message (its first
  :data:`SYSTEM_SEARCHED` characters);
* ``calls``: the request is one of these calls, numbered 1, 2, ... in the order the endpoint received them.

A request no rule fits is forwarded unchanged and recorded as agent :data:`UNMATCHED`.

A program that knows llmpsych may say more about a request in headers (llmpsych's own runner of its six
systems, :mod:`llmpsych.faults.inhouse`, does; a framework that sends none of them is served as before):

* :data:`HOLD_HEADER`: answer with the model's own reply and hold the reply-side faults (AutoInject, the
  Inspector) until the program says the reply is sent as a message, with :data:`DELIVER_HEADER` (the
  held call's number) on the same request again: that answer is the delivered text, and no model is
  asked for the reply a second time. A reply never delivered is never changed;
* :data:`UNIT_HEADER` and :data:`MESSAGE_HEADER`: the work unit and the index of the message; a plan with
  ``seed_from = "message"`` draws AutoInject from them, as ``mas run`` does, and has one Inspector (one
  memory) per unit, shown the task of :data:`TASK_HEADER`;
* :data:`PROFILE_HEADER`: the agent's profile template and its values (AutoTransform rewrites the
  template, as ``mas run`` does).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from ..userfiles import parse_json, parse_toml, read_text

#: The agent name of a request no rule of the plan recognises.
UNMATCHED = "(unmatched)"
#: The header a framework may set to name the agent (``header`` rules).
AGENT_HEADER = "x-llmpsych-agent"
#: The work unit a request belongs to (``mas run``'s unit id: the task item), 1 to 200 characters.
UNIT_HEADER = "x-llmpsych-unit"
#: The index of the message a delivered reply becomes among the unit's messages (0, 1, ...).
MESSAGE_HEADER = "x-llmpsych-message"
#: ``1``: hold the reply-side faults until the reply is delivered (the reply says its call number in
#: ``llmpsych.call``).
HOLD_HEADER = "x-llmpsych-hold"
#: The number of a held call whose reply is now sent as a message (on a request equal to that call's).
DELIVER_HEADER = "x-llmpsych-deliver"
#: The agent's profile as a template and its values: base64 of the JSON ``{"template": ..., "values":
#: {...}}`` (used only when the filled-in template is the request's system message).
PROFILE_HEADER = "x-llmpsych-profile"
#: The task the team is asked: base64 of its UTF-8 text (the Inspector's task, as ``mas run`` gives it).
TASK_HEADER = "x-llmpsych-task"
#: The characters of a system message a ``system`` pattern is searched in.
SYSTEM_SEARCHED = 20_000
#: The longest ``system`` pattern accepted.
MAX_PATTERN = 300
#: The largest plan file read.
MAX_PLAN_BYTES = 1 << 20

TRANSPORT = ("timeout", "malformed", "refusal")
FaultKind = Literal["autoinject", "autotransform", "timeout", "malformed", "refusal"]

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


def backtracks(pattern: str) -> bool:
    """Whether a (valid) pattern repeats a group that holds a repetition or alternatives: the shape of
    catastrophic backtracking (``(a+)+$`` takes seconds on 30 characters), refused in a plan since the
    endpoint searches every system prompt with it. Read from Python's own parse of the pattern."""
    parser: Any = importlib.import_module("re._parser")
    repeats = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}

    def parts(value: Any) -> list[Any]:
        """The sub-patterns inside an operand (a SubPattern, or a tuple or list holding some)."""
        if isinstance(value, parser.SubPattern):
            return [value]
        if isinstance(value, tuple | list):
            return [p for v in value for p in parts(v)]
        return []

    def holds(sub: Any, wanted: set[str]) -> bool:
        for op, operand in sub:
            name = str(op)
            if name == "BRANCH" and "BRANCH" in wanted and len(operand[1]) > 1:
                return True
            if name in repeats and name in wanted and operand[1] > 1:
                return True
            if any(holds(p, wanted) for p in parts(operand)):
                return True
        return False

    def walk(sub: Any) -> bool:
        for op, operand in sub:
            if str(op) in repeats and operand[1] > 1 and holds(operand[2], repeats | {"BRANCH"}):
                return True
            if any(walk(p) for p in parts(operand)):
                return True
        return False

    return walk(parser.parse(pattern))


class AgentRule(BaseModel):
    """One agent and the rule that recognises its requests (exactly one of the four)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME)
    model: str | None = Field(default=None, min_length=1, max_length=200)
    header: str | None = Field(default=None, min_length=1, max_length=200)
    system: str | None = Field(default=None, min_length=1, max_length=MAX_PATTERN)
    calls: list[int] | None = Field(default=None, min_length=1, max_length=10_000)

    @field_validator("system")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc})") from None
            if backtracks(pattern):
                raise ValueError(
                    "a repeated group that itself repeats or has alternatives ((a+)+, (a|b)*) can take "
                    "exponential time on a long prompt; write the pattern without it"
                )
        return pattern

    @field_validator("calls")
    @classmethod
    def _positive(cls, calls: list[int] | None) -> list[int] | None:
        if calls is not None and any(c < 1 for c in calls):
            raise ValueError("call numbers start at 1")
        return calls

    @model_validator(mode="after")
    def _one_rule(self) -> AgentRule:
        given = [k for k in ("model", "header", "system", "calls") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of model, header, system, calls (given: {', '.join(given) or 'none'})"
            )
        return self

    @property
    def rule(self) -> str:
        """How this agent is recognised, in words (recorded with each request)."""
        for key in ("model", "header", "system", "calls"):
            value = getattr(self, key)
            if value is not None:
                return f"{key}={value!r}"
        return ""  # unreachable: validated


class Fault(BaseModel):
    """A fault placed on one agent.

    * ``autoinject``: AutoInject (:mod:`llmpsych.collab.inject`) corrupts the agent's reply: a turn is drawn
      with probability ``rate`` (P_m) and ``share`` (P_e) of its units (lines of code, sentences) are
      rewritten with errors of ``error_type``; ``content`` says what the text is (the injector's wording);
    * ``autotransform``: AutoTransform (:mod:`llmpsych.collab.transform`) rewrites the agent's system prompt
      once; every turn of the agent is forwarded with the rewrite;
    * ``timeout``: the endpoint answers HTTP 504 after ``delay_s`` seconds; ``malformed``: HTTP 200 with a
      truncated JSON body; ``refusal``: the reply becomes a refusal (tool calls dropped).

    ``turns`` limits the fault to these turns of the agent (1 = its first request); ``rate`` is the chance
    per turn (drawn from the plan's seed, the agent and the turn; AutoInject's, under ``seed_from =
    "message"``, from the unit and message index a request names, as ``mas run`` draws it).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field(pattern=_NAME)
    kind: FaultKind
    rate: float = Field(default=1.0, ge=0.0, le=1.0)
    turns: list[int] | None = Field(default=None, min_length=1, max_length=10_000)
    share: float = Field(default=0.2, ge=0.0, le=1.0)
    error_type: Literal["semantic", "syntactic"] = "semantic"
    content: Literal["code", "math", "translation", "texteval"] = "code"
    unit_mode: Literal["exact", "bernoulli"] = "exact"
    delay_s: float = Field(default=0.0, ge=0.0, le=600.0)

    @model_validator(mode="after")
    def _fits_kind(self) -> Fault:
        if self.kind == "autotransform" and (self.rate != 1.0 or self.turns is not None):
            raise ValueError("autotransform rewrites the agent's profile for every turn: no rate or turns")
        if self.kind != "timeout" and self.delay_s:
            raise ValueError("delay_s applies to timeout faults only")
        return self


class Defence(BaseModel):
    """A defence on one agent's messages: ``inspector`` reviews (and may rewrite) each reply of the agent
    before the framework receives it; ``challenger`` has the agent first judge the last message it
    receives (its request's last user message) and, when judged unsafe, forwards it with the warning
    (:mod:`llmpsych.collab.defences`, policy ``self_correct``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field(pattern=_NAME)
    kind: Literal["challenger", "inspector"]


class FaultPlan(BaseModel):
    """The whole plan (see the module docstring and ``docs/faults-anywhere.md``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = Field(default=0, ge=0, lt=2**63)
    seed_from: Literal["turn", "message"] = Field(
        default="turn",
        description="what AutoInject's draws come from: the agent's turn (any framework), or the unit and "
        "message index a request names in its x-llmpsych-unit and x-llmpsych-message headers (the draws of "
        "mas run on the same seed; a request without them falls back to its turn), with one Inspector per "
        "unit",
    )
    task: str = Field(
        default="", max_length=20_000, description="what the team is asked (the Inspector sees it)"
    )
    agents: list[AgentRule] = Field(default_factory=list, max_length=64)
    faults: list[Fault] = Field(default_factory=list, max_length=64)
    defences: list[Defence] = Field(default_factory=list, max_length=64)

    @model_validator(mode="after")
    def _consistent(self) -> FaultPlan:
        names = [a.name for a in self.agents]
        if len(set(names)) != len(names):
            raise ValueError("agent names must differ")
        for where, items in (("faults", self.faults), ("defences", self.defences)):
            for item in items:
                if item.agent not in names:
                    raise ValueError(f"{where}: agent {item.agent!r} is not one of the plan's agents")
        kinds = [(f.agent, f.kind) for f in self.faults]
        if len(set(kinds)) != len(kinds):
            raise ValueError("faults: at most one fault of each kind per agent")
        placed = [(d.agent, d.kind) for d in self.defences]
        if len(set(placed)) != len(placed):
            raise ValueError("defences: at most one defence of each kind per agent")
        return self

    def faults_of(self, agent: str) -> list[Fault]:
        """The faults placed on ``agent``, in the plan's order."""
        return [f for f in self.faults if f.agent == agent]

    def defences_of(self, agent: str) -> list[Defence]:
        """The defences placed on ``agent``."""
        return [d for d in self.defences if d.agent == agent]


def parse_plan(data: object, origin: str) -> FaultPlan:
    """A plan from parsed data; any problem is one :class:`ConfigError` line naming ``origin`` and the
    field."""
    try:
        return FaultPlan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"fault plan {origin}: {where}: {message}", "see docs/faults-anywhere.md") from None


def load_plan(path: Path | str) -> FaultPlan:
    """Read a plan file (``.json``: JSON, anything else: TOML), bounded to :data:`MAX_PLAN_BYTES`."""
    path = Path(path)
    text = read_text(path, "fault plan", MAX_PLAN_BYTES, error=ConfigError)
    if path.suffix.lower() == ".json":
        data = parse_json(text, str(path), error=ConfigError)
    else:
        data = parse_toml(text, f"fault plan {path}", error=ConfigError)
    return parse_plan(data, str(path))

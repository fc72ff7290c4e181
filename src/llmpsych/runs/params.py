"""The one merge of a call's sampling parameters, applied by the run context to every model call.

A request's parameters come from four places. Lowest first (a later one wins, field by field):

1. **the task's defaults for the call**: the fields set on the
   :class:`~llmpsych.models.types.GenerationParams` a task passes to ``ctx.chat`` (``max_tokens`` sized
   to a scale, 512 for a chunk of items);
2. **the run's parameters**: the config's ``params`` (``--temperature``, ``llmpsych run --max-tokens``,
   ``params = {seed = 1, top_p = 0.9}``), every field set there: not None; ``temperature`` always (its
   default is 0); ``logprobs`` when true;
3. **the role's parameters**: ``[models.ROLE] params``, for that role's calls only;
4. **the task's fixed values for the call**: the fields a :class:`~llmpsych.models.types.CallParams`
   marks ``fixed``, which the measurement cannot do without (log-prob scoring needs ``logprobs`` and
   ``top_logprobs``; a judge's verdict is read at temperature 0; the quick-start game is played at the
   paper's temperature).

Why this order: a task's default is a guess made for a user who said nothing, so anything the user said
beats it, and a user's ``--temperature`` reaches every ordinary call of every task; a role's parameters
are the user's more specific word for one model, so they beat the run's; a fixed value is part of the
method, and a call made without it would not measure what the task reports, so it beats the user. That
is the one case where a request differs from what the user asked for, and it is never silent:
:func:`params_report` finds every such call in the run store (comparing each stored request body with
the run's and role's parameters), the run prints one line per overridden field when it ends, and
:func:`llmpsych.load_runs` shows it per run (``params_fixed_by_task``) beside what every call sent
(``params_sent``). The run seed (``seed`` of the config, ``--seed``) is not a request parameter: it
drives llmpsych's own shuffles and draws; a server's sampling seed is ``params.seed``.

Tasks never read ``config.params`` themselves: they say what a call would like and what it needs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..models.types import CallParams, GenerationParams

if TYPE_CHECKING:
    from .record import RunRecord

#: The request fields a run's parameters can set, in the order they are shown.
PARAM_FIELDS: tuple[str, ...] = tuple(GenerationParams.model_fields)


def user_params(params: GenerationParams) -> dict[str, Any]:
    """The fields of a run's parameters that the user's setting decides (see the module docstring):
    every field not None, but ``logprobs`` only when true (false is every request's default)."""
    return {
        k: v for k, v in params.model_dump().items() if v is not None and not (k == "logprobs" and v is False)
    }


#: Merges made, by (run params, role params, the call's fields): one object per distinct call, so a run
#: pays the merge (about 20 us, a pydantic validation and dump) once per kind of call, not per call, and
#: the client's per-object body cache holds. Bounded; the run and role objects are kept with each entry.
_MERGED: dict[tuple[Any, ...], tuple[GenerationParams, Mapping[str, Any] | None, GenerationParams]] = {}
_MERGED_MAX = 4096


def merge_params(
    call: GenerationParams | None, run: GenerationParams, role: Mapping[str, Any] | None = None
) -> GenerationParams:
    """A call's parameters: the task's defaults < the run's < the role's < the task's fixed values.

    ``run`` and ``role`` are read as unchanging (a run's config and a client's role parameters are)."""
    fields = None if call is None else (frozenset(call.model_fields_set), tuple(call.__dict__.values()))
    key: tuple[Any, ...] | None = None
    hit = None
    try:
        hit = _MERGED.get((id(run), id(role), type(call), fields))
        key = (id(run), id(role), type(call), fields)
    except TypeError:  # an unhashable field (a list of stop strings): merged every time
        pass
    if hit is not None and hit[0] is run and hit[1] is role:
        return hit[2]
    task = {} if call is None else {k: getattr(call, k) for k in call.model_fields_set if k != "fixed"}
    fixed = {k: task.pop(k) for k in call.fixed} if isinstance(call, CallParams) else {}
    defaults = {k: v for k, v in task.items() if v is not None}
    merged = GenerationParams.model_validate({**defaults, **user_params(run), **(role or {}), **fixed})
    if key is not None:
        if len(_MERGED) >= _MERGED_MAX:
            _MERGED.clear()
        _MERGED[key] = (run, role, merged)
    return merged


@dataclass(frozen=True)
class Override:
    """A field of the user's parameters that a task's fixed value replaced in some calls of a role."""

    role: str
    name: str
    asked: Any
    sent: Any
    calls: int
    of: int

    def line(self) -> str:
        """``temperature 1 instead of 0.3 in 8 of 20 calls of role subject``."""
        return (
            f"{self.name} {_show(self.sent)} instead of {_show(self.asked)} in {self.calls} of {self.of} "
            f"calls of role {self.role}"
        )


@dataclass
class ParamsReport:
    """What a run's model calls sent, read from the stored request bodies."""

    calls: int = 0
    #: field -> Counter of the JSON text of each value sent (calls without the field are not counted)
    sent: dict[str, Counter[str]] = field(default_factory=dict)
    overrides: list[Override] = field(default_factory=list)

    def sent_text(self) -> str:
        """``max_tokens=77; temperature=0.3 (40 calls), 1 (8 calls); seed=5 (40 of 48 calls)``."""
        parts = []
        for name in PARAM_FIELDS:
            values = self.sent.get(name)
            if not values:
                continue
            counted = sum(values.values())
            if len(values) == 1:
                (value,) = values
                of = f" ({counted} of {self.calls} calls)" if counted < self.calls else ""
                parts.append(f"{name}={value}{of}")
            else:
                ranked = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))  # ties: by value, not arrival
                shown = ", ".join(f"{v} ({n} calls)" for v, n in ranked)
                parts.append(f"{name}={shown}")
        return "; ".join(parts)

    def overrides_text(self) -> str:
        """Every override, ``; ``-separated (empty: every call sent what the user's parameters say)."""
        return "; ".join(o.line() for o in self.overrides)


def asked_fields(run: GenerationParams, role: Mapping[str, Any]) -> dict[str, Any]:
    """What the user's run and role parameters put into a request body (before any fixed value)."""
    return GenerationParams.model_validate({**user_params(run), **role}).request_fields()


def params_report(record: RunRecord) -> ParamsReport:
    """What the model calls of a run sent, and where a task's fixed value replaced the user's.

    One pass over the stored request bodies (the calls of non-model answers, a person's or a Python
    seat's, are skipped); about 0.3 s per 50,000 calls."""
    report = ParamsReport()
    roles = record.config.roles()
    asked = {role: asked_fields(record.config.params, model.params) for role, model in roles.items()}
    differs: Counter[tuple[str, str, str, str]] = Counter()
    per_role: Counter[str] = Counter()
    for role, body in record.calls.requests():
        if role not in roles or not isinstance(body, dict) or "messages" not in body:
            continue
        report.calls += 1
        per_role[role] += 1
        for name in PARAM_FIELDS:
            if name in body:
                report.sent.setdefault(name, Counter())[_json(body[name])] += 1
        for name, value in asked[role].items():
            if body.get(name) != value:
                differs[(role, name, _json(value), _json(body.get(name)))] += 1
    report.overrides = [
        Override(role, name, json.loads(asked_value), json.loads(sent), n, per_role[role])
        for (role, name, asked_value, sent), n in sorted(differs.items())
    ]
    return report


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _show(value: Any) -> str:
    if value is None:
        return "none"
    return f"{value:g}" if isinstance(value, float) else _json(value)


__all__ = ["PARAM_FIELDS", "Override", "ParamsReport", "merge_params", "params_report", "user_params"]

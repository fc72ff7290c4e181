"""The stored result of one ``gamabench`` unit: one whole game, typed.

:meth:`RunRecord.results(GamaBenchResult) <llmpsych.runs.record.RunRecord.results>` parses each finished
unit's result once. Results written by older llmpsych versions still parse: fields added since have
defaults, and fields since dropped (the per-seat ``transcripts`` copy of every conversation, now rendered
from the stored calls) are kept as extra fields.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import DataError
from ..runs.provenance import UNKNOWN, call_provenance
from .rounds import AnswerRecord, GameRound

RoundT = TypeVar("RoundT", bound=GameRound)

if TYPE_CHECKING:
    from ..runs.calls import StoredCall

#: Seat kinds a person answers for.
PERSON_KINDS = frozenset({"human", "user", "web"})


@dataclass(frozen=True)
class SeatInfo:
    """Who sat in one seat: its spec (``llm``, ``llm:rival``, ``human:Ann``, ``fixed:50`` ...), its kind
    (the spec's first word) and, for a model seat, the model spec of its role."""

    player: int
    spec: str
    kind: str
    model: str | None = None

    @property
    def person(self) -> bool:
        """Whether a person answers for this seat (``human`` at the terminal, ``web`` in a browser)."""
        return self.kind in PERSON_KINDS

    @property
    def who(self) -> str:
        """``model <spec>`` for a model seat, else the seat spec."""
        return f"model {self.model or '?'}" if self.kind in ("llm", "model") else self.spec


class GamaBenchResult(BaseModel):
    """One game played: the game and its parameters, the seats, and one record per round holding every
    decision (player, seat, action, asks, errors, fallback) and the round's outcome."""

    model_config = ConfigDict(extra="allow")

    game: str
    run: int
    players: int
    rounds_planned: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    prompts: str = "?"
    seats: list[str] = Field(default_factory=list)
    fallbacks: int = 0
    reasks: dict[str, Any] = Field(default_factory=dict)
    deviations: list[str] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    rounds: list[dict[str, Any]] = Field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The result as the plain mapping the run store keeps."""
        return self.model_dump()

    def rounds_as(self, model: type[RoundT]) -> list[RoundT]:
        """The stored rounds parsed as the game's ``Round`` (``model``), the boundary between the stored
        mapping and the typed record: a round that does not fit is a :class:`DataError` naming the game,
        the run, the round and the field."""
        out = []
        for k, record in enumerate(self.rounds, 1):
            try:
                out.append(model.model_validate(record))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"] if p not in _UNION_TAGS) or "round"
                raise DataError(
                    f"{self.game} run {self.run}: stored round {k} does not fit {model.__name__} "
                    f"({where}: {first['msg']})",
                    "was run.sqlite edited, or written by another llmpsych version?",
                ) from None
        return out

    def seat_info(self, role_specs: Mapping[str, str]) -> list[SeatInfo]:
        """Each player's seat, with the model of a model seat's role (from the run config's roles)."""
        out = []
        for player in range(self.players):
            spec = str(self.seats[player]) if player < len(self.seats) else "?"
            kind, _, role = spec.partition(":")
            kind = kind.strip().lower()
            model = role_specs.get(role or "subject", "?") if kind in ("llm", "model") else None
            out.append(SeatInfo(player, spec, kind, model))
        return out

    def answers(self) -> list[Asked]:
        """Every decision of the game, typed: its round, the round field holding it (``decisions``,
        ``proposal``, ``votes``, ``shot`` ...) and the answer record, parsed from the stored round (any
        round field holding a list of per-player answer records, or one such record)."""
        out = []
        for record in self.rounds:
            round_no = GameRound.model_validate(record).round
            for key, item in _items(record):
                out.append(Asked(round_no, key, AnswerRecord.model_validate(item)))
        return out

    def decisions(self) -> list[dict[str, Any]]:
        """Every decision, one row each: any round field holding a list of per-player answer records (or
        one such record); lists and mappings in an action written as JSON.

        Each row says how the answer came (``how``), its ``response_s`` and its ``refused`` attempts (count,
        and their texts as JSON in ``refused_texts``). A record stored before these were (older llmpsych)
        gets ``how`` by :func:`recorded_how`: from its seat where the seat can answer only one way, else
        ``unknown`` (never ``typed``)."""
        rows = []
        for asked in self.answers():
            answer = asked.answer
            texts = [str(t) for t in answer.refused]
            rows.append(
                {
                    "game": self.game,
                    "run": self.run,
                    "round": asked.round,
                    "decision": asked.field,
                    "player": answer.player,
                    "seat": answer.seat,
                    "action": cell(answer.action),
                    "asks": answer.asks,
                    "fallback": answer.fallback,
                    "how": asked.how,
                    "response_s": answer.response_s,
                    "refused": len(texts),
                    "refused_texts": json.dumps(texts, ensure_ascii=False) if texts else "",
                }
            )
        return rows

    def round_rows(self) -> list[dict[str, Any]]:
        """One row per round with its outcome fields (the decisions left out; lists written as JSON), and
        ``how``: how each decision's answer came (``p0 typed, p1 never joined, p2 model``)."""
        rows = []
        for record in self.rounds:
            row: dict[str, Any] = {"game": self.game, "run": self.run}
            for key, value in record.items():
                if isinstance(value, list) and value and isinstance(value[0], dict) and "asks" in value[0]:
                    continue
                if isinstance(value, dict) and "asks" in value:
                    continue
                row[key] = cell(value)
            groups: dict[str, list[str]] = {}
            for key, item in _items(record):
                answer = AnswerRecord.model_validate(item)
                groups.setdefault(key, []).append(f"p{answer.player} {recorded_how(answer)}")
            row["how"] = "; ".join(
                (f"{key}: " if len(groups) > 1 else "") + ", ".join(parts) for key, parts in groups.items()
            )
            rows.append(row)
        return rows


#: The names pydantic puts in an error's location for the member of a union (``mean.int``), left out of
#: the field named in a :class:`DataError`.
_UNION_TAGS = frozenset({"int", "float", "bool", "str", "none", "list[int]", "list[float]"})

#: How a seat kind answers when it can answer only one way (the rule for records without ``how``).
SEAT_HOW = {"llm": "model", "model": "model", "fixed": "bot", "strategy": "strategy", "python": "python"}


def recorded_how(answer: AnswerRecord) -> str:
    """How one stored answer came: its ``how``; for a record written before it was stored, by its seat
    (``llm`` ``model``, ``fixed`` ``bot``, ``strategy``, ``python``), and ``unknown`` for a person's seat
    (``human``, ``web``), whose answers may have been typed or defaulted."""
    if answer.how:
        return answer.how
    kind = (answer.seat or "").partition(":")[0].strip().lower()
    return SEAT_HOW.get(kind, UNKNOWN)


@dataclass(frozen=True)
class Asked:
    """One decision of a stored game: its round, the round field holding it and the answer record."""

    round: int
    field: str
    answer: AnswerRecord

    @property
    def how(self) -> str:
        """How the answer came (:func:`recorded_how`)."""
        return recorded_how(self.answer)


def _items(record: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The per-player answer records of one round record, with the field holding each."""
    out = []
    for key, value in record.items():
        items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
        for item in items:
            if isinstance(item, dict) and "player" in item and "action" in item:
                out.append((key, item))
    return out


def cell(value: Any) -> Any:
    """A table cell: a list or mapping as JSON, anything else as it is."""
    return json.dumps(value) if isinstance(value, list | dict) else value


def as_result(result: GamaBenchResult | Mapping[str, Any]) -> GamaBenchResult:
    """``result`` typed (a stored mapping is parsed)."""
    return result if isinstance(result, GamaBenchResult) else GamaBenchResult.model_validate(result)


def answers_text(hows: Mapping[str, int]) -> str:
    """A person's answers as the monitor and ``seats.csv`` say them: ``typed 2 of 5 (3 deadline
    defaults)``; every other way (``default``, ``skipped``, ``repeated``, ``stand-in``, ``never joined``,
    ``unknown``: an old store) named likewise."""
    total = sum(hows.values())
    others = [
        f"{n} {label}"
        for how, label in (
            ("deadline", "deadline defaults"),
            ("default", "experimenter defaults"),
            ("skipped", "skipped"),
            ("repeated", "repeated"),
            ("stand-in", "by a model stand-in"),
            ("never joined", "never-joined defaults"),
            ("unknown", "of unrecorded origin"),
        )
        if (n := hows.get(how, 0))
    ]
    return f"typed {hows.get('typed', 0)} of {total}" + (f" ({', '.join(others)})" if others else "")


#: The call key of a recorded answer: ``<role>:<unit>:p<player>:r<round>:<kind>#<occurrence>``.
_CALL_KEY = re.compile(r"^(?P<base>.+:p(?P<player>\d+):r(?P<round>\d+):[^#:]+)#(?P<occurrence>\d+)$")


class _Record(Protocol):
    """The part of a run record :func:`stored_results` reads."""

    @property
    def calls(self) -> Iterable[StoredCall]: ...

    def results(self, model: type[GamaBenchResult]) -> list[tuple[Any, GamaBenchResult]]: ...


def stored_results(record: _Record) -> list[tuple[Any, GamaBenchResult]]:
    """Each finished game of a run record, its person answers stored before llmpsych kept ``how`` in the
    round record given the ``how`` their stored answer says (the web seats' older ``answered`` field, read
    by :func:`~llmpsych.runs.provenance.call_provenance`): where one question of that player and round was
    stored, its last ask. Anything else stays as stored (``unknown`` by :func:`recorded_how`)."""
    games = record.results(GamaBenchResult)
    found: dict[tuple[str, int, int], dict[str, tuple[int, str]]] = {}
    for call in record.calls:
        match = _CALL_KEY.match(call.call_key)
        if call.role != "web" or match is None:
            continue
        how = call_provenance(call)[0]
        where = (call.unit_id, int(match["player"]), int(match["round"]))
        asked = found.setdefault(where, {})
        occurrence = int(match["occurrence"])
        if occurrence >= asked.get(match["base"], (-1, ""))[0]:
            asked[match["base"]] = (occurrence, how)
    if not found:
        return games
    out = []
    for unit, result in games:
        unit_id = str(getattr(unit, "unit_id", ""))
        rounds = copy.deepcopy(result.rounds)
        changed = False
        for record_ in rounds:
            round_no = GameRound.model_validate(record_).round
            for _, item in _items(record_):
                answer = AnswerRecord.model_validate(item)
                asked = found.get((unit_id, answer.player, round_no), {})
                web = (answer.seat or "").startswith("web")
                if web and "how" not in answer.model_fields_set and len(asked) == 1:
                    item["how"] = next(iter(asked.values()))[1]  # the stored mapping, as the store keeps it
                    changed = True
        out.append((unit, result.model_copy(update={"rounds": rounds}) if changed else result))
    return out


__all__ = [
    "PERSON_KINDS",
    "Asked",
    "GamaBenchResult",
    "SeatInfo",
    "answers_text",
    "as_result",
    "cell",
    "recorded_how",
    "stored_results",
]

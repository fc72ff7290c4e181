"""Game transcripts: each game's conversations rendered from the stored calls by the one renderer.

A model seat's requests carry the game's summary of its earlier answers, not the replies themselves, so
its calls are not chained by their messages; they are assigned to players from the game's own record
instead. Decisions are asked in batches (one round's simultaneous decisions; a proposal, then the votes
on it), in the order the round record lists them: a batch's first asks start in player order, then its
re-asks, each continuing the request of a player with asks left. A unit whose calls do not add up to its
recorded asks (an edited store) keeps the renderer's own grouping. What the calls do not hold (who sat
where, the answers of fixed and strategy seats) is a short note under each game's heading.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models.cipher import DEFAULT_SHIFT
from ..report.files import output_dir
from ..report.transcripts import Thread, UnitNotes, deciphered_notes, default_thread_title
from ..report.transcripts import write_transcripts as write_page
from .result import Asked, GamaBenchResult, SeatInfo, cell, stored_results

if TYPE_CHECKING:
    from ..runs.calls import StoredCall
    from ..runs.record import RunRecord
    from ..runs.store import UnitRow

#: the roles under which the answers of seats that are not models are stored (``ctx.recorded``)
RECORDED_KINDS = frozenset({"human", "user", "python", "web"})

INTRO = (
    "{players} players; prompts {prompts}. Each model seat's conversation as its calls were stored: what it "
    "was sent that it had not been sent before, and every reply (re-asks included). From round 21 on (11 in "
    "the Public Goods Game) the oldest turns drop out of what a seat is sent."
)


def _is_model(seat: SeatInfo) -> bool:
    return seat.kind in ("llm", "model")


def player_keys(
    result: GamaBenchResult, calls: list[StoredCall], seats: list[SeatInfo]
) -> dict[int, Hashable]:
    """Call number -> the player (or, for a seat spec shared by several non-model seats, the spec) each
    stored call of one game belongs to. When the model calls do not match the recorded asks, only the
    non-model answers are named: the model calls keep the renderer's own grouping."""
    keys: dict[int, Hashable] = {}
    specs = [seat.spec for seat in seats]
    for call in calls:
        if call.role in RECORDED_KINDS:  # a person's or user code's answer: stored under its seat spec
            keys[call.seq] = specs.index(call.model) if specs.count(call.model) == 1 else call.model
    model_seats = {seat.player for seat in seats if _is_model(seat)}
    batches: dict[tuple[Any, str], list[tuple[int, int]]] = {}
    for asked in result.answers():
        if asked.answer.player in model_seats:
            batches.setdefault((asked.round, asked.field), []).append(
                (asked.answer.player, int(asked.answer.asks or 1))
            )
    model_calls = [call for call in calls if call.role not in RECORDED_KINDS]
    if len(model_calls) != sum(asks for batch in batches.values() for _, asks in batch):
        return keys  # the recorded answers only: model calls keep the renderer's grouping
    recorded = dict(keys)
    position = 0
    for batch in batches.values():
        left: dict[int, int] = {}
        sent: dict[int, list[Any]] = {}
        for player, asks in batch:  # the first asks, in the order the batch was asked
            call = model_calls[position]
            position += 1
            keys[call.seq], left[player], sent[player] = player, asks - 1, _messages(call)
        for _ in range(sum(left.values())):  # then the re-asks, as they came
            call = model_calls[position]
            position += 1
            messages = _messages(call)
            open_players = [p for p, n in left.items() if n > 0]
            owner = next((p for p in open_players if messages[: len(sent[p])] == sent[p]), None)
            if owner is None:  # not a re-ask of this batch: the record and the calls disagree
                return recorded
            keys[call.seq], left[owner], sent[owner] = owner, left[owner] - 1, messages
    return keys


def _seat(seat: SeatInfo) -> str:
    """A seat as the transcript names it: its spec, and the model of a model seat."""
    return f"`{seat.spec}`" + (f" (model `{seat.model}`)" if _is_model(seat) else "")


def _messages(call: StoredCall) -> list[Any]:
    messages = call.request.get("messages")
    return list(messages) if isinstance(messages, list) else []


def seat_note(result: GamaBenchResult, seats: list[SeatInfo]) -> str:
    """Who sat where, the answers of the seats that made no model call, and why answers were refused."""
    lines = ["Seats: " + "; ".join(f"player {s.player} {_seat(s)}" for s in seats) + "."]
    models = {seat.player for seat in seats if _is_model(seat)}
    decisions = result.answers()
    came: dict[int, Counter[str]] = {}
    for asked in decisions:
        came.setdefault(asked.answer.player, Counter())[asked.how] += 1
    lines += [
        "",
        "How the answers came: "
        + "; ".join(
            f"player {p} " + ", ".join(f"{how} {n}" for how, n in hows.items())
            for p, hows in sorted(came.items())
        )
        + ".",
    ]
    others = [asked for asked in decisions if asked.answer.player not in models]
    if others:
        lines += [
            "",
            "Answers of the seats without a model (fixed, strategy, python, human, web), with how each came, "
            "its seconds from the question to the answer and the entries refused before it:",
            "",
        ]
        for asked in others:
            answer = asked.answer
            fallback = " (fallback)" if answer.fallback else ""
            where = f"round {asked.round}, {asked.field}: player {answer.player}"
            lines.append(f"- {where} `{cell(answer.action)}`{fallback} ({_how(asked)})")
    refused = [asked for asked in decisions if asked.answer.errors]
    if refused:
        lines += [
            "",
            "Answers that could not be used, and why (each was followed by a re-ask or the fallback):",
            "",
        ]
        for asked in refused:
            answer = asked.answer
            reasons = "; ".join(" ".join(str(e).split()) for e in answer.errors)
            fallback = " Fallback used." if answer.fallback else ""
            where = f"round {asked.round}, {asked.field}: player {answer.player}"
            lines.append(f"- {where}: {reasons}.{fallback}")
    return "\n".join(lines)


def _how(asked: Asked) -> str:
    """How one decision's answer came, in words: ``typed, 4.2 s, 2 refused: `150`, `abc```."""
    parts = [asked.how]
    if asked.answer.response_s is not None:
        parts.append(f"{asked.answer.response_s:.1f} s")
    texts = asked.answer.refused
    if texts:
        shown = ", ".join("`" + " ".join(str(t).split())[:40].replace("`", "'") + "`" for t in texts)
        parts.append(f"{len(texts)} refused: {shown}")
    return ", ".join(parts)


def seat_title(key: Hashable, seats: list[SeatInfo]) -> str:
    """A conversation's title from its :func:`player_keys` key: ``Player 2: `llm` (model `m`)``, or
    ``Seats `fixed:50``` for a spec several seats share."""
    if isinstance(key, int) and 0 <= key < len(seats):
        seat = seats[key]
        return f"Player {seat.player}: {_seat(seat)}"
    return f"Seats `{key}`"


def _thread_title(seats: list[SeatInfo]) -> Callable[[Thread, int], str]:
    def title(thread: Thread, index: int) -> str:
        if thread.key is not None:
            return seat_title(thread.key, seats)
        return default_thread_title(thread, index)

    return title


def write_transcripts(record: RunRecord, out_dir: Path, titles: Mapping[str, str]) -> dict[str, list[Path]]:
    """``<game>-run<k>.md`` per finished game; {game: [paths]}."""
    written: dict[str, list[Path]] = {}
    for unit, result in stored_results(record):
        output_dir(out_dir.parent, out_dir.name)  # RUN/transcripts: a link there is replaced by a folder
        path = out_dir / f"{result.game}-run{result.run:02d}.md"
        _write_game(record, unit, result, path, titles.get(result.game, result.game))
        written.setdefault(result.game, []).append(path)
    return written


def _write_game(record: RunRecord, unit: UnitRow, result: GamaBenchResult, path: Path, title: str) -> None:
    seats = result.seat_info(record.config.role_specs())
    options = record.config.options
    shift = int(options.get("cipher_shift") or DEFAULT_SHIFT) if options.get("cipher") else None

    def keys(unit: UnitRow, calls: list[StoredCall]) -> Callable[[StoredCall], Hashable | None]:
        players = player_keys(result, calls, seats)
        return lambda call: players.get(call.seq)

    write_page(
        record,
        path,
        f"{title}, run {result.run}",
        html=False,
        intro=INTRO.format(players=result.players, prompts=result.prompts),
        units=[unit],
        unit_title=lambda unit: "Conversations",
        thread_title=_thread_title(seats),
        notes=lambda unit, calls: UnitNotes(
            intro=seat_note(result, seats),
            calls=deciphered_notes(calls, shift) if shift is not None else {},
        ),
        thread_key=keys,
    )


__all__ = ["player_keys", "seat_note", "seat_title", "write_transcripts"]

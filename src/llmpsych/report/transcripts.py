"""Conversations rendered from a run's stored calls: the one transcript renderer.

The store keeps each call's full request. A call continues a thread when its messages begin with the
thread's last request followed by that request's reply; anything else starts a new thread (another
seat of a game, another agent of a multi-agent system, another questionnaire session). Each turn then
shows only what is new: the messages added since the thread's previous call, and the reply with its
latency, tokens and retries. Re-asks appear as they happened, as a further user message in the same
thread. :func:`threads` groups one unit's calls (the web app shows the same grouping);
:func:`transcripts_markdown` renders a whole run per unit and thread, failed units with their error;
:func:`write_transcripts` writes it as Markdown with an HTML page beside it.

Only what a model was sent and answered is in the calls. What a task knows beyond them (the deciphered
text of a cipher reply, the scored attempt, who sent a message to whom, an injected edit) it adds as
:class:`UnitNotes`: a paragraph under the unit's heading, a note under any call (by its ``seq``) and a
paragraph after the threads, computed from the unit's result and calls when the page is written.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import atomic_write_text
from .html import fenced, write_html

if TYPE_CHECKING:
    from ..runs.calls import StoredCall
    from ..runs.record import RunRecord
    from ..runs.store import UnitRow

TRANSCRIPTS = "transcripts.md"


@dataclass(frozen=True)
class UnitNotes:
    """A task's annotations of one unit: Markdown under its heading, under a call (by seq), after it."""

    intro: str = ""
    calls: Mapping[int, str] = field(default_factory=dict)
    end: str = ""


def deciphered_notes(calls: Iterable[StoredCall], shift: int) -> dict[int, str]:
    """Call notes for a cipher run (requests and replies are stored enciphered, as sent): under each
    reply, the text as deciphered for scoring, or that it was read as written."""
    from ..models.cipher import read_reply

    notes: dict[int, str] = {}
    for call in calls:
        raw = str(call.response.get("text") or "")
        read = read_reply(raw, shift)
        notes[call.seq] = (
            "_Read as written (the reply was not enciphered)._"
            if read == raw
            else f"_Deciphered, as scored:_\n\n{fenced(read)}"
        )
    return notes


@dataclass
class Turn:
    """One call: the messages it added to the conversation and the model's reply."""

    call: StoredCall
    new_messages: list[dict[str, str]]
    reply: str
    errors: list[str]


@dataclass
class Thread:
    """One conversation (a seat, an agent, a questionnaire session)."""

    role: str
    model: str
    turns: list[Turn] = field(default_factory=list)
    #: what the ``key`` of :func:`threads` named this thread by (e.g. a game's player); None by default
    key: Hashable | None = None
    _history: list[dict[str, str]] = field(default_factory=list, repr=False)

    @property
    def latency_s(self) -> float:
        """Seconds the model took over the thread's calls."""
        return sum(t.call.latency_s or 0.0 for t in self.turns)

    @property
    def tokens(self) -> tuple[int, int]:
        """Prompt and completion tokens over the thread's calls (as the server reported them)."""
        return (
            sum(t.call.prompt_tokens or 0 for t in self.turns),
            sum(t.call.completion_tokens or 0 for t in self.turns),
        )


def _text(content: Any) -> str:
    """A message's content as text (a list of parts joined; anything else as written)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", p)) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _messages(request: dict[str, Any]) -> list[dict[str, str]]:
    raw = request.get("messages")
    if not isinstance(raw, list):
        return [{"role": "request", "content": str(request.get("raw", request))}]
    return [
        {"role": str(m.get("role", "?")), "content": _text(m.get("content"))}
        if isinstance(m, dict)
        else {"role": "?", "content": str(m)}
        for m in raw
    ]


def _common(a: list[dict[str, str]], b: list[dict[str, str]]) -> int:
    """How many leading messages ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


#: Oldest messages a keyed thread's next call may have dropped and still be matched to it (a game drops one
#: per round once its history is long; :func:`_shared`).
MAX_DROPPED = 8


def _shared(messages: list[dict[str, str]], before: list[dict[str, str]]) -> int:
    """How many leading messages of ``messages`` a keyed thread has shown already: those it shares with
    ``before`` (the thread's previous exchange), where ``messages`` may lack up to :data:`MAX_DROPPED` of
    ``before``'s oldest turns after the first (a game that truncates its history keeps the system message
    and drops the oldest report). Without this, every call of a 100-round game after its 20th round showed
    its whole history again."""
    best = _common(messages, before)
    if best == 0:
        return 0
    for dropped in range(1, min(MAX_DROPPED, len(before) - 1) + 1):
        n = 1 + _common(messages[1:], before[1 + dropped :])
        best = max(best, n)
    return best


def threads(
    calls: Iterable[StoredCall], key: Callable[[StoredCall], Hashable | None] | None = None
) -> list[Thread]:
    """Group a unit's calls (in the order they were made) into conversations.

    ``key`` names a call's conversation when the caller knows it (a game's player, whose later requests
    carry the game's summary of its answers rather than the reply itself): calls with one key form one
    thread, each turn showing the messages after those it shares with the thread's previous exchange.
    Calls it gives None, and all calls without it, are grouped by their messages as above.
    """
    out: list[Thread] = []
    keyed: dict[Hashable, Thread] = {}
    for call in calls:
        messages = _messages(call.request)
        reply = _text(call.response.get("text"))
        errors = [str(e) for e in call.response.get("errors") or [] if e]
        name = key(call) if key is not None else None
        owner = keyed.get(name) if name is not None else None
        if name is None:
            for thread in reversed(out):  # the latest matching thread: a seat's newest turn
                n = len(thread._history)
                if n and thread.key is None and messages[:n] == thread._history and thread.role == call.role:
                    owner = thread
                    break
        if owner is None:
            owner = Thread(call.role, call.model, key=name)
            out.append(owner)
            if name is not None:
                keyed[name] = owner
        shared = _shared(messages, owner._history) if name is not None else len(owner._history)
        new = messages[shared:]
        owner.turns.append(Turn(call, new, reply, errors))
        owner._history = [*messages, {"role": "assistant", "content": reply}]
    return out


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def turn_meta(call: StoredCall) -> str:
    """One line about a call: its number, latency, tokens, attempts, cache and finish reason."""
    parts = [
        f"call {call.seq}",
        "latency ?" if call.latency_s is None else f"{call.latency_s:.2f} s",
        f"{_count(call.prompt_tokens)} prompt + {_count(call.completion_tokens)} completion tokens",
        f"{call.attempts or 1} attempt(s)",
    ]
    if call.cached:
        parts.append("from the cache")
    finish = call.response.get("finish_reason")
    if finish:
        parts.append(f"finish: {finish}")
    return " · ".join(parts)


def thread_markdown(
    thread: Thread, title: str, level: int = 3, notes: Mapping[int, str] | None = None
) -> list[str]:
    """One conversation as Markdown lines: a heading, its totals, then each turn's new messages and reply
    (and the note ``notes`` holds for the call's seq, under the reply)."""
    prompt, completion = thread.tokens
    lines = [
        f"{'#' * level} {title}",
        "",
        f"Model `{thread.model}`; {len(thread.turns)} call(s), {thread.latency_s:.2f} s, "
        f"{prompt} prompt + {completion} completion tokens.",
        "",
    ]
    for turn in thread.turns:
        for message in turn.new_messages:
            lines += [f"**{message['role']}**", "", fenced(message["content"]), ""]
        lines += [f"**reply** ({turn_meta(turn.call)})", "", fenced(turn.reply), ""]
        if turn.errors:
            lines += [f"_Retried after: {'; '.join(' '.join(e.split()) for e in turn.errors)}_", ""]
        note = (notes or {}).get(turn.call.seq)
        if note:
            lines += [note, ""]
    return lines


def default_thread_title(thread: Thread, index: int) -> str:
    """``"thread 2 (player)"``: the thread's number in the unit and its stored role."""
    return f"thread {index + 1} ({thread.role})"


def unit_markdown(
    unit: UnitRow,
    calls: Iterable[StoredCall],
    title: str | None = None,
    thread_title: Callable[[Thread, int], str] = default_thread_title,
    level: int = 2,
    notes: UnitNotes | None = None,
    key: Callable[[StoredCall], Hashable | None] | None = None,
) -> list[str]:
    """One unit as Markdown lines: its heading and status, then one section per thread (grouped by
    :func:`threads` with ``key``), with ``notes`` (what the task keeps beside the calls)."""
    notes = notes or UnitNotes()
    lines = [f"{'#' * level} {title or unit.unit_id}", ""]
    status = f"Unit `{unit.unit_id}`: {unit.status}"
    if unit.status == "failed" and unit.error:
        status += f" ({' '.join(str(unit.error).split())})"
    lines += [status + ".", ""]
    if notes.intro:
        lines += [notes.intro.rstrip(), ""]
    grouped = threads(calls, key)
    if not grouped:
        lines += ["_(no model call stored for this unit)_", ""]
    for index, thread in enumerate(grouped):
        lines += thread_markdown(thread, thread_title(thread, index), level + 1, notes.calls)
    if notes.end:
        lines += [notes.end, ""]
    return lines


def transcripts_markdown(
    record: RunRecord,
    title: str = "Transcripts",
    *,
    intro: str = "",
    unit_title: Callable[[UnitRow], str | None] | None = None,
    thread_title: Callable[[Thread, int], str] = default_thread_title,
    units: Iterable[UnitRow] | None = None,
    notes: Callable[[UnitRow, list[StoredCall]], UnitNotes | None] | None = None,
    thread_key: Callable[[UnitRow, list[StoredCall]], Callable[[StoredCall], Hashable | None]] | None = None,
) -> str:
    """A run's conversations as one Markdown page: per unit (creation order, or ``units``), per thread.

    ``unit_title`` names a unit's section (``None``: its id) and ``thread_title`` a thread's, so a
    benchmark can label seats, agents or scale runs without re-rendering the calls; ``notes`` gives a
    unit's :class:`UnitNotes` from its row and its calls (in seq order): what the calls do not hold (who
    sat where, answers typed by people, deciphered replies); ``thread_key`` gives, from a unit and its
    calls, the ``key`` that groups them (:func:`threads`).
    """
    by_unit: dict[str, list[StoredCall]] = {}
    for call in record.calls:
        by_unit.setdefault(call.unit_id, []).append(call)
    lines = [f"# {title}", ""]
    if intro:
        lines += [intro, ""]
    for unit in record.units if units is None else units:
        named = unit_title(unit) if unit_title is not None else None
        calls = sorted(by_unit.get(unit.unit_id, []), key=lambda c: c.seq)
        unit_notes = notes(unit, calls) if notes is not None else None
        key = thread_key(unit, calls) if thread_key is not None else None
        lines += unit_markdown(unit, calls, named, thread_title, notes=unit_notes, key=key)
    return "\n".join(lines).rstrip() + "\n"


def write_transcripts(
    record: RunRecord,
    path: Path | None = None,
    title: str = "Transcripts",
    *,
    html: bool = True,
    **options: Any,
) -> list[Path]:
    """Write :func:`transcripts_markdown` to ``path`` (default RUN/transcripts.md; its folder is made if
    missing), and its HTML page beside it unless ``html`` is false; the paths written."""
    target = record.run_dir / TRANSCRIPTS if path is None else path
    target.parent.mkdir(parents=True, exist_ok=True)
    written = [atomic_write_text(target, transcripts_markdown(record, title, **options))]
    return written + ([write_html(written[0], embed_images=False)] if html else [])


__all__ = [
    "TRANSCRIPTS",
    "Thread",
    "Turn",
    "UnitNotes",
    "deciphered_notes",
    "default_thread_title",
    "thread_markdown",
    "threads",
    "transcripts_markdown",
    "turn_meta",
    "unit_markdown",
    "write_transcripts",
]

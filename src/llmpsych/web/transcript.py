"""A unit's stored calls as conversations: one thread per seat, agent or questionnaire session.

The store keeps each call's full request. A call continues a thread when its messages begin with the
thread's last request followed by that request's reply; anything else starts a new thread (another
seat of a game, another agent of a multi-agent system). Each turn then shows only what is new: the
messages added since the thread's previous call, and the reply with its latency, tokens and retries.
Re-asks appear as they happened, as a further user message in the same thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .store import CallRecord


@dataclass
class Turn:
    """One call: the messages it added to the conversation and the model's reply."""

    call: CallRecord
    new_messages: list[dict[str, str]]
    reply: str
    errors: list[str]


@dataclass
class Thread:
    """One conversation (a seat, an agent, a questionnaire session)."""

    role: str
    model: str
    turns: list[Turn] = field(default_factory=list)
    _history: list[dict[str, str]] = field(default_factory=list, repr=False)

    @property
    def latency_s(self) -> float:
        return sum(t.call.latency_s or 0.0 for t in self.turns)

    @property
    def tokens(self) -> tuple[int, int]:
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


def threads(calls: list[CallRecord]) -> list[Thread]:
    """Group a unit's calls (in the order they were made) into conversations."""
    out: list[Thread] = []
    for call in calls:
        messages = _messages(call.request)
        reply = _text(call.response.get("text"))
        errors = [str(e) for e in call.response.get("errors") or [] if e]
        owner = None
        for thread in reversed(out):  # the latest matching thread: a seat's newest turn
            n = len(thread._history)
            if n and messages[:n] == thread._history and thread.role == call.role:
                owner = thread
                break
        if owner is None:
            owner = Thread(call.role, call.model)
            out.append(owner)
        new = messages[len(owner._history) :]
        owner.turns.append(Turn(call, new, reply, errors))
        owner._history = [*messages, {"role": "assistant", "content": reply}]
    return out

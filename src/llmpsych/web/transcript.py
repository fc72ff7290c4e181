"""A unit's stored calls as conversations: the grouping of :mod:`llmpsych.report.transcripts`.

One thread per seat, agent or questionnaire session; each turn shows only what is new (the messages
added since the thread's previous call) and the reply with its latency, tokens and retries. The web
page and the Markdown transcripts group calls the same way: where a task says whose each call is
(:meth:`Task.conversations <llmpsych.runs.task.Task.conversations>`, e.g. a game's players, whose requests
carry the game's summary rather than their replies), by that, titled; otherwise by their messages.

A page of a long unit shows the turns of its slice of calls, but the threads are grouped over all of the
unit's calls first, so a seat's first turn on page 2 shows only what is new since its turn on page 1 (a
100-round, 5-player game: 500 calls, before this 4.6 MB for its second page, each call's whole history
repeated in 200 untitled conversations; measured in ``benchmarks/web_people.py``'s notes).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace
from typing import Any

from ..errors import LlmpsychError
from ..report.transcripts import Thread, Turn, threads
from ..runs.calls import StoredCall


def task_keys(
    meta: dict[str, Any], result: Any, calls: list[StoredCall]
) -> tuple[dict[int, Hashable], dict[Hashable, str]] | None:
    """The task's own grouping of a finished unit's calls (None: by their messages, e.g. a damaged config,
    an unfinished unit or a task without one)."""
    from ..runs.config import RunConfig
    from ..runs.task import task_class

    raw = meta.get("config")
    if result is None or not isinstance(raw, dict):
        return None
    try:
        config = RunConfig.model_validate(raw)
        return task_class(config.task).conversations(config, result, calls)
    except (LlmpsychError, ValueError, TypeError, KeyError, IndexError):  # shown ungrouped, never an error
        return None


def page_threads(
    calls: list[StoredCall],
    grouping: tuple[dict[int, Hashable], dict[Hashable, str]] | None,
    start: int,
    end: int,
) -> list[tuple[str | None, Thread]]:
    """The conversations of ``calls[start:end]`` (a page), each with its title (None: untitled), grouped
    over all ``calls`` so that each turn is shown once over the pages."""
    keys, titles = grouping if grouping is not None else ({}, {})
    shown = {call.seq for call in calls[start:end]}
    out: list[tuple[str | None, Thread]] = []
    for thread in threads(calls, (lambda call: keys.get(call.seq)) if keys else None):
        turns: list[Turn] = [turn for turn in thread.turns if turn.call.seq in shown]
        if turns:
            title = titles.get(thread.key) if thread.key is not None else None
            out.append((title, replace(thread, turns=turns)))
    return out


__all__ = ["Thread", "Turn", "page_threads", "task_keys", "threads"]

"""A unit's stored calls as conversations: the grouping of :mod:`llmpsych.report.transcripts`.

One thread per seat, agent or questionnaire session; each turn shows only what is new (the messages
added since the thread's previous call) and the reply with its latency, tokens and retries. The web
page and the Markdown transcripts group calls the same way.
"""

from __future__ import annotations

from ..report.transcripts import Thread, Turn, threads

__all__ = ["Thread", "Turn", "threads"]

"""How an answer came: the provenance stored with every answer of a run, and its reading of old stores.

Every answer a run records says how it was given, from one vocabulary (:data:`HOW`):

``typed``
    a person typed it (a ``human`` seat at the terminal, a ``web`` seat's form);
``deadline``
    a person's seat was shown the question and did not answer in time: the default action was entered;
``default``
    the experimenter entered the game's default action for a person from the monitor (or removed the seat,
    or moved the game on, with the default policy);
``skipped``
    a person's seat sat the round out (the deadline policy ``skip``): the game's action for a missing
    answer (a decision's ``fallback``) was used;
``repeated``
    a person's last answer to the same kind of decision was entered again (the deadline policy ``repeat``);
``stand-in``
    a model answered for a person (the deadline policy ``llm:<role>``; its call is stored like any other);
``never joined``
    a person's seat was never opened (its participant did not come): the default action was entered;
``bot``
    a fixed list of answers (a ``fixed:`` seat);
``model``
    a model's reply (a chat call);
``strategy``
    a built-in strategy of the task (e.g. ``strategy:ne``);
``python``
    a user's Python function (a ``python:`` seat).

Beside it, ``response_s`` (seconds from the question being shown to the answer: for a model, the call's
latency; none for ``bot``, ``strategy`` and ``never joined``, which were never asked) and ``refused`` (the
texts a person entered that were refused before the answer, e.g. an out-of-range number on a web form).

Stores written before this was recorded still read, by one documented rule (:func:`call_provenance`):
a model call is ``model``; a recorded answer with the web seats' older ``answered`` field maps
``typed``/``deadline`` as they are and ``bot`` (its meaning then: a seat that never joined) to
``never joined``; a ``python`` answer is ``python``; any other recorded answer is ``unknown``, never
``typed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from .calls import StoredCall

How = Literal[
    "typed",
    "deadline",
    "default",
    "skipped",
    "repeated",
    "stand-in",
    "never joined",
    "bot",
    "model",
    "strategy",
    "python",
    "unknown",
]
UNKNOWN = "unknown"
#: The provenance vocabulary, in this order in tables (``unknown``: an old store that did not record it).
HOW: tuple[str, ...] = tuple(h for h in get_args(How) if h != UNKNOWN)
SKIPPED = "skipped"
#: Provenances of an answer a person did not type though their seat was asked (a deadline policy or the
#: experimenter entered it), and ``never joined``.
DEFAULTED: frozenset[str] = frozenset(
    {"deadline", "default", "skipped", "repeated", "stand-in", "never joined"}
)
#: The older web seats' ``answered`` values and what they meant.
_LEGACY_ANSWERED = {"typed": "typed", "deadline": "deadline", "bot": "never joined"}


def call_provenance(call: StoredCall) -> tuple[str, float | None, list[str]]:
    """``(how, response_s, refused texts)`` of one stored call (one of ``RunRecord.calls``)."""
    request, response = call.request, call.response
    refused = response.get("refused")
    texts = [str(t) for t in refused] if isinstance(refused, list) else []
    how = response.get("how")
    if isinstance(how, str) and how in HOW:
        seconds = response.get("response_s")
        return how, float(seconds) if isinstance(seconds, int | float) else None, texts
    if "messages" in request:  # a chat call: a model's reply
        latency = call.latency_s
        return "model", float(latency) if isinstance(latency, int | float) else None, texts
    legacy = _LEGACY_ANSWERED.get(str(request.get("answered")))
    if legacy is not None:
        return legacy, None, texts
    if call.role == "python":
        return "python", None, texts
    return UNKNOWN, None, texts


__all__ = ["DEFAULTED", "HOW", "SKIPPED", "UNKNOWN", "How", "call_provenance"]

"""What a participant's page shows of one decision: the game's texts for people
(:mod:`llmpsych.games.people_text`), never the model's prompt.

The instructions come from the game's options, the question and its input from the decision (its kind
and what the game lets its player see, ``Observation.info``), the history from the game's typed rounds
finished so far (``Observation.progress``). A game with no people's texts (one registered by a program,
say) is shown as before: the model's rules, question and report turns, without the JSON instruction.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ..games import people_text
from ..games.observation import Observation
from ..games.people_text import AnswerInput


@dataclass(frozen=True)
class SeatView:
    """One decision as a person sees it."""

    game: str
    title: str
    instructions: list[str]
    question: str
    history: list[str]
    input: AnswerInput


def _so_far(observation: Observation) -> dict[str, Any] | None:
    """The game so far (a copy; the engine's thread may be adding a round: looked at again)."""
    progress = observation.progress
    if progress is None:
        return None
    for _ in range(3):
        try:
            return copy.deepcopy(progress())
        except RuntimeError:
            continue
    return None


def seat_view(observation: Observation, lang: str) -> SeatView | None:
    """The people's view of ``observation`` in ``lang``; None for a game without people's texts."""
    so_far = _so_far(observation)
    if so_far is None or so_far.get("game") not in people_text.GAMES:
        return None
    game, o = str(so_far["game"]), observation
    params = so_far.get("params") or {}
    players = int(so_far.get("players") or 0)
    rounds = o.rounds or len(so_far.get("rounds") or []) or 1
    common: dict[str, Any] = {"params": params, "players": players, "lang": lang}
    return SeatView(
        game=game,
        title=people_text.title(game, lang),
        instructions=people_text.instructions(
            game, params, players=players, rounds=rounds, player=o.player, lang=lang
        ),
        question=people_text.question(game, o.kind, o.info, round_no=o.round, player=o.player, **common),
        history=people_text.history(game, so_far.get("rounds") or [], o.player, **common),
        input=people_text.answer_input(game, o.kind, o.info, player=o.player, **common),
    )


__all__ = ["SeatView", "seat_view"]

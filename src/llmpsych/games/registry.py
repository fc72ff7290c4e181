"""The registered games: a game is one module (its :class:`~llmpsych.games.engine.Game` class) plus one
:func:`register` line, as TextArena's environments are.

Task options, analysis, plots, scoring and the leaderboard find a game here, by its engine name
(``guessing``) or its scoring name (``guessing_game``). A class missing a required piece is refused by
:func:`register` with an error naming the piece, so a half-done game never runs without a score or a plot.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from ..errors import LlmpsychError
from ..registry import Registry
from .engine import Game, GameRound, SimultaneousGame

if TYPE_CHECKING:
    from .result import GamaBenchResult


class GameDefinitionError(LlmpsychError):
    """A game class cannot be registered: a required piece is missing or a name is taken."""


_BASES = (Game, SimultaneousGame)


def _defines(cls: type, attr: str) -> bool:
    """Whether ``cls`` (or a base of its own, not the engine's) defines ``attr``."""
    return any(attr in vars(k) for k in cls.__mro__ if k not in _BASES and k is not object)


def _problems(cls: type[Game[Any]]) -> list[str]:
    problems = []
    for attr in ("name", "title", "scoring_name", "folder"):
        value = getattr(cls, attr, None)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{attr} (a non-empty string)")
    name = getattr(cls, "name", "")
    if isinstance(name, str) and name and not name.isidentifier():
        problems.append(f"name {name!r} (letters, digits and _ only: it is also an option key)")
    params = getattr(cls, "Params", None)
    if not (inspect.isclass(params) and issubclass(params, BaseModel)):
        problems.append("Params (a pydantic model of the game's options)")
    round_model = getattr(cls, "Round", None)
    if not (inspect.isclass(round_model) and issubclass(round_model, GameRound)):
        problems.append("Round (a GameRound model of one round's record)")
    builtin = getattr(cls, "builtin", None)
    if not isinstance(builtin, dict) or not builtin:
        problems.append("builtin (the game's prompt templates)")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        problems.append(f"the rules ({missing})")
    for method, what in (
        ("scoring_log", "scoring_log (its scoring record)"),
        ("score_log", "score_log (its 0-100 score)"),
        ("plot_points", "plot_points (its plot series)"),
    ):
        if not _defines(cls, method):
            problems.append(what)
    panels = getattr(cls, "panels", None)
    if not isinstance(panels, dict) or not panels:
        problems.append("panels (its plot panels)")
    return problems


def _check(target: object) -> list[str]:
    if not (inspect.isclass(target) and issubclass(target, Game)):
        return [f"{target!r} is not a Game class"]
    problems = _problems(target)
    return [f"it lacks {'; '.join(problems)}"] if problems else []


#: The games by engine name (:mod:`llmpsych.registry`), in registration order.
_GAMES: Registry[type[Game[Any]]] = Registry("game", _check, GameDefinitionError)


def register(game: type[Game[Any]] | str) -> type[Game[Any]]:
    """Register a game class (or ``"module:Class"``); refused with a clear error when a piece is missing."""
    found = _GAMES.resolve(game)
    label = str(getattr(found, "name", None) or getattr(found, "__name__", found))
    cls = _GAMES.load(label, cast("type[Game[Any]]", found))
    for other in _games():
        if other is cls:
            return cls
        if cls.name == other.name or cls.scoring_name == other.scoring_name:
            raise GameDefinitionError(
                f"game {label!r} cannot be registered: {other.__name__} already uses the name "
                f"{other.name!r} / {other.scoring_name!r}"
            )
    _GAMES.add(cls.name, cls)
    return cls


def _games() -> list[type[Game[Any]]]:
    return [_GAMES.get(name) for name in _GAMES]


def unregister(name: str) -> None:
    """Remove a registered game (for games defined at run time, e.g. in tests)."""
    _GAMES.remove(name)


def names() -> list[str]:
    """Engine names of the registered games, in registration order."""
    return _GAMES.names()


def games() -> list[type[Game[Any]]]:
    """The registered game classes, in registration order."""
    return _games()


def get(name: str) -> type[Game[Any]]:
    """The game registered as ``name`` (KeyError if none)."""
    if name not in _GAMES:
        raise KeyError(name)
    return _GAMES.get(name)


def by_scoring_name(scoring_name: str) -> type[Game[Any]]:
    """The game whose scoring name is ``scoring_name`` (KeyError if none)."""
    for cls in _games():
        if cls.scoring_name == scoring_name:
            return cls
    raise KeyError(scoring_name)


class _View(Mapping[str, str]):
    """A live mapping over the registered games (a game registered later appears in it)."""

    def __init__(self, key: str, value: str) -> None:
        self._key, self._value = key, value

    def _items(self) -> dict[str, str]:
        return {getattr(g, self._key): (getattr(g, self._value) or g.scoring_name) for g in _games()}

    def __getitem__(self, key: str) -> str:
        return self._items()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(_GAMES)


#: scoring name -> display title, of every registered game
TITLES: Mapping[str, str] = _View("scoring_name", "title")
#: engine name -> scoring name
SCORING_NAMES: Mapping[str, str] = _View("name", "scoring_name")
#: scoring name -> key in leaderboard.json
JSON_KEYS: Mapping[str, str] = _View("scoring_name", "json_key")

# -- the built-in games, in the paper's order ------------------------------------------------------
register("llmpsych.games.guessing:GuessingGame")
register("llmpsych.games.bar:BarGame")
register("llmpsych.games.divide_dollar:DivideDollarGame")
register("llmpsych.games.public_goods:PublicGoodsGame")
register("llmpsych.games.diner:DinerGame")
register("llmpsych.games.auction:AuctionGame")
register("llmpsych.games.battle_royale:BattleRoyaleGame")
register("llmpsych.games.pirate:PirateGame")

#: The paper's eight games (scoring names), whose mean is the overall score.
PAPER_GAMES: tuple[str, ...] = tuple(g.scoring_name for g in _games() if g.in_overall)


def rounds_of(result: GamaBenchResult) -> list[GameRound]:
    """A stored game's rounds parsed as its registered game's ``Round``
    (:meth:`~llmpsych.games.result.GamaBenchResult.rounds_as`); a game no longer registered gets the base
    :class:`GameRound` (its fields kept, no payoffs)."""
    model = get(result.game).Round if result.game in names() else GameRound
    return result.rounds_as(model)

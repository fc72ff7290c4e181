"""The games' texts for people: instructions from the game's actual options, the history from its typed
rounds (never the model's prompt), the question's input whose values the game's own check accepts, in
English and German."""

from __future__ import annotations

from typing import Any

import pytest

from llmpsych.errors import ConfigError
from llmpsych.games import people_text as pt
from llmpsych.games import registry
from llmpsych.games.engine import Decision, OfflineContext, play_offline
from llmpsych.games.guessing import GuessingRound, resolve_guesses
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import parse_seat
from llmpsych.i18n import language, num

GAMES = ["guessing", "bar", "divide_dollar", "public_goods", "diner", "auction", "battle_royale", "pirate"]
#: Words of the model's prompt a person must never read.
MODEL_WORDS = ("JSON", "equilibrium", "Gleichgewicht", "{", "}", "player_", "explanation")
#: Options of each game away from its defaults: the instructions must state these numbers.
OPTIONS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "guessing": ({"ratio": 0.5, "min": 1, "max": 50}, ["1/2", "from 1 to 50"]),
    "bar": ({"ratio": 0.4, "home": 3, "max": 12}, ["40%", "12 points", "3 points"]),
    "divide_dollar": ({"golds": 60}, ["60 golds"]),
    "public_goods": ({"tokens": 30, "ratio": 1.5}, ["30 tokens", "multiplied by 1.5"]),
    "diner": ({"exp_cost": 25, "cheap_utility": 12}, ["costs 25", "worth 12"]),
    "auction": ({"mode": "second", "interval": 20}, ["second-highest bid", "multiple of 20"]),
    "battle_royale": ({"base_hit_rate": 20, "interval": 10}, ["player 0 20%", "player 2 40%"]),
    "pirate": ({"gold": 40}, ["share 40 golds", "adding up to 40"]),
}


def played(name: str, players: int = 4, rounds: int = 3) -> Any:
    """``name`` played to the end by fixed and equilibrium seats (offline, no model)."""
    cls = registry.get(name)
    game = cls(cls.Params(), players, rounds, PromptSet(cls.folder, cls.builtin), OfflineContext().rng)
    first = {"guessing": "fixed:30/7", "bar": "fixed:go", "diner": "fixed:costly", "pirate": "fixed:0,0,0,40"}
    seats = [parse_seat(first.get(name, "strategy:ne"))] + [parse_seat("strategy:ne")] * (players - 1)
    if name == "pirate":
        game.p.gold = 40
    play_offline(game, seats)
    return game


def test_the_history_line_of_the_issue_is_computed_from_the_typed_round() -> None:
    outcome = resolve_guesses([25, 14, 40, 30, 14], 2 / 3)  # mean 24.6, target 16.4
    round_ = GuessingRound(round=1, **outcome)
    line = "Round 1: average 24.6, target 16.4, winning number 14; your pick 25, you did not win."
    assert pt.history("guessing", [round_], 0) == [line]
    assert pt.history("guessing", [round_.stored()], 1, lang="de") == [
        "Runde 1: Durchschnitt 24,6, Ziel 16,4, Gewinnzahl 14; Ihre Zahl 14, Sie haben gewonnen."
    ]


@pytest.mark.parametrize("name", GAMES)
def test_every_game_has_instructions_from_its_options_and_a_history_for_people(name: str) -> None:
    params, said = OPTIONS[name]
    text = " ".join(pt.instructions(name, params, players=4, rounds=3, player=2))
    assert all(s in text for s in said), text
    assert "result" in text.lower() or "goal" in text.lower()  # the stakes are stated
    german = " ".join(pt.instructions(name, params, players=4, rounds=3, player=2, lang="de"))
    assert german != text and ("Ergebnis" in german or "Ziel" in german)
    game = played(name)
    for lang in ("en", "de"):
        for player in range(4):
            lines = pt.history(name, game.stored_rounds(), player, params=game.info(), lang=lang)
            shown = " ".join(lines)
            assert not any(w in shown for w in MODEL_WORDS), shown
            if player == 0:  # the first seat plays in every round of every game
                assert lines, name
    assert not any(w in text for w in MODEL_WORDS)


@pytest.mark.parametrize("name", GAMES)
def test_each_input_gives_values_the_game_itself_accepts(name: str) -> None:
    """Every choice the form offers (and the bounds of a number) passes the game's own check: a person
    can never be offered an answer the game would refuse."""
    cls = registry.get(name)
    game = cls(cls.Params(), 4, 3, PromptSet(cls.folder, cls.builtin), OfflineContext().rng)
    decisions: list[Decision] = []
    if name == "battle_royale":
        decisions = [game.decision(1, 1, [0, 1, 3])]
    elif name == "pirate":
        decisions = [game.proposal(2), game.vote(3, 2, [98, 0, 2])]
    else:
        if name == "public_goods":
            game.initial = game.balance = [20] * 4
        decisions = [game.decision(1, 1)]
    for d in decisions:
        spec = pt.answer_input(name, d.kind, d.info, player=d.player, params=game.info(), players=4)
        question = pt.question(
            name, d.kind, d.info, round_no=d.round, player=d.player, params=game.info(), players=4
        )
        assert question and not any(w in question for w in MODEL_WORDS), question
        if spec.kind == "number":
            assert spec.low is not None and spec.high is not None
            for value in (spec.low, spec.high):
                d.validate({d.primary: str(value)})
            with pytest.raises(Exception):  # noqa: B017 - the game's own refusal, whatever its class
                d.validate({d.primary: str(spec.high + 1)})
        elif spec.kind == "choice":
            assert len(spec.choices) >= 2
            for value, label in spec.choices:
                d.validate({d.primary: value})
                assert label and not label.startswith("choice.")
        else:
            assert spec.kind == "shares" and spec.total is not None
            shares = [str(spec.total)] + ["0"] * (len(spec.labels) - 1)
            assert d.validate({d.primary: spec.answer(shares)})[0] == spec.total
    if name == "battle_royale":  # the shooter is not offered as a target, a miss is
        spec = pt.answer_input(name, "shoot", {"survivors": [0, 1, 3]}, player=1, players=4)
        assert [v for v, _ in spec.choices] == ["player_0", "player_3", "null"]


def test_german_is_complete_and_an_unknown_language_is_refused() -> None:
    assert pt.TEXTS.missing("de") == []
    assert language("de-DE") == "de" and language(None) == "en"
    with pytest.raises(ConfigError, match="use one of: en, de"):
        pt.instructions("guessing", players=3, rounds=1, lang="xx")
    with pytest.raises(ConfigError, match="no people's texts"):
        pt.history("chess", [], 0)
    with pytest.raises(ConfigError, match="options for game 'guessing': ratoi"):
        pt.instructions("guessing", {"ratoi": 0.5}, players=3, rounds=1)  # never the default's text
    assert num(24.6, "de") == "24,6" and num(16.4000001) == "16.4" and num(3.0) == "3"


def test_bar_implicit_mode_tells_a_stayer_only_their_own_points() -> None:
    """A person learns what a model in the same seat learns: in implicit mode, not how many went."""
    rounds = [
        {"round": 1, "choices": ["go", "stay", "go"], "go": 2, "go_ratio": 2 / 3, "good": False},
    ]
    rounds[0]["utility"] = [0, 5, 0]
    stayer = pt.history("bar", rounds, 1, params={"mode": "implicit"})
    goer = pt.history("bar", rounds, 0, params={"mode": "implicit"})
    assert stayer == ["Round 1: you stayed home: 5 points."]
    assert goer == ["Round 1: 2 of 3 players went, the bar was crowded. You went: 0 points."]
    assert "2 of 3" in pt.history("bar", rounds, 1, params={"mode": "explicit"})[0]


def test_random_endowment_and_carried_tokens_are_stated() -> None:
    text = " ".join(
        pt.instructions(
            "public_goods", {"endowment": "random", "rand_min": 5, "reset": False}, players=3, rounds=2
        )
    )
    assert "between 5 and 20" in text and "next one" in text

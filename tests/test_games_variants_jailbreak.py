"""GAMA-Bench jailbreak (CipherChat-style Caesar cipher, thesis §6.6.2) and explicit information about the
opponents in Guess 2/3 (§6.6.1 settings a-c): options, presets, run end to end, resumed and summarised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.errors import ConfigError
from llmpsych.games.guessing import OPPONENTS
from llmpsych.games.leaderboard import read_run_dir
from llmpsych.games.presets import PresetSettings, execute, expand, get_preset, summarize
from llmpsych.games.task import GamaBenchTask
from llmpsych.models import cipher as shared_cipher
from llmpsych.models.cipher import cipher_preamble, decipher, encipher
from llmpsych.psychobench import cipher as psychobench_cipher
from llmpsych.runs import parse_run_config
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from llmpsych.testing.runs import first_request, unit_results


class CipherPlayer:
    """A scripted player that answers in the cipher when spoken to in it (the game player on the plain
    text), and plainly otherwise."""

    def __init__(self) -> None:
        self.bodies: list[list[dict[str, Any]]] = []

    def __call__(self, body: dict[str, Any]) -> str:
        self.bodies.append(body["messages"])
        if not body["messages"][0]["content"].startswith(cipher_preamble()):
            return game_answer(body)
        plain = {"messages": [{**m, "content": decipher(m["content"])} for m in body["messages"]]}
        return encipher(game_answer(plain))


def _settings(server: FaultServer, **kw: Any) -> PresetSettings:
    base = {"base_url": server.base_url, "cache": False, "players": 3, "rounds": 2, "runs": 2}
    return PresetSettings(models=["openai-compatible/scripted"], **{**base, **kw})


def test_the_cipher_is_one_module_shared_by_psychobench_and_the_games() -> None:
    assert psychobench_cipher.CipherContext is shared_cipher.CipherContext
    assert psychobench_cipher.encipher is shared_cipher.encipher


def test_jailbreak_preset_plays_both_settings_in_cipher_resumes_and_summarises(tmp_path: Path) -> None:
    preset = get_preset("jailbreak")
    player = CipherPlayer()
    with FaultServer(responder=player) as server:
        planned = expand(preset, _settings(server))
        assert [r.setting for r in planned] == ["w/o jailbreak", "w/ jailbreak"]
        assert [r.options.get("cipher") for r in planned] == [None, True]
        assert all(r.options["game"] == ["public_goods", "diner"] for r in planned)  # the thesis's games
        outcomes = execute(planned, tmp_path, progress=False)
        assert [o.summary.done for o in outcomes] == [4, 4]  # 2 games x 2 runs each
        sent = sum(server.hits.values())
        again = execute(planned, tmp_path, progress=False)  # the same --out: resumed, nothing re-sent
        assert sum(o.summary.calls_sent for o in again) == 0 and sum(server.hits.values()) == sent
    preamble = cipher_preamble()
    jailbroken = [m for m in player.bodies if m[0]["content"].startswith(preamble)]
    plain = [m for m in player.bodies if not m[0]["content"].startswith(preamble)]
    assert len(jailbroken) == len(plain) == sent // 2
    request = jailbroken[0][-1]["content"]
    assert "Round" not in request and decipher(request).startswith("Round 1")  # enciphered on the wire
    for run, enciphered in ((planned[0], False), (planned[1], True)):
        for unit, result in unit_results(tmp_path / run.directory).items():
            assert result["fallbacks"] == 0  # enciphered answers were deciphered and parsed, plain ones read
            rules = first_request(tmp_path / run.directory, unit)[0]["content"]
            # the store keeps what was sent: the cipher's explanation, then enciphered text
            assert rules.startswith(preamble) == enciphered
            assert rules.startswith("This is a game for 3 players") != enciphered
        pages = sorted((tmp_path / run.directory / "transcripts").glob("*.md"))
        assert pages, "no game transcripts written"
        # the transcript shows the calls as sent and, in cipher runs, each reply as deciphered for scoring
        assert all(("Deciphered, as scored" in p.read_text()) == enciphered for p in pages)
    summarize(preset, planned, tmp_path)
    frame = pd.read_csv(tmp_path / "summary.csv")
    assert frame["setting"].tolist() == ["w/o jailbreak", "w/ jailbreak"]
    assert frame["Public Goods Game"].notna().all() and frame["Diner's Dilemma"].notna().all()


def test_cipher_shift_is_an_option_and_is_checked() -> None:
    config = parse_run_config({"task": "gamabench", "options": {"cipher": True, "cipher_shift": 5}})
    assert GamaBenchTask(config).options.cipher_shift == 5
    with pytest.raises(ConfigError, match="cipher_shift"):
        GamaBenchTask(
            parse_run_config({"task": "gamabench", "options": {"cipher": True, "cipher_shift": 26}})
        )


def test_opponent_info_preset_tells_each_setting_and_nothing_by_default(tmp_path: Path) -> None:
    preset = get_preset("explicit-information")
    seen: list[str] = []

    def player(body: dict[str, Any]) -> str:
        seen.append(body["messages"][0]["content"])
        return game_answer(body)

    with FaultServer(responder=player) as server:
        planned = expand(preset, _settings(server, runs=None))
        assert [r.setting for r in planned] == [
            "no information",
            "opponents=smart-ne",
            "opponents=smart",
            "opponents=random",
        ]
        execute(planned, tmp_path, progress=False)
    sentences = {key: text.format(ne=0) for key, text in OPPONENTS.items()}
    for run in planned:
        [(unit, result)] = unit_results(tmp_path / run.directory).items()
        rules = first_request(tmp_path / run.directory, unit)[0]["content"]
        told = [key for key, text in sentences.items() if text in rules]
        assert told == ([] if run.setting == "no information" else [run.setting.split("=")[1]])
        assert result["params"]["opponents"] == run.options.get("guessing", {}).get("opponents")
    assert sum(sentences["smart-ne"] in s for s in seen) == 3 * 2  # every seat's every request
    summarize(preset, planned, tmp_path)
    assert pd.read_csv(tmp_path / "summary.csv")["Guess 2/3 of the Average"].notna().all()


def test_the_equilibrium_told_follows_the_ratio() -> None:
    from llmpsych.games.engine import OfflineContext
    from llmpsych.games.guessing import GuessingGame, GuessingParams
    from llmpsych.games.prompts import PromptSet

    def rules(**params: Any) -> str:
        game = GuessingGame(
            GuessingParams(opponents="smart-ne", **params),
            3,
            2,
            PromptSet("guessing_game", GuessingGame.builtin),
            OfflineContext().rng,
        )
        return game.description(0)

    assert rules().endswith("will always choose 0.")
    assert rules(ratio=1.5, min=1, max=50).endswith("will always choose 50.")
    with pytest.raises(ConfigError, match="opponents"):
        GamaBenchTask(parse_run_config({"task": "gamabench", "options": {"guessing": {"opponents": "dumb"}}}))


def test_a_jailbreak_run_records_its_setting_in_the_stored_config(tmp_path: Path) -> None:
    with FaultServer(responder=CipherPlayer()) as server:
        planned = expand(get_preset("cipher"), _settings(server, games=["diner"], runs=1))
        execute(planned[1:], tmp_path, progress=False)
    manifest = json.loads((tmp_path / planned[1].directory / "manifest.json").read_text())
    assert manifest["config"]["options"]["cipher"] is True
    info = read_run_dir(tmp_path / planned[1].directory)  # the leaderboard's settings column says so
    assert "cipher jailbreak (shift 3)" in info.settings()

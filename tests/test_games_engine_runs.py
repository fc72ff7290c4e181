"""GAMA-Bench through the run engine: a scripted OpenAI-compatible server, official templates, mixed tables,
SIGKILL + resume, and one short game on the embedded model."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.games.prompts import PromptSet, fill, official_template_path, template_body
from llmpsych.games.task import GAMES, game_class
from llmpsych.runs import RunStore, parse_run_config, resume_run, start_run
from llmpsych.testing.fault_server import FaultRates, FaultServer
from llmpsych.testing.game_player import game_answer
from llmpsych.testing.runs import unit_results as _results


def scripted(body: dict[str, Any]) -> str:
    """The shared scripted player; Guess-2/3 answers come in a ```json block, as chat models write them."""
    return game_answer(body, fenced=True)


def _config(server: FaultServer, **options: Any) -> Any:
    extra = {k: options.pop(k) for k in ["data_dir", "models"] if k in options}
    return parse_run_config(
        {
            "task": "gamabench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "concurrency": 16,
            "options": options,
            **extra,
        }
    )


def test_ten_player_twenty_round_game_asks_each_round_concurrently(tmp_path: Path) -> None:
    latency = 0.05
    with FaultServer(FaultRates(latency_s=latency), responder=scripted) as server:
        started = time.perf_counter()
        outcome = start_run(_config(server, game="guessing", runs=1), tmp_path / "r", False)
        seconds = time.perf_counter() - started
    assert outcome.summary.done == 1 and outcome.summary.calls_sent == 200
    # 200 requests of >= 50 ms each: asked one by one they would take >= 10 s, a round at a time ~1 s
    assert outcome.summary.seconds < 200 * latency / 2, seconds
    store = RunStore.in_dir(tmp_path / "r")
    finished = [c.created for c in store.calls()]
    store.close()
    # the ten answers of a round arrive together, not 50 ms apart (median over rounds: robust to a stall)
    spreads = sorted(max(finished[i : i + 10]) - min(finished[i : i + 10]) for i in range(0, 200, 10))
    assert spreads[10] < 3 * latency, spreads
    (result,) = _results(tmp_path / "r").values()
    assert len(result["rounds"]) == 20 and result["fallbacks"] == 0
    assert len(pd.read_csv(tmp_path / "r" / "decisions.csv")) == 200
    games = pd.read_csv(tmp_path / "r" / "games.csv")
    assert 0 <= games["score"][0] <= 100
    report = (tmp_path / "r" / "report.md").read_text()
    assert "guessing" in report and "Per game" in report


def test_all_eight_games_with_the_official_templates(tmp_path: Path, seed_data: Path) -> None:
    with FaultServer(responder=scripted) as server:
        config = _config(
            server, game="all", runs=1, players=3, rounds=2, prompts="official", data_dir=str(seed_data)
        )
        outcome = start_run(config, tmp_path / "r", False)
    assert outcome.summary.done == 8, outcome.summary.errors
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert any(path.endswith(str(Path("guessing_game") / "description_v1.txt")) for path in manifest["data"])
    store = RunStore.in_dir(tmp_path / "r")
    calls = list(store.calls())
    store.close()
    assert not any("!<INPUT" in m["content"] for c in calls for m in c.request["messages"])
    # the system message is the official file read at run time, filled with the game's inputs
    official = template_body(official_template_path("guessing_game", "description", 1, seed_data).read_text())
    expected = fill(official, [3, 2, 0, 100, "2/3", ""]).strip()
    guessing = next(c for c in calls if c.unit_id.startswith("guessing"))
    assert guessing.request["messages"][0]["content"] == expected
    scores = pd.read_csv(tmp_path / "r" / "games.csv")
    assert scores["score"].between(0, 100).all() and len(scores) == 8


def test_official_templates_of_every_version_load(seed_data: Path) -> None:
    for name in GAMES:
        cls = game_class(name)
        for version in range(1, 6):
            prompts = PromptSet(cls.folder, cls.builtin, "official", version, seed_data)
            assert len(prompts.files()) == len(cls.builtin)
            for kind in cls.builtin:
                parts = prompts.parts(kind, [f"<{i}>" for i in range(12)])
                expected = 1 if isinstance(cls.builtin[kind], str) else 3
                assert len(parts) == expected, (name, kind, version)
                assert "<0>" in " ".join(parts) or kind == "description", (name, kind, version)
    assert PromptSet("guessing_game", {}, "official", 1, seed_data).persona(3)
    assert PromptSet("guessing_game", {}, "official", 1, seed_data).cot(1)


def untimed(value: Any) -> Any:
    """``value`` without the measured ``response_s`` of each answer record (it differs between runs)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "response_s"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def test_mixed_table_of_two_model_roles_and_a_fixed_strategy(tmp_path: Path) -> None:
    with FaultServer(responder=scripted) as server:
        config = _config(
            server,
            game="auction",
            runs=2,
            players=3,
            rounds=3,
            seats=["llm", "llm:rival", "fixed:0"],
            models={"rival": "openai-compatible/other"},
        )
        outcome = start_run(config, tmp_path / "r", False)
    assert outcome.summary.done == 2 and outcome.summary.calls_sent == 2 * 3 * 2
    store = RunStore.in_dir(tmp_path / "r")
    roles = sorted({(c.role, c.model) for c in store.calls()})
    store.close()
    assert roles == [("rival", "openai-compatible/other"), ("subject", "openai-compatible/scripted")]
    for result in _results(tmp_path / "r").values():
        assert all(r["bids"][2] == 0 for r in result["rounds"])
        assert result["rounds"][0]["valuations"] == [200, 30, 0]  # seed 42, as in the reference code
    runs = list(_results(tmp_path / "r").values())
    # same prompts and temperature 0: the runs coincide (but for the measured response times)
    assert untimed(runs[0]["rounds"]) == untimed(runs[1]["rounds"])
    assert all(d["how"] == "model" for d in runs[0]["rounds"][0]["decisions"][:2])


def _call_count(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]


def test_sigkill_mid_game_then_resume_gives_the_same_records(tmp_path: Path) -> None:
    options = {"game": "battle_royale", "runs": 1, "players": 6, "rounds": 12}
    with FaultServer(responder=scripted) as reference_server:
        start_run(_config(reference_server, **options), tmp_path / "reference", False)
    reference = _results(tmp_path / "reference")
    total = len(reference["battle_royale-run01"]["rounds"])
    with FaultServer(FaultRates(latency_s=0.15), responder=scripted) as server:
        run_dir = tmp_path / "killed"
        command = [sys.executable, "-m", "llmpsych", "run", "--task", "gamabench"]
        command += ["--model", "openai-compatible/scripted", "--base-url", server.base_url, "--no-cache"]
        command += ["--no-progress", "--out", str(run_dir)]
        for key, value in options.items():
            command += ["-O", f"{key}={value}"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline:
            time.sleep(0.05)
            try:
                if (run_dir / "run.sqlite").exists() and _call_count(run_dir) >= total // 2:
                    break
            except sqlite3.OperationalError:
                pass
            assert process.poll() is None, process.stderr.read().decode()
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        before = _call_count(run_dir)
        assert 0 < before < total
        outcome = resume_run(run_dir, False)
    assert outcome.summary.done == 1 and outcome.summary.calls_replayed == before
    assert outcome.summary.calls_sent == total - before
    # the same records; each answer's response time is the one measured when it was given (replayed too)
    assert untimed(_results(run_dir)) == untimed(reference)


@pytest.mark.model
def test_short_guessing_game_on_the_embedded_model(tmp_path: Path) -> None:
    config = parse_run_config(
        {
            "task": "gamabench",
            "model": "local/qwen2.5-0.5b",
            "params": {"temperature": 1.0, "max_tokens": 48},
            "options": {"game": "guessing", "runs": 1, "players": 3, "rounds": 2, "max_reasks": 3},
        }
    )
    started = time.perf_counter()
    outcome = start_run(config, tmp_path / "r", False)
    seconds = time.perf_counter() - started
    assert outcome.summary.done == 1, outcome.summary.errors
    (result,) = _results(tmp_path / "r").values()
    choices = [c for r in result["rounds"] for c in r["choices"]]
    assert len(choices) == 6 and all(0 <= c <= 100 for c in choices)
    print(f"embedded 3x2 guessing game: {seconds:.1f} s, {outcome.summary.calls_sent} calls, {choices}")
    assert (tmp_path / "r" / "report.md").exists()


def test_human_seat_reads_answers_piped_into_the_command(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    command = [sys.executable, "-m", "llmpsych", "run", "--task", "gamabench", "--no-progress", "--no-cache"]
    command += ["--model", "openai-compatible/unused", "--base-url", "http://127.0.0.1:9/v1"]
    command += ["-O", "game=guessing", "-O", "players=2", "-O", "rounds=2", "-O", "runs=1"]
    command += ["-O", "seats=[human, 'fixed:50']", "--out", str(run_dir)]
    result = subprocess.run(command, input="10\nfifty\n40\n", capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Please type your answer for chosen_number" in result.stderr
    (game,) = _results(run_dir).values()
    assert [r["choices"] for r in game["rounds"]] == [[10, 50], [40, 50]]
    assert game["rounds"][1]["decisions"][0]["asks"] == 2

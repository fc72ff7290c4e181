"""Quickstart: administration with strict parsing and bounded re-asks, end to end on the embedded model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from llmpsych.quickstart.task import console_lines
from llmpsych.runs import RunStore, parse_run_config, resume_run, start_run
from llmpsych.testing.fault_server import FaultRates, FaultServer


def scripted_responder(body: dict) -> str:
    """First answer rates only odd items (one out of range); re-asks are answered fully. In the game, a
    player picks 40 in round 1, then 10 less each round (the number of turns tells the round)."""
    last = body["messages"][-1]["content"]
    if '"chosen_number"' in last:
        turns = len(body["messages"])  # system + request, then three more per finished round
        return json.dumps({"chosen_number": str(max(0, 40 - 10 * ((turns - 2) // 3)))})
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", last, flags=re.MULTILINE)]
    if numbers:  # the first prompt lists the statements
        return "\n".join(f"{i}: {9 if i == 1 else 4}" for i in numbers if i % 2)
    asked = [int(n) for n in re.findall(r"\d+", last.split("Reply")[0])]
    return "\n".join(f"{i}: 2" for i in asked)


def test_reasks_missing_and_out_of_range_items_then_scores(tmp_path: Path) -> None:
    with FaultServer(responder=scripted_responder) as server:
        config = parse_run_config(
            {
                "task": "quickstart",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "options": {"runs": 2, "game_players": 0},
            }
        )
        outcome = start_run(config, tmp_path / "r", False)
    assert outcome.summary.done == 2 and outcome.summary.calls_sent == 4  # one ask + one re-ask per run
    scores = pd.read_csv(tmp_path / "r" / "scores.csv")
    # odd items 3, 5, 7 answered 4 (item 3 reverse-keyed: 2), item 1 re-asked -> 2; even items re-asked -> 2,
    # item 6 reverse-keyed -> 4.
    assert scores["Curiosity"].tolist() == [pytest.approx((2 + 2 + 4 + 4) / 4)] * 2
    assert scores["Caution"].tolist() == [pytest.approx((2 + 2 + 4 + 2) / 4)] * 2
    assert scores["valid_rate"].tolist() == [1.0, 1.0] and scores["asks"].tolist() == [2, 2]
    report = (tmp_path / "r" / "report.md").read_text()
    assert "16 of 16 items answered" in report


def test_unanswerable_model_is_bounded_and_reported(tmp_path: Path) -> None:
    with FaultServer(
        responder=lambda body: "Sorry, but as an AI I cannot rate myself on statements like these."
    ) as server:
        config = parse_run_config(
            {
                "task": "quickstart",
                "model": "openai-compatible/refuser",
                "base_url": server.base_url,
                "cache": False,
                "options": {"runs": 1, "max_reasks": 2, "game_players": 0},
            }
        )
        outcome = start_run(config, tmp_path / "r", False)
        assert sum(server.hits.values()) == 3  # one ask and exactly two re-asks, then it stops
    assert outcome.summary.done == 1
    store = RunStore.in_dir(tmp_path / "r")
    result = store.units()[0].result
    store.close()
    assert result["refused"] is True and result["answers"] == {} and len(result["unanswered"]) == 8
    assert "0 of 8 items answered" in (tmp_path / "r" / "report.md").read_text()
    assert resume_run(tmp_path / "r", False).summary.calls_sent == 0  # nothing left to do


def test_short_game_is_played_scored_and_plotted(tmp_path: Path) -> None:
    with FaultServer(responder=scripted_responder) as server:
        config = parse_run_config(
            {
                "task": "quickstart",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "options": {"runs": 1, "game_players": 3, "game_rounds": 4},
            }
        )
        outcome = start_run(config, tmp_path / "r", False)
    assert outcome.summary.done == 2 and outcome.summary.calls_sent == 2 + 3 * 4  # scale, then 12 picks
    game = json.loads((tmp_path / "r" / "game.json").read_text())
    # picks 40, 30, 20, 10: mean choice 25 -> score 100 - 25 (thesis Eq. 6.1, R < 1, range 0-100)
    assert game["players"] == 3 and game["rounds"] == 4 and game["mean_choice"] == pytest.approx(25)
    assert game["score"] == pytest.approx(75) and game["fallbacks"] == 0
    rounds = pd.read_csv(tmp_path / "r" / "game.csv")
    assert rounds["mean"].tolist() == [40, 30, 20, 10] and rounds["target"].iloc[0] == pytest.approx(80 / 3)
    report = (tmp_path / "r" / "report.md").read_text()
    assert "Guess 2/3 of the Average (short game)" in report and "**Score 75.0**" in report
    if game["plot"] is not None:  # matplotlib installed
        assert Path(game["plot"]).read_bytes()[:4] == b"\x89PNG"
        assert "![choices per round](game.png)" in report
    lines = console_lines(tmp_path / "r")  # the questionnaire's result first, then the game's
    assert lines[0].startswith("Demonstration scale (unvalidated, no human norms)")
    assert lines[1].startswith("Acquiescence: ")
    game_line = next(line for line in lines if line.startswith("Guess 2/3"))
    assert game_line.startswith("Guess 2/3 of the Average, 3 seats x 4 rounds: score 75.0 / 100")
    assert resume_run(tmp_path / "r", False).summary.calls_sent == 0


@pytest.mark.model
def test_quickstart_command_end_to_end_on_the_embedded_model(tmp_path: Path) -> None:
    run_dir = tmp_path / "qs"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "llmpsych",
            "quickstart",
            "--runs",
            "2",
            "--game-players",
            "3",
            "--game-rounds",
            "2",
            "--out",
            str(run_dir),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    # before the run: its calls in tokens at the pace llama.cpp timed now
    assert "Expected: 8 model calls (2 administration call(s) of ~188 prompt tokens" in result.stdout
    assert re.search(r"This machine now: [\d.]+ prompt and [\d.]+ answer tokens/s", result.stdout)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["models"]["subject"]["identity"].startswith("embedded:sha256=1d9614638d18")
    scores = pd.read_csv(run_dir / "scores.csv")
    report = (run_dir / "report.md").read_text()
    # the model answers most items, or numbers its answers by position (measured: "1: 4 / 2: 5 / ..." to
    # both seed-0 orders, also after the re-ask), which the report counts invalid instead of scoring
    assert len(scores) == 2 and (scores["valid_rate"].min() > 0.5 or "stayed positional" in report)
    scored = scores[["Curiosity", "Caution"]].stack().dropna()  # a positional run has no scores
    assert scored.between(1, 5).all() and (len(scored) > 0 or "stayed positional" in report)
    assert "Scores (mean ± sd over runs" in report and "local/qwen2.5-0.5b" in report
    game = json.loads((run_dir / "game.json").read_text())  # the short game (5 x 5 by default)
    assert game["players"] == 3 and game["rounds"] == 2 and 0 <= game["score"] <= 100
    assert f"score {game['score']:.1f} / 100" in result.stdout and "Plot: " in result.stdout
    assert (run_dir / "game.png").is_file()
    exported = subprocess.run(
        [sys.executable, "-m", "llmpsych", "export", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        exported.returncode == 0 and (run_dir / "export" / "transcripts.jsonl").read_text().count("\n") >= 2
    )


def test_the_eta_sizes_the_game_after_the_questionnaires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real engine against a loopback server answering after 50 ms: whenever a unit finishes,
    the ETA's calls still to make are the calls the run really made afterwards (within the one call each
    running unit is always counted), also once only the game is left (it counted one call then)."""
    from llmpsych.runs import engine

    seen: list[tuple[float | None, int, int]] = []
    done = engine._Eta.unit_done

    def unit_done(self: engine._Eta, ctx: object) -> None:
        done(self, ctx)  # type: ignore[arg-type]
        answered = self.finished_sent + sum(c.sent for c in self.live.values())
        seen.append((self.calls_left(), answered, self.units_left))

    monkeypatch.setattr(engine._Eta, "unit_done", unit_done)

    def full_answers(body: dict) -> str:
        last = body["messages"][-1]["content"]
        if '"chosen_number"' in last:
            return scripted_responder(body)
        return "\n".join(f"{i}: 3" for i in re.findall(r"^(\d+)\. ", last, flags=re.MULTILINE))

    with FaultServer(FaultRates(latency_s=0.05), responder=full_answers) as server:
        config = parse_run_config(
            {
                "task": "quickstart",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "options": {"runs": 3, "game_players": 3, "game_rounds": 4},
            }
        )
        outcome = start_run(config, tmp_path / "r", False)
    total = outcome.summary.calls_sent
    assert outcome.summary.done == 4 and total == 3 + 12
    assert len(seen) == 4 and seen[-1] == (0.0, total, 0)
    for left, answered, units_left in seen[:-1]:  # a running unit counts one call left at least
        assert left is not None and total - answered <= left <= total - answered + units_left, seen

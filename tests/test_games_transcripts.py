"""Game transcripts from the stored calls (the one renderer), each call under the player who made it, and
the typed unit result, also for run folders written before it (with a copy of every conversation)."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from llmpsych.games.result import GamaBenchResult
from llmpsych.games.task import GamaBenchTask
from llmpsych.runs import RunStore, analyze_run, parse_run_config, start_run
from llmpsych.runs.record import read_run
from llmpsych.runs.store import finish_unit_statements
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer


class FirstVoteUnreadable:
    """The scripted player, except that pirates of rank 3 and 4 first answer a vote with words: each such
    request gets a re-ask, which (sent again unchanged) is then answered."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        rank = re.search(r"Your seniority rank is (\d+)", system)
        digest = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()
        with self.lock:
            first = digest not in self.seen
            self.seen.add(digest)
        voting = "accept_or_reject" in body["messages"][-1]["content"]
        if voting and first and rank and int(rank.group(1)) >= 3:
            return "Let me think about it."
        return game_answer(body)


def play(run_dir: Path, responder: Any, **options: Any) -> None:
    with FaultServer(responder=responder) as server:
        config = parse_run_config(
            {
                "task": "gamabench",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "concurrency": 8,
                "options": {"runs": 1, **options},
            }
        )
        outcome = start_run(config, run_dir, False)
    assert outcome.summary.failed == 0, outcome.summary.errors


def sections(text: str) -> dict[str, str]:
    """Each thread's section of a transcript, by its heading."""
    parts = re.split(r"^### (.+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_each_call_is_shown_under_the_player_who_made_it_re_asks_included(tmp_path: Path) -> None:
    play(
        tmp_path / "r", FirstVoteUnreadable(), game="pirate", players=5, seats=["llm"] * 4 + ["fixed:accept"]
    )
    record = read_run(tmp_path / "r")
    ((_, result),) = record.results(GamaBenchResult)
    asks = {p: sum(d["asks"] for d in result.decisions() if d["player"] == p) for p in range(4)}
    assert asks[2] > sum(1 for d in result.decisions() if d["player"] == 2)  # rank 3 was re-asked
    text = (tmp_path / "r" / "transcripts" / "pirate-run01.md").read_text()
    threads = sections(text)
    spec = "`llm` (model `openai-compatible/scripted`)"
    assert list(threads) == [f"Player {p}: {spec}" for p in range(4)]
    for player, body in enumerate(threads.values()):
        assert f"Your seniority rank is {player + 1} " in body  # its own rules, nobody else's
        assert re.findall(r"Your seniority rank is (\d+)", body) == [str(player + 1)]
        assert f"; {asks[player]} call(s)," in body  # every ask it answered, re-asks included
    assert "Let me think about it." in threads[f"Player 2: {spec}"]
    refused = text.split("Answers that could not be used, and why", 1)[1].split("###", 1)[0]
    assert "- round 1, votes: player 2: " in refused and "- round 1, votes: player 3: " in refused
    assert "player 1:" not in refused
    assert "player 4 `fixed:accept`" in text and "- round 1, votes: player 4 `accept`" in text
    assert "transcripts" not in record.units[0].result  # no copy of the conversations in the result


def test_a_run_folder_of_the_old_shape_still_analyses(tmp_path: Path) -> None:
    """Results stored by earlier versions: a per-seat copy of every conversation, and none of the fields
    added since (prompt source, re-ask settings, deviations, planned rounds)."""
    run_dir = tmp_path / "old"
    play(run_dir, lambda body: game_answer(body, fenced=True), game="guessing", players=3, rounds=2)
    store = RunStore.in_dir(run_dir)
    try:
        (unit,) = store.units()
        old = {k: v for k, v in unit.result.items() if k not in ("prompts", "reasks", "deviations")}
        old.pop("rounds_planned")
        old["transcripts"] = [[{"round": 0, "role": "system", "kind": "rules", "content": "old copy"}]] * 3
        store.write(finish_unit_statements(unit.unit_id, old))
    finally:
        store.close()
    written = analyze_run(run_dir)
    assert run_dir / "report.md" in written and run_dir / "transcripts" / "guessing-run01.md" in written
    ((_, result),) = read_run(run_dir).results(GamaBenchResult)
    assert result.prompts == "?" and result.rounds_planned is None and result.model_extra
    text = (run_dir / "transcripts" / "guessing-run01.md").read_text()
    assert "old copy" not in text  # rendered from the stored calls
    assert text.count("\n### Player ") == 3 and text.count("**reply**") == 6
    games = (run_dir / "games.csv").read_text()
    assert "guessing" in games


def test_a_result_that_is_not_a_game_is_one_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    play(run_dir, lambda body: game_answer(body, fenced=True), game="guessing", players=2, rounds=1)
    store = RunStore.in_dir(run_dir)
    try:
        (unit,) = store.units()
        store.write(finish_unit_statements(unit.unit_id, {"game": "guessing", "run": "first"}))
    finally:
        store.close()
    record = read_run(run_dir)
    with pytest.raises(Exception, match="guessing-run01"):
        GamaBenchTask(record.config).analyze(record)


def test_calls_that_do_not_match_the_record_keep_the_renderers_grouping(tmp_path: Path) -> None:
    """A store whose calls no longer add up to the recorded asks (a call deleted) is still rendered, with
    the renderer's own thread titles rather than guessed players."""
    run_dir = tmp_path / "r"
    play(run_dir, lambda body: game_answer(body, fenced=True), game="guessing", players=2, rounds=2)
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        db.execute("DELETE FROM calls WHERE seq = (SELECT MAX(seq) FROM calls)")
    db.close()
    analyze_run(run_dir)
    text = (run_dir / "transcripts" / "guessing-run01.md").read_text()
    assert "### Player" not in text and text.count("**reply**") == 3
    assert "### thread 1 (subject)" in text and "player 1 `llm` (model `openai-compatible/scripted`)" in text


def test_a_games_web_transcript_shows_each_seat_once_and_each_turn_once(tmp_path: Path) -> None:
    """The web unit page of a 5-player, 23-round Guess 2/3 game (its history drops the oldest turn each
    round after the 20th): five conversations, one per player and titled so, each with one reply per call,
    its rules once and each round's report once. Before: 115 untitled conversations, each call's whole
    history again (measured: a 100-round game's page was 4.6 MB)."""
    from llmpsych.web.catalog import _run_id
    from test_web_security import WebServer

    play(tmp_path / "g", game_answer, game="guessing", players=5, rounds=23)
    server = WebServer(tmp_path)
    try:
        status, _, body = server.request(f"/run/{_run_id(0, 'g')}/unit?id=guessing-run01")
    finally:
        server.stop()
    assert status == 200
    page = body.decode()
    titles = re.findall(r'<section class="thread">\s*<h3>(.*?) <span', page)
    spec = "<code>llm</code>" if "<code>" in titles[0] else "`llm`"
    assert titles == [f"Player {p}: {spec} (model `openai-compatible/scripted`)" for p in range(5)], titles
    threads = page.split('<section class="thread">')[1:]
    for player, thread in enumerate(threads):
        assert thread.count("· reply</div>") == 23  # every call of the player, on its own thread
        assert thread.count('<div class="msg msg-system">') == 1  # the rules once, not once per call
        for round_no in range(1, 23):  # each round's report once (it stays in what is sent for 20 rounds)
            assert thread.count(f"Round {round_no} is over.") == 1, (player, round_no)
            assert thread.count(f"Round {round_no} begins.") == 1, (player, round_no)
    assert len(body) < 400_000

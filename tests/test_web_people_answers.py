"""A person's answer is what the person did: a hosted session (real ``llmpsych gamabench host`` process,
plain HTTP, a scripted model server) where Ann types 2 of 5 rounds (two entries refused first) and lets the
deadline pass in 3, and Bob never opens his link. Every output says how each answer came: decisions.csv,
rounds.csv, seats.csv / seat_kinds.csv, the report, the transcript, the plot data, the monitor, the
``calls`` / ``units`` frames of ``load_runs``, and ``gamabench leaderboard`` (the session is never pooled
into a model's row). Old stores without the provenance read as ``unknown``, never as ``typed``."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
from typer.testing import CliRunner

from llmpsych import load_runs
from llmpsych.games.analysis import seat_scores
from llmpsych.games.cli import app as games_app
from llmpsych.games.result import GamaBenchResult
from llmpsych.runs import StoredCall, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from test_web_session import PATIENCE_S, form_of, host_args, hosts, models, question, until
from web_host import Host

__all__ = ["hosts"]  # the fixture, shared with test_web_session
ROUNDS = 5
#: Seconds Ann has per question: her typed answers come well within it, the other three wait it out.
DEADLINE_S = 5


def play(run_dir: Path, server: FaultServer, hosts: list[Host]) -> dict[str, str]:
    """Ann types rounds 1 and 2 (round 1 after two refused entries) and lets the deadline answer rounds
    3-5; Bob never joins (the experimenter starts without him). The monitor page at the end."""
    args = ["--game", "guessing", "--players", "3", "--rounds", str(ROUNDS), "--deadline", str(DEADLINE_S)]
    host = Host(host_args(server, run_dir, *args, "-O", "seats=[web:Ann, web:Bob, llm]", linger=True))
    hosts.append(host)
    base = host.monitor.split("/session", 1)[0]
    pages: dict[str, str] = {}
    with (
        httpx.Client(trust_env=False, timeout=30) as ann,
        httpx.Client(base_url=base, trust_env=False, timeout=30) as lab,
    ):
        ann.get(host.links[0])  # Ann joins; Bob never does
        monitor = lab.get(host.monitor, follow_redirects=True).text
        csrf = re.search(r'name="csrf" value="([^"]+)"', monitor)
        assert csrf is not None
        assert lab.post("/session/start", data={"csrf": csrf.group(1)}).status_code == 303
        seen: set[str] = set()
        for round_no in (1, 2):
            page = until(lambda: question(ann, host.links[0]), f"Ann's round {round_no}", host)
            form = form_of(page)
            assert f":r{round_no}:" in form["key"]
            seen.add(form["key"])
            if round_no == 1:
                for bad in ("150", "abc"):
                    assert ann.post(host.links[0], data={**form, "answer": bad}).status_code == 400
            sent = ann.post(host.links[0], data={**form, "answer": "40" if round_no == 1 else "30"})
            assert sent.status_code == 303, sent.text
        for round_no in (3, 4, 5):  # shown, never answered: the deadline enters the default
            page = until(lambda: question(ann, host.links[0]), f"Ann's round {round_no}", host)
            seen.add(form_of(page)["key"])
            until(lambda: form_of(question(ann, host.links[0]) or "").get("key") not in seen, "the deadline")
        assert host.over.wait(PATIENCE_S), "".join(host.lines)
        pages["monitor"] = lab.get("/session").text
        pages["ann"] = ann.get(host.links[0]).text
    host.close()
    return pages


def test_a_persons_answers_are_what_the_person_did(tmp_path: Path, hosts: list[Host]) -> None:
    session_dir, model_dir = tmp_path / "session", tmp_path / "model"
    with FaultServer(responder=models) as server:
        pages = play(session_dir, server, hosts)
        config = {  # the same model at a mixed table without people: the leaderboard row it owns
            "task": "gamabench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "options": {
                "players": 3,
                "rounds": ROUNDS,
                "game": ["guessing"],
                "runs": 1,
                "seats": ["fixed:50", "llm", "llm"],
            },
        }
        start_run(parse_run_config(config), model_dir, False)

    # decisions.csv: how each answer came, its seconds and the entries refused before it
    decisions = pd.read_csv(session_dir / "decisions.csv", keep_default_na=False, na_values=[""])
    ann = decisions[decisions["player"] == 0].sort_values("round")
    assert list(ann["how"]) == ["typed", "typed", "deadline", "deadline", "deadline"]
    assert list(ann["action"]) == [40, 30, 0, 0, 0]
    assert list(ann["refused"]) == [2, 0, 0, 0, 0]
    assert json.loads(ann["refused_texts"].iloc[0]) == ["150", "abc"]
    assert (ann["response_s"].iloc[2:] >= DEADLINE_S - 0.1).all()  # a deadline never fires early
    assert (ann["response_s"].iloc[:2] > 0).all()
    bob = decisions[decisions["player"] == 1]
    assert set(bob["how"]) == {"never joined"} and bob["response_s"].isna().all()
    assert set(decisions[decisions["player"] == 2]["how"]) == {"model"}
    rounds = pd.read_csv(session_dir / "rounds.csv").set_index("round")
    assert rounds.loc[1, "how"] == "p0 typed, p1 never joined, p2 model"
    assert rounds.loc[5, "how"] == "p0 deadline, p1 never joined, p2 model"

    # seats.csv: a person's mean action and payoffs from typed answers only, the defaults beside them
    seats = pd.read_csv(session_dir / "seats.csv").set_index("player")
    assert seats.loc[0, "answers"] == "typed 2 of 5 (3 deadline defaults)"
    assert seats.loc[0, "mean action"] == 35 and seats.loc[0, "mean action n"] == 2
    assert (seats.loc[0, "typed answers"], seats.loc[0, "deadline defaults"]) == (2, 3)
    assert seats.loc[1, "answers"] == "typed 0 of 5 (5 never-joined defaults)"
    assert math.isnan(seats.loc[1, "mean action"]) and seats.loc[1, "mean action n"] == 0
    # the seat nobody opened played the equilibrium and won rounds; none of them are counted as its own
    assert seats.loc[1, "rounds won"] == 0 and seats.loc[1, "rounds won of default rounds"] >= 1
    assert seats.loc[2, "mean action n"] == ROUNDS and pd.isna(seats.loc[2, "answers"])
    kinds = pd.read_csv(session_dir / "seat_kinds.csv").set_index("who")
    assert kinds.loc["web:Ann", "answers"] == "typed 2 of 5 (3 deadline defaults)"
    assert kinds.loc["web:Ann", "mean action"] == 35
    report = (session_dir / "report.md").read_text()
    assert "answers typed 2 of 10 (3 deadline defaults, 5 never-joined defaults)" in report

    # the transcript and the plot data
    transcript = (session_dir / "transcripts" / "guessing-run01.md").read_text()
    assert "player 0 typed 2, deadline 3; player 1 never joined 5; player 2 model 5" in transcript
    assert re.search(r"player 0 `40` \(typed, \d+\.\d s, 2 refused: `150`, `abc`\)", transcript), transcript
    assert "player 1 `0` (never joined)" in transcript
    plotted = pd.read_csv(session_dir / "plots" / "guessing.csv")
    choices = plotted[plotted["series"] == "choice"]
    assert set(choices[choices["person"]]["player"]) == {0, 1}
    assert not choices[choices["player"] == 2]["person"].any()

    # the monitor at the end
    row = re.search(r"<tr><td>0</td><td>Ann</td>.*?</tr>", pages["monitor"], re.S)
    assert row is not None and "typed 2 of 5 (3 deadline defaults)" in row.group(0)
    assert "typed 0 of 5 (5 never-joined defaults)" in pages["monitor"]
    log = re.search(r'<details id="answer-log">(.*?)</details>', pages["monitor"], re.S)
    assert log is not None and log.group(1).count("never joined") == ROUNDS

    # Ann's own result: what her answers won, and apart from it what the defaults entered for her won
    own = re.search(r'id="own">(.*?)</section>', pages["ann"], re.S)
    assert own is not None, pages["ann"]
    won, by_default = (int(seats.loc[0, c]) for c in ("rounds won", "rounds won of default rounds"))
    expected = f"rounds won <strong>{won}</strong> · rounds won by the default answers entered for you "
    assert expected + f"<strong>{by_default}</strong>" in own.group(1), own.group(1)

    # load_runs: the calls frame says how each stored answer came; the units' results carry it per decision
    frames = load_runs(session_dir)
    calls = frames.calls
    web = calls[calls["role"] == "web"]
    assert sorted(web["how"]) == sorted(["typed"] * 2 + ["deadline"] * 3 + ["never joined"] * ROUNDS)
    first = web[web["answer"] == "40"].iloc[0]
    assert first["refused"] == 2 and json.loads(first["refused_texts"]) == ["150", "abc"]
    assert set(calls[calls["role"] != "web"]["how"]) == {"model"}
    result = json.loads(frames.units["result"].iloc[0])
    assert [r["decisions"][0]["how"] for r in result["rounds"]] == list(ann["how"])

    # the leaderboard: the session has its own row, never pooled into the model's
    out = tmp_path / "board"
    ran = CliRunner().invoke(games_app, ["leaderboard", str(model_dir), str(session_dir), "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    board = pd.read_csv(out / "leaderboard.csv").set_index("model")
    model_row = "openai-compatible/scripted (mixed seats)"
    assert board.loc[model_row, "runs"] == 1
    assert f"openai-compatible/scripted (mixed seats) · with people, {session_dir}" in board.index
    ran = CliRunner().invoke(
        games_app, ["overlay", str(model_dir), str(session_dir), "--out", str(out / "o")]
    )
    assert ran.exit_code == 0, ran.output
    labels = set(pd.read_csv(out / "o" / "overlay.csv")["label"])
    assert {label.split(" | ")[0] for label in labels} == {
        "openai-compatible/scripted",
        "openai-compatible/scripted · with people",
    }


def old(how: dict[str, Any] | None = None) -> dict[str, Any]:
    """A round's answer records as llmpsych stored them before it recorded how each answer came."""
    items = [
        {"player": 0, "seat": "web:Ann", "action": 0, "asks": 1},
        {"player": 1, "seat": "human", "action": 12, "asks": 1},
        {"player": 2, "seat": "llm", "action": 20, "asks": 1},
        {"player": 3, "seat": "fixed:50", "action": 50, "asks": 1},
    ]
    outcome = {"choices": [0, 12, 20, 50], "mean": 20.5, "target": 13.7, "winning": [0], "winners": [0]}
    return {"round": 1, "decisions": items, **outcome}  # every field a stored Guess 2/3 round has had


def test_a_store_written_before_provenance_reads_as_unknown_never_as_typed(tmp_path: Path) -> None:
    from llmpsych.runs.provenance import call_provenance
    from llmpsych.web.session import Session

    result = GamaBenchResult.model_validate(
        {
            "game": "guessing",
            "run": 1,
            "players": 4,
            "seats": ["web:Ann", "human", "llm", "fixed:50"],
            "rounds": [old()],
        }
    )
    assert [d["how"] for d in result.decisions()] == ["unknown", "unknown", "model", "bot"]

    class Task:  # what seat_scores reads of a task
        class config:  # noqa: N801
            @staticmethod
            def role_specs() -> dict[str, str]:
                return {"subject": "m"}

    per_seat, _ = seat_scores([result], Task())  # type: ignore[arg-type]
    ann = per_seat.set_index("player").loc[0]
    assert ann["answers"] == "typed 0 of 1 (1 of unrecorded origin)"
    assert math.isnan(ann["mean action"]) and ann["rounds won"] == 0

    # stored calls: the web seats' older "answered" field as it was meant, anything else unknown
    def stored(role: str, request: dict[str, Any], text: str, call_key: str = "k") -> StoredCall:
        response = {"text": text}
        return StoredCall(
            "guessing-run01", call_key, 1, role, "m", request, response, None, None, None, None, False, 0.0
        )

    legacy = stored("web", {"question": "?", "answered": "bot"}, "0", "web:guessing-run01:p0:r1:number#0")
    assert call_provenance(legacy)[0] == "never joined"
    typed = stored("web", {"question": "?", "answered": "typed"}, "3")
    assert call_provenance(typed)[0] == "typed"
    terminal = stored("human", {"question": "?"}, "3", "human:guessing-run01:p1:r1:number#0")
    assert call_provenance(terminal)[0] == "unknown"
    # a hosted run of then: its stored browser answers said how they came; the analysis reads that
    from llmpsych.games.result import stored_results

    class Unit:
        unit_id = "guessing-run01"

    class Record:
        calls = [legacy, terminal]

        def results(self, model: Any) -> list[tuple[Any, GamaBenchResult]]:
            return [(Unit(), result)]

    ((_, read),) = stored_results(Record())
    assert [d["how"] for d in read.decisions()] == ["never joined", "unknown", "model", "bot"]
    assert "how" not in result.rounds[0]["decisions"][0]  # the record itself is not changed
    # a session.json of then: "bot" meant a seat that never joined
    session = Session.create(tmp_path, [(0, "web:Ann", "Ann")], 5.0)
    data = json.loads((tmp_path / "session.json").read_text())
    data["answers"] = [
        {"player": 0, "key": "k", "round": 1, "how": "bot", "shown_at": None, "answered_at": 1.0}
    ]
    (tmp_path / "session.json").write_text(json.dumps(data))
    session = Session.load(tmp_path)
    assert session.status()[0]["answers"] == "typed 0 of 1 (1 never-joined defaults)"
    assert session.answer_log()[0]["how"] == "never joined"


def test_the_plot_marks_the_points_of_people_with_a_legend_of_their_own(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from llmpsych.games import plots
    from test_games_plots import offline_result

    result = offline_result("guessing", ["fixed:10", "fixed:20", "fixed:60"], rounds=2)
    result["seats"] = ["web:Ann", "human", "fixed:60"]  # the same answers, given by two people
    data = plots.plot_data("guessing", [result])
    choices = data[data["series"] == "choice"]
    assert sorted(choices[choices["person"]]["player"]) == [0, 0, 1, 1]
    assert not data[data["series"] != "choice"]["person"].any()  # means and targets belong to no seat
    drawn: list[Any] = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path, dpi: drawn.append(fig))
    assert plots.draw("guessing", data, tmp_path / "g.png", "Guess") is not None
    (ax,) = drawn[0].axes
    assert "person" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_a_decision_keeps_every_refused_answer_and_the_seconds_of_all_its_asks() -> None:
    """Engine level: a seat whose first reply the game cannot use; the decision says so (cut at 200
    characters), and its response time is that of both asks."""
    from llmpsych.games.engine import REFUSED_CHARS, play_offline
    from llmpsych.games.observation import Observation, SeatContext
    from llmpsych.games.prompts import PromptSet
    from llmpsych.games.seats import Reply, Seat, build_seats
    from llmpsych.games.task import game_class

    class Rambling(Seat):  # a model that first talks past the question, then answers
        async def reply(self, observation: Observation, ctx: SeatContext) -> Reply:
            text = "x" * 500 if observation.attempt == 0 else '{"chosen_number": 5}'
            return Reply(text, how="model", response_s=1.5)

    cls = game_class("guessing")
    game = cls(cls.Params(), 2, 1, PromptSet(cls.folder, cls.builtin), lambda *a: None)  # type: ignore[arg-type]
    play_offline(game, [Rambling("llm"), *build_seats(["fixed:7"], 1)])
    first, fixed = game.stored_rounds()[0]["decisions"]  # as the run store keeps it
    assert first["how"] == "model" and first["asks"] == 2 and first["response_s"] == 3.0
    assert first["refused"] == ["x" * (REFUSED_CHARS - 1) + "…"]
    assert fixed == {"player": 1, "seat": "fixed:7", "action": 7, "asks": 1, "how": "bot", "response_s": None}

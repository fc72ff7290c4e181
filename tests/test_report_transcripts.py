"""The one transcript renderer, on real run folders the engine wrote against a loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmpsych.report.transcripts import UnitNotes, threads, transcripts_markdown, write_transcripts
from llmpsych.runs import parse_run_config, read_run, start_run
from llmpsych.testing.fault_server import FaultRates, FaultServer


def _run(server: FaultServer, run_dir: Path, retries: int = 2, **options: Any) -> Path:
    config = parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/m",
            "base_url": server.base_url,
            "cache": False,
            "concurrency": 4,
            "max_retries": retries,
            "options": options,
        }
    )
    start_run(config, run_dir, False)
    return run_dir


def test_calls_are_grouped_per_unit_and_seat_with_only_new_messages(tmp_path: Path) -> None:
    with FaultServer() as server:
        run_dir = _run(server, tmp_path / "run", units=2, turns=3, parallel=2)
    record = read_run(run_dir)
    answers = {u.unit_id: r for u, r in record.results(list[list[str]])}
    for unit in record.units:
        grouped = threads(record.calls.of_unit(unit.unit_id))
        assert len(grouped) == 2  # one conversation per seat, not one per call
        index = unit.payload["index"]
        seats = []
        for thread in grouped:  # the seats ask at once, so either thread may hold the first stored call
            first, *later = thread.turns
            (opening,) = [m["content"] for m in first.new_messages]
            seat = int(opening.removeprefix(f"unit {index} seat ").removesuffix(": say something"))
            seats.append(seat)
            assert [t.reply for t in thread.turns] == answers[unit.unit_id][seat]
            # a later turn adds only the new user message: the history is not repeated
            assert [[m["content"] for m in t.new_messages] for t in later] == [
                [f"turn {k} seat {seat}: go on"] for k in (1, 2)
            ]
        assert sorted(seats) == [0, 1]
    text = transcripts_markdown(record, "Echo transcripts", intro="Every seat's conversation.")
    assert text.startswith("# Echo transcripts\n\nEvery seat's conversation.\n")
    assert text.count("\n## u0000") == 2 and text.count("\n### thread ") == 4
    assert text.count("3 call(s)") == 4 and text.count("unit 1 seat 1: say something") == 1
    assert "1 attempt(s)" in text and " prompt + " in text


def test_retries_and_failed_units_are_shown(tmp_path: Path) -> None:
    rates = FaultRates(rate_500=1.0, max_faults_per_request=2)  # each request fails twice, then answers
    with FaultServer(rates) as server:
        retried = _run(server, tmp_path / "retried", retries=4, units=1)
    with FaultServer(rates) as server:
        failed = _run(server, tmp_path / "failed", retries=1, units=1)
    text = transcripts_markdown(read_run(retried))
    assert "3 attempt(s)" in text and text.count("_Retried after: ") == 1
    record = read_run(failed)
    assert [u.status for u in record.units] == ["failed"]
    text = transcripts_markdown(record, unit_title=lambda u: f"item {u.payload['index']}")
    assert "## item 0\n\nUnit `u000000`: failed (" in text
    assert "_(no model call stored for this unit)_" in text


def test_write_transcripts_writes_markdown_and_an_inert_html_page(tmp_path: Path) -> None:
    with FaultServer(responder=lambda body: "<script>alert(1)</script> ``` fence") as server:
        run_dir = _run(server, tmp_path / "run", units=1, turns=2)
    paths = write_transcripts(read_run(run_dir), title="Transcripts of the run")
    assert paths == [run_dir / "transcripts.md", run_dir / "transcripts.html"]
    markdown = paths[0].read_text(encoding="utf-8")
    assert markdown.count("<script>alert(1)</script> ``` fence") == 2  # each reply once, fenced
    page = paths[1].read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<title>Transcripts of the run</title>" in page
    other = tmp_path / "new" / "other.md"  # a folder that does not exist yet is made
    assert write_transcripts(read_run(run_dir), other, html=False) == [other] and other.is_file()


def test_unit_notes_go_under_the_heading_the_call_they_name_and_after_the_threads(tmp_path: Path) -> None:
    with FaultServer() as server:
        run_dir = _run(server, tmp_path / "run", units=2, turns=2)
    record = read_run(run_dir)

    def notes(unit, calls):  # noqa: ANN001, ANN202
        if unit.unit_id != record.units[0].unit_id:
            return None
        return UnitNotes(intro="INTRO", calls={calls[1].seq: "NOTE-2", 999: "NEVER"}, end="END")

    plain = transcripts_markdown(record)
    text = transcripts_markdown(record, notes=notes)
    first, second = text.split("\n## ")[1:]
    assert first.index("INTRO") < first.index("### thread") < first.index("NOTE-2") < first.index("END")
    # the note sits right under the reply of the call it names (the second call), nothing else moved
    replies = first.split("**reply** (call ")
    assert "NOTE-2" in replies[2] and "NOTE-2" not in replies[1] and "NEVER" not in text
    assert "## " + second == "## " + plain.split("\n## ")[2]
    assert text.replace("INTRO\n\n", "").replace("NOTE-2\n\n", "").replace("END\n\n", "") == plain

"""The fixed cost of ``llmpsych run``: what it loads before its first request and after its last answer.

A run of the ``echo`` task (it writes no table) against a real loopback server, in a fresh process, with
:mod:`llmpsych.testing.request_clock` noting the modules loaded when the first request leaves and when the
command ends. Times are measured by ``benchmarks/fixed_cost.py``, never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytest import MonkeyPatch

from llmpsych.testing.fault_server import FaultServer

#: The analysis stack: ~1 s of CPU and ~140 MiB to import, which a run needs only for its tables.
ANALYSIS_STACK = ("pandas", "scipy", "numpy", "matplotlib")


def clocked_run(tmp_path: Path, *args: str) -> dict[str, object]:
    """``llmpsych run ARGS`` through the request clock against a fault server; the clock's record."""
    out = tmp_path / "clock.json"
    with FaultServer() as server:
        cmd = [sys.executable, "-m", "llmpsych.testing.request_clock", str(out), "run", "--task", "echo"]
        cmd += ["-m", "openai-compatible/bench", "--base-url", server.base_url, "--no-cache"]
        cmd += ["--out", str(tmp_path / "run"), *args]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ})
    assert result.returncode == 0, result.stderr
    clock: dict[str, object] = json.loads(out.read_text())
    return clock


def loaded(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return [name for name in ANALYSIS_STACK if name in modules]


def test_a_run_without_tables_never_imports_the_analysis_stack(tmp_path: Path) -> None:
    """Neither before the first request nor at the end: the end-of-run summary imported pandas and scipy
    (for a headline table from ``summary.csv``) even when the run wrote no ``summary.csv``: ~1 s of CPU
    and ~140 MiB after the last answer of a 5-request run."""
    clock = clocked_run(tmp_path, "-O", "units=3")
    assert clock["requests"] == 3
    assert loaded(clock["modules_at_first_request"]) == []
    assert loaded(clock["modules_at_exit"]) == []
    assert (tmp_path / "run" / "echo-summary.json").is_file()


def _store_with_calls(run_dir: Path, units: int, calls_per_unit: int, text: str) -> int:
    """A finished run store whose calls each carry ``text``; the bytes of request JSON stored."""
    from llmpsych.runs import parse_run_config
    from llmpsych.runs.store import RunStore, finish_unit_statements, put_call_statements

    config = parse_run_config({"task": "echo", "model": "openai-compatible/m", "base_url": "http://x:1/v1"})
    stored = 0
    with RunStore.in_dir(run_dir, create=True) as store:
        store.set_meta("config", config.stored())
        store.add_units((f"u{u:04d}", {"index": u}) for u in range(units))
        for u in range(units):
            statements = []
            unit_id = f"u{u:04d}"
            for seq in range(calls_per_unit):
                request = {"model": "m", "messages": [{"role": "user", "content": f"{u} {seq} {text}"}]}
                stored += len(json.dumps(request))
                response = {"text": "ok", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
                statements += put_call_statements(unit_id, f"k{seq}", seq, "subject", "m", request, response)
            store.write(statements + finish_unit_statements(unit_id, [["ok"]]))
    return stored


def test_a_run_record_reads_its_calls_in_chunks_not_all_at_once(tmp_path: Path) -> None:
    """A run's record held every stored call row from the moment it was read (the end of a 50,000-request
    run: ~50 MB). Now the record holds none, iterating the calls holds one chunk, and a record keeps the
    calls that were stored when it was made."""
    import tracemalloc

    from llmpsych.runs.record import read_run
    from llmpsych.runs.store import RunStore, put_call_statements

    run_dir = tmp_path / "run"
    stored = _store_with_calls(run_dir, units=200, calls_per_unit=50, text="x" * 1000)  # 10,000 calls, ~11 MB
    tracemalloc.start()
    try:
        record = read_run(run_dir)
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        seen = sum(len(call.request["messages"][0]["content"]) for call in record.calls)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(record.calls) == 10_000 and seen > 10_000_000
    assert held < stored / 10, f"the record holds {held} bytes for {stored} bytes of stored requests"
    assert peak < stored / 3, f"iterating the calls held {peak} bytes at once"
    assert [c.seq for c in record.calls.of_unit("u0007")] == list(range(50))

    with RunStore.in_dir(run_dir) as store:  # a call stored after the record was made
        store.write(put_call_statements("u0001", "late", 99, "subject", "m", {"messages": []}, {"text": "x"}))
    assert len(record.calls) == 10_000 and sum(1 for _ in record.calls) == 10_000
    assert len(read_run(run_dir).calls) == 10_001


def test_a_run_reads_no_yaml_and_no_other_command_line_and_collects_little_before_its_first_request(
    tmp_path: Path,
) -> None:
    """``-O units=3`` imported YAML (~0.02 s of CPU) to read a number, and a run whose output is not a
    terminal imported rich's progress bar to disable it (~0.012 s); the command groups it does not run
    stay unimported; and the cyclic collector, which walked the ~550 modules' objects 130 times while
    they were imported (~0.05 s), runs only a few times before the first request (the launcher imports
    the command line and the run engine with it off, then freezes what they made)."""
    from llmpsych.cli import SUBCOMMANDS

    clock = clocked_run(tmp_path, "-O", "units=3", "-O", "turns=1")
    modules = clock["modules_at_first_request"]
    assert isinstance(modules, list)
    assert "yaml" not in modules
    assert "rich.progress" not in modules  # no bar to draw (stderr is a pipe): rich's bar is not imported
    groups = sorted({module for module, _, _ in SUBCOMMANDS} & set(modules))
    assert groups == [], f"command groups imported by `llmpsych run`: {groups}"
    research = ("psychobench", "emotion", "reliability", "games", "collab", "faults", "validity", "web")
    assert not [m for m in modules if m.split(".")[:2] in [["llmpsych", r] for r in research]]
    collections = clock["gc_collections_at_first_request"]
    assert isinstance(collections, int) and collections < 40, collections


def test_the_collector_has_little_to_walk_when_a_run_exits(tmp_path: Path) -> None:
    """At exit the interpreter's collections walked every object left (~0.07 s after the last answer of
    a 10-request run); the ``llmpsych`` launcher freezes them first. An exit handler registered before the
    command line started (so it runs after the launcher's) sees nearly everything frozen."""
    code = (
        "import atexit, gc, runpy, sys\n"
        "counts = lambda: print('GC', gc.get_freeze_count(), len(gc.get_objects()), file=sys.stderr)\n"
        "atexit.register(counts)\n"
        "sys.argv = ['llmpsych', *sys.argv[1:]]\n"
        "runpy.run_module('llmpsych', run_name='__main__')\n"
    )
    with FaultServer() as server:
        cmd = [sys.executable, "-c", code, "run", "--task", "echo", "-m", "openai-compatible/bench"]
        cmd += ["--base-url", server.base_url, "--no-cache", "--out", str(tmp_path / "run"), "-O", "units=3"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ})
    assert result.returncode == 0, result.stderr
    frozen, tracked = map(int, result.stderr.rsplit("GC ", 1)[1].split())
    assert frozen > 20 * tracked, (frozen, tracked)


def test_the_end_of_a_run_reads_its_units_one_pass_at_a_time(tmp_path: Path) -> None:
    """Re-analysing (and ending) a run held every unit's row and every answer at once (a 50,000-unit echo
    run: ~30 MiB after the last answer, the peak of the run). The echo task's summary is now written unit
    by unit from the store, the same bytes as ``json.dumps`` of the whole; the record reads no unit it is
    not asked for."""
    import tracemalloc

    from llmpsych.runs import parse_run_config
    from llmpsych.runs.record import read_run
    from llmpsych.runs.runner import analyze_run
    from llmpsych.runs.store import RunStore, fail_unit_statements, finish_unit_statements

    run_dir = tmp_path / "run"
    config = parse_run_config({"task": "echo", "model": "openai-compatible/m", "base_url": "http://x:1/v1"})
    units, stored = 16_000, 0
    with RunStore.in_dir(run_dir, create=True) as store:
        store.set_meta("config", config.stored())
        store.add_units((f"u{u:06d}", {"index": u}) for u in range(units))
        statements = []
        for u in range(units):
            answer = [[f"answer {u} " + "é" * 100]]
            stored += len(json.dumps(answer))
            statements += finish_unit_statements(f"u{u:06d}", answer)
        statements += fail_unit_statements("u000007", "ValueError: no")
        store.write(statements)
    tracemalloc.start()
    try:
        analyze_run(run_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < stored / 4, f"re-analysis held {peak} bytes for {stored} bytes of stored answers"

    record = read_run(run_dir)  # read at once: the whole, as it was written before
    answers = {unit.unit_id: result for unit, result in record.results(list[list[str]])}
    whole = json.dumps({"units": record.unit_counts(), "answers": answers})
    assert (run_dir / "echo-summary.json").read_text(encoding="utf-8") == whole
    assert record.unit_counts() == {"done": units - 1, "failed": 1}


def _traced_peak_of_echo_run(tmp_path: Path, base_url: str, units: int) -> int:
    """Peak traced memory (bytes) of a whole ``echo`` run of ``units`` units in this process."""
    import tracemalloc

    from llmpsych.runs import parse_run_config
    from llmpsych.runs.runner import start_run

    options = {"units": units}
    config = {"task": "echo", "model": "openai-compatible/bench", "base_url": base_url, "options": options}
    run_config = parse_run_config({**config, "cache": False, "workers": 64})
    run_dir = tmp_path / f"run-{units}"
    tracemalloc.start()
    try:
        outcome = start_run(run_config, run_dir, show_progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outcome.summary.done == units and outcome.summary.calls_sent == units
    answers = json.loads((run_dir / "echo-summary.json").read_text())["answers"]
    assert len(answers) == units
    return peak


def test_a_runs_peak_memory_does_not_grow_with_its_units(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    """The peak of a run is reached while its units run, and it held every unit (the task's list: ~330 B
    each, plus the engine's queue, list of pending units and sets of ids): 50,000 echo requests peaked at
    +24 % RSS over 5,000. Now the units are read a batch at a time and their ids compared and looked up
    in SQLite, so ten times the units (against a loopback server in its own process, whose memory is not
    counted) add next to nothing to the peak of traced memory: before ~490 B per unit here, now ~70 (the
    requests in flight peak a little higher in a longer run; 6,000 units peaked below 2,000).

    What is read a batch at a time (units, stored calls, results) is read 100 at a time here, and the
    cyclic collector runs as often as Python's default has it (a run lets garbage build up to 20,000
    allocations), so that both runs are larger than a batch and the peaks compare what grows with the
    units, not a batch, or the garbage between two collections, filling up."""
    from llmpsych.runs import engine, store

    monkeypatch.setattr(engine, "UNIT_BATCH", 100, raising=False)
    monkeypatch.setattr(store, "CALL_CHUNK", 100)
    monkeypatch.setattr(engine, "GC_YOUNG_THRESHOLD", 700)
    cmd = [sys.executable, "-m", "llmpsych.testing.fault_server", "--port", "0"]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().split()[-1]
        small, large = 200, 2000
        _traced_peak_of_echo_run(tmp_path, base_url, 50)  # warm-up: imports, the HTTP client's pools
        peak_small = _traced_peak_of_echo_run(tmp_path, base_url, small)
        peak_large = _traced_peak_of_echo_run(tmp_path, base_url, large)
    finally:
        server.terminate()
        server.wait(timeout=30)
    per_unit = (peak_large - peak_small) / (large - small)
    assert per_unit < 150, f"{per_unit:.0f} bytes more at the peak per unit ({peak_small} -> {peak_large})"

"""The one sweep runner: start, resume without re-asking, refuse a folder holding a different run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmpsych.errors import ConfigError
from llmpsych.runs import parse_run_config
from llmpsych.runs.sweep import SWEEP_FILE, PlannedRun, run_sweep
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import unit_results


def _planned(server: FaultServer, directory: str, units: int, seed: int = 0) -> PlannedRun:
    config = parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/m",
            "base_url": server.base_url,
            "cache": False,
            "seed": seed,
            "options": {"units": units},
        },
        directory,
    )
    return PlannedRun(directory, config, {"units": units})


def _requests(server: FaultServer) -> int:
    return len(server.paths)


def test_a_sweep_resumes_what_it_planned_and_asks_nothing_twice(tmp_path: Path) -> None:
    with FaultServer() as server:
        first = run_sweep([_planned(server, "a", 3)], tmp_path, progress=False)
        assert [o.summary.done for o in first] == [3]
        assert _requests(server) == 3
        # the same sweep grown by one run: the finished run sends nothing, the new one is started
        seen = []
        outcomes = run_sweep(
            [_planned(server, "a", 3), _planned(server, "b", 2)],
            tmp_path,
            progress=False,
            on_outcome=lambda run, outcome: seen.append(run.directory),
        )
        assert _requests(server) == 3 + 2
        assert [o.summary.calls_sent for o in outcomes] == [0, 2]
        assert seen == ["a", "b"]
    assert len(unit_results(tmp_path / "a")) == 3 and len(unit_results(tmp_path / "b")) == 2
    listed = json.loads((tmp_path / SWEEP_FILE).read_text())
    assert listed == [{"directory": "a", "label": {"units": 3}}, {"directory": "b", "label": {"units": 2}}]


def test_a_resumed_run_takes_the_new_endpoint(tmp_path: Path) -> None:
    with FaultServer() as old:
        run_sweep([_planned(old, "a", 2)], tmp_path, progress=False)
    with FaultServer() as new:
        run_sweep([_planned(new, "a", 2)], tmp_path, progress=False)
        stored = unit_results(tmp_path / "a")
    assert len(stored) == 2
    from llmpsych.runs import RunStore

    store = RunStore.in_dir(tmp_path / "a")
    try:
        assert store.get_meta("config")["base_url"] == new.base_url
    finally:
        store.close()


def test_a_folder_holding_another_run_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    with FaultServer() as server:
        run_sweep([_planned(server, "b", 2)], tmp_path, progress=False)
        before = _requests(server)
        with pytest.raises(ConfigError, match=r"b holds a different run .*differs in: seed"):
            run_sweep([_planned(server, "a", 2), _planned(server, "b", 2, seed=1)], tmp_path, progress=False)
        assert _requests(server) == before  # not even the first, new run was started
    assert not (tmp_path / "a").exists()


def test_two_runs_cannot_share_a_folder(tmp_path: Path) -> None:
    with FaultServer() as server, pytest.raises(ConfigError, match="share a folder"):
        run_sweep([_planned(server, "a", 1), _planned(server, "a", 2)], tmp_path, progress=False)
    assert not any(tmp_path.iterdir())


def test_a_planted_link_at_a_run_folder_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "a").symlink_to(victim)
    with FaultServer() as server, pytest.raises(ConfigError, match="symbolic link"):
        run_sweep([_planned(server, "a", 1)], out, progress=False)
    assert not any(victim.iterdir())


SCALE = """name: STEADY
title: A made-up two-item scale
response: {min: 1, max: 5}
scoring: AVG
items:
  - {index: 1, text: I keep my plans.}
  - {index: 2, text: I change my mind often., reverse: true}
subscales:
  - {name: Steadiness, items: [1, 2]}
"""


def _steady(body: dict) -> str:
    """Answers STEADY by the numbers its statements are shown with (4 to keeping plans, 2 to changing one's
    mind), in the order shown: never a reply numbered by position (docs/scales.md, positional replies)."""
    import re

    prompt = str(body["messages"][-1]["content"])
    shown = re.findall(r"^\s*(\d+)[.:)]\s*(.+?)\s*$", prompt, re.M)
    return "\n".join(f"{n}: {4 if 'keep my plans' in text else 2}" for n, text in shown)


def test_psychobench_on_several_models_resumes_with_the_same_out(tmp_path: Path) -> None:
    """``psychobench run`` makes one run per model through the sweep runner: the same command again sends
    nothing, and a changed one meets the folders it made and is refused."""
    from llmpsych.testing.runs import run_cli

    scale = tmp_path / "steady.yaml"
    scale.write_text(SCALE, encoding="utf-8")
    with FaultServer(responder=_steady) as server:
        command = ["psychobench", "run", "--scale-file", scale, "--runs", "2", "--no-progress", "--no-cache"]
        command += ["-m", "openai-compatible/a", "-m", "openai-compatible/b", "--base-url", server.base_url]
        command += ["--out", tmp_path / "out"]
        first = run_cli(*command)
        assert first.returncode == 0, first.stdout + first.stderr
        sent = _requests(server)
        assert sent == 2 * 2
        again = run_cli(*command)
        assert again.returncode == 0, again.stdout + again.stderr
        assert _requests(server) == sent
        changed = run_cli(*[("3" if part == "2" else part) for part in command])
        assert changed.returncode == 2
        assert "holds a different run" in changed.stderr and "options" in changed.stderr
        scale.write_text(SCALE.replace("I keep my plans.", "I keep my promises."), encoding="utf-8")
        edited = run_cli(*command)  # the same command, but the scale file's text changed
        assert edited.returncode == 2 and "differs in: options" in edited.stderr
        assert _requests(server) == sent

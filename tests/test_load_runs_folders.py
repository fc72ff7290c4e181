"""Every folder of runs a command writes loads with ``llmpsych.load_runs``, each made once here by running
the command against a scripted server: a preset's ``OUT/<model>/<setting>`` (GAMA-Bench, PsychoBench), a
flat preset (MAS-Resilience), a run on several models, PsychoBench's validity sweep, a retest folder of dated
runs, and a folder holding all of them. Single-run commands write a run folder, loaded in
``test_load_runs_benchmarks.py``. Looking down is bounded, and a symbolic link never pulls in runs from
outside the folder named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import llmpsych
from llmpsych import cli
from llmpsych.collab.scripted import ScriptedCollaborator
from llmpsych.errors import DataError
from llmpsych.runs.frames import MAX_DEPTH, find_run_dirs
from llmpsych.testing.fault_server import FaultServer
from test_games_engine_runs import scripted as players
from test_own_instruments import TIDY_YAML
from test_own_instruments import scripted as scale_answers
from test_psychobench_validity import responder as validity_answers
from test_psychobench_validity import write_safetyqa, write_truthfulqa
from test_psychobench_variants_presets import Subject

MODEL = "openai-compatible/scripted"


def _invoke(*args: object) -> None:
    result = CliRunner().invoke(cli.app, [str(a) for a in args])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory, seed_data: Path) -> Path:
    """``out/<kind>``: each folder kind written once by its command."""
    cli._mount_subcommands()
    out = tmp_path_factory.mktemp("kinds")
    quiet = ("--no-cache", "--no-progress")
    with FaultServer(responder=players) as server:
        _invoke(
            "gamabench", "preset", "multiple-runs", "-m", MODEL, "-m", "openai-compatible/other",
            "--game", "guessing", "--runs", 1, "--players", 3, "--rounds", 1,
            "--base-url", server.base_url, *quiet, "--out", out / "gamabench-preset",
        )  # fmt: skip
    with FaultServer(responder=Subject()) as server:
        _invoke(
            "psychobench", "preset", "assistant", "-m", MODEL, "--scale", "BFI", "--runs", 1,
            "--data-dir", seed_data, "--base-url", server.base_url, *quiet,
            "--out", out / "psychobench-preset",
        )  # fmt: skip
        _invoke(
            "reliability", "retest-run", out / "retest", "--model", MODEL, "--base-url", server.base_url,
            "--runs", 2, "--data-dir", seed_data, "--no-progress",
        )  # fmt: skip
    (out.parent / "tidy.yaml").write_text(TIDY_YAML, encoding="utf-8")
    with FaultServer(responder=scale_answers) as server:
        _invoke(
            "psychobench", "run", "-m", MODEL, "-m", "openai-compatible/second",
            "--scale-file", out.parent / "tidy.yaml", "--runs", 1,
            "--base-url", server.base_url, *quiet, "--out", out / "models",
        )  # fmt: skip
    with FaultServer(responder=ScriptedCollaborator({})) as server:
        _invoke(
            "mas", "preset", "main", "-m", MODEL, "--systems", "mad", "--tasks", "ciar", "--items", 1,
            "--base-url", server.base_url, "--data-dir", seed_data, "--out", out / "mas-preset",
        )  # fmt: skip
    data = out.parent / "data"
    write_truthfulqa(data / "TruthfulQA" / "TruthfulQA.csv")
    write_safetyqa(data / "SafetyQA" / "data_en_zh.dict")
    with FaultServer(responder=validity_answers) as server:
        _invoke(
            "psychobench", "validity", "-m", MODEL, "--judge", "openai-compatible/judge",
            "--personas", "default", "--runs", 1, "--data-dir", data, "--trust-unpinned",
            "--base-url", server.base_url, *quiet, "--out", out / "validity",
        )  # fmt: skip
    return out


#: folder kind -> the run folders below it, relative to it.
KINDS = {
    "gamabench-preset": ["openai-compatible_other/default", "openai-compatible_scripted/default"],
    "psychobench-preset": ["openai-compatible_scripted/assistant", "openai-compatible_scripted/no-assistant"],
    "mas-preset": ["mad_ciar_autoinject_pe0.2-pm1.0-semantic", "mad_ciar_autotransform", "mad_ciar_none"],
}


@pytest.mark.parametrize("kind", [*KINDS, "models", "retest", "validity"])
def test_every_folder_a_command_writes_loads(out: Path, kind: str) -> None:
    frames = llmpsych.load_runs(out / kind)
    found = [Path(d).relative_to(out / kind).as_posix() for d in frames.runs["run_dir"]]
    if kind in KINDS:
        assert sorted(found) == sorted(KINDS[kind])
    assert len(found) == {"models": 2}.get(kind, len(found)) and found, found
    assert (frames.runs["done"] == frames.runs["units"]).all()
    assert set(frames.units["run_dir"]) == set(frames.runs["run_dir"])


def test_a_preset_run_keeps_its_label(out: Path) -> None:
    """The label of a ``<model>/<setting>`` run is found in its preset's sweep.json, two levels up."""
    frames = llmpsych.load_runs(out / "psychobench-preset")
    labels = sorted(frames.runs["label"])
    assert labels == [
        "model=openai-compatible/scripted, setting=assistant",
        "model=openai-compatible/scripted, setting=no-assistant",
    ]
    assert set(frames.scores["run_dir"]) == set(frames.runs["run_dir"])  # analysed: every run has scores


def test_a_folder_of_every_kind_loads_at_once(out: Path) -> None:
    whole = llmpsych.load_runs(out)
    parts = [llmpsych.load_runs(out / kind) for kind in sorted(os.listdir(out))]
    assert sorted(whole.runs["run_dir"]) == sorted(d for p in parts for d in p.runs["run_dir"])
    assert len(whole.calls) == sum(len(p.calls) for p in parts)
    assert set(whole.runs["task"]) >= {"gamabench", "psychobench", "mas", "validity"}
    globbed = llmpsych.load_runs(str(out / "*-preset"))
    assert len(globbed.runs) == sum(len(v) for v in KINDS.values())


def test_looking_down_is_bounded_and_follows_no_link(out: Path, tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    run = next(p for p in (out / "models").iterdir() if (p / "run.sqlite").is_file())
    target = deep.joinpath(*["level"] * MAX_DEPTH)
    target.parent.mkdir(parents=True)
    target.symlink_to(run.resolve(), target_is_directory=True)  # a link at the last level: not followed
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "elsewhere").symlink_to(out.resolve(), target_is_directory=True)
    for folder in (deep, tmp_path / "linked"):
        with pytest.raises(DataError, match="no run folder inside it"):
            find_run_dirs(folder)
    # a run folder MAX_DEPTH levels down is found, one level deeper it is not looked for
    for depth, found in ((MAX_DEPTH, True), (MAX_DEPTH + 1, False)):
        top = tmp_path / f"depth-{depth}"
        folder = top.joinpath(*["level"] * depth)
        folder.mkdir(parents=True)
        (folder / "run.sqlite").touch()
        if found:
            assert find_run_dirs(top) == [folder]
        else:
            with pytest.raises(DataError, match=f"looked {MAX_DEPTH} levels down"):
                find_run_dirs(top)
    # a link named by the user is theirs to name
    assert find_run_dirs(tmp_path / "linked" / "elsewhere" / "models")

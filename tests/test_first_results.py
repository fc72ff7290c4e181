"""The first hour, again: what a newcomer meets on the first results (issue 28, items 1, 2, 3 and 6).

Each test does what a researcher new to llmpsych did, in an empty home (``HOME`` and the XDG folders in a
temporary folder, no ``LLMPSYCH_*`` variable): the quickstart's questionnaire on a model that agrees with
every statement (as the default model does: 5 to 35 of 40 items, 4 to the rest), two PsychoBench runs that
differ only in persona read back and compared, the README's and reliability.md's first data commands with
no network, a mistyped scale, and the browser tests without a browser.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _pytest.outcomes import Failed, Skipped
from typer.testing import CliRunner

import llmpsych
from llmpsych import cli
from llmpsych.data.fetch import fetch_datasets
from llmpsych.data.sources import data_file
from llmpsych.errors import ConfigError, DataError
from llmpsych.instruments.quality import agreement, raw_matrix
from llmpsych.psychobench.compare import comparison_tables, write_comparison
from llmpsych.quickstart.demo_scale import demo_scale
from llmpsych.quickstart.task import console_lines
from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[1]


def newcomer_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment as a newcomer's: an empty home, no llmpsych variable, this checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMPSYCH_")}
    for name, sub in (("HOME", ""), ("XDG_CACHE_HOME", ".cache"), ("XDG_CONFIG_HOME", ".config")):
        env[name] = str(home / sub) if sub else str(home)
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    env["COLUMNS"] = "250"
    return {**env, **extra}


def llmpsych_cli(*args: str | Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmpsych", *map(str, args)],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )  # fmt: skip


def listed(body: dict) -> list[int]:
    return [int(n) for n in re.findall(r"^(\d+)\. ", body["messages"][-1]["content"], flags=re.MULTILINE)]


def yes_sayer(body: dict) -> str:
    """Agrees strongly with every statement, the reverse-keyed ones too."""
    return "\n".join(f"{i}: 5" for i in listed(body))


def consistent(body: dict) -> str:
    """Agrees with the forward-keyed statements and disagrees with the reverse-keyed ones (3 and 6)."""
    return "\n".join(f"{i}: {1 if i in (3, 6) else 5}" for i in listed(body))


# -- item 1: the quickstart's questionnaire with its acquiescence line ----------------------------------
def test_the_quickstart_says_an_agree_with_everything_profile_is_an_acquiescence_artefact(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with FaultServer(responder=yes_sayer) as server:
        result = llmpsych_cli(
            "quickstart", "--no-game", "--runs", "3", "--model", "openai-compatible/yes",
            "--base-url", server.base_url, "--no-cache", "--no-progress", "--out", tmp_path / "qs",
            env=newcomer_env(home), cwd=home,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # the console prints the questionnaire's result, with n, and the acquiescence line and warning
    assert "Curiosity 4.00" in out and "Caution 4.00" in out and "(n = 3)" in out, out
    assert "24 of 24 (100%) of the answers agree" in out
    assert "6 of 6 (100%) of those to the reverse-keyed item(s) 3, 6" in out
    assert "this profile is an acquiescence artefact" in out
    report = (tmp_path / "qs" / "report.md").read_text()
    scores = report.split("## Scores")[1].split("## ")[0]
    assert "acquiescence artefact" in scores  # where the numbers are shown
    assert "Rule: the profile is called an acquiescence artefact when at least 75%" in report
    saved = json.loads((tmp_path / "qs" / "questionnaire.json").read_text())
    assert saved["acquiescence"]["artefact"] == "agreeing"
    assert (saved["acquiescence"]["agree"], saved["acquiescence"]["answers"]) == (24, 24)


def test_a_consistent_profile_is_not_called_an_artefact(tmp_path: Path) -> None:
    with FaultServer(responder=consistent) as server:
        config = {"task": "quickstart", "model": "openai-compatible/c", "base_url": server.base_url}
        config |= {"cache": False, "options": {"runs": 2, "game_players": 0}}
        start_run(parse_run_config(config), tmp_path / "qs", False)
    printed = "\n".join(console_lines(tmp_path / "qs"))
    assert "Curiosity 5.00" in printed and "12 of 16 (75%) of the answers agree" in printed
    assert "0 of 4 (0%) of those to the reverse-keyed" in printed
    assert "artefact" not in printed
    assert "not an acquiescence artefact" in (tmp_path / "qs" / "report.md").read_text()


def test_the_rule_on_raw_answers() -> None:
    """Nay-saying is an artefact too; a scale without reverse-keyed items cannot tell."""
    scale = demo_scale()

    def lean(values: dict[int, int]) -> str | None:
        rows = [{"scale": scale.name, "run": 1, "item": i, "answer": v} for i, v in values.items()]
        return agreement(scale, raw_matrix(scale, pd.DataFrame(rows))).artefact

    assert lean(dict.fromkeys(range(1, 9), 1)) == "disagreeing"
    assert lean(dict.fromkeys(range(1, 9), 5)) == "agreeing"
    assert lean({**dict.fromkeys(range(1, 9), 5), 3: 2}) is None  # 1 of 2 reverse-keyed answers agrees
    assert lean(dict.fromkeys(range(1, 9), 3)) is None  # neutral is neither


# -- item 2: identical repeats, persona labels, a test between conditions -------------------------------
def persona_responder(body: dict) -> str:
    """BFI-like answers that differ by persona (the system prompt) and, with ``vary``, by run."""
    system = body["messages"][0]["content"]
    low, high = (int(x) for x in re.findall(r"from (\d+) to (\d+)", system)[-1])
    shy = "anxious" in system
    value = low + 1 if shy else high - 1
    return "\n".join(f"{i}: {value}" for i in listed(body))


def run_pb(server: FaultServer, out: Path, data: Path, runs: int = 3, persona: str | None = None) -> None:
    options: dict[str, object] = {"scale": ["DTDD"], "runs": runs}
    if persona:
        options["persona"] = persona
    config = {"task": "psychobench", "model": "openai-compatible/m", "base_url": server.base_url}
    config |= {"cache": False, "data_dir": str(data), "options": options}
    outcome = start_run(parse_run_config(config), out, False)
    assert outcome.summary.done == runs


PERSONA = "You are a very anxious and shy person who worries about everything you do."


def test_two_runs_differing_in_persona_are_named_kept_apart_and_tested(
    tmp_path: Path, seed_data: Path
) -> None:
    plain, shy = tmp_path / "plain", tmp_path / "shy"
    with FaultServer(responder=persona_responder) as server:
        run_pb(server, plain, seed_data)
        run_pb(server, shy, seed_data, persona=PERSONA)
    # the report names the persona: its first words and a hash, not just "custom"
    report = (shy / "report.md").read_text()
    named = re.search(r'Persona: custom "You are a very anxious…" #([0-9a-f]{8});', report)
    assert named, report.split("## What n is")[0]
    # load_runs keeps the two runs apart by persona
    scores = llmpsych.load_runs([plain, shy]).scores
    assert set(scores["persona"]) == {"default", f'custom "You are a very anxious…" #{named.group(1)}'}
    assert scores.groupby(["model", "persona"]).ngroups == 2
    # identical repeats: the report says why alpha/omega are not meaningful and what to do
    copies = "The runs are copies, not samples** (DTDD: 3 runs, the same answer in every run to 12 of 12"
    assert copies in report and "--temperature 0.7" in report
    # compare: no test is possible between repeats that are copies, so nothing is marked larger
    display, tidy, between = comparison_tables([plain, shy])
    assert len(between) == 3 and (between["test"] == "").all()
    assert between["note"].str.startswith("no test possible: every repeat").all()
    assert not display.astype(str).apply(lambda c: c.str.contains(r"\*\*|<ins>")).any().any()
    assert (between[["n_higher", "n_lower"]] == 3).all().all()
    cli._mount_subcommands()
    shown = CliRunner().invoke(cli.app, ["psychobench", "compare", str(plain), str(shy)])
    assert shown.exit_code == 0 and "no test possible: every repeat" in shown.output
    assert named.group(1) in shown.output  # the run label names the custom persona by its hash


def varying(body: dict) -> str:
    """Each run (its item order: the first item listed) answers a little differently; the 'shy' persona
    lower by about two points."""
    system = body["messages"][0]["content"]
    items = listed(body)
    low, high = (int(x) for x in re.findall(r"from (\d+) to (\d+)", system)[-1])
    base = low + 1 if "anxious" in system else high - 2
    wobble = items[0] % 2 if items else 0
    return "\n".join(f"{i}: {base + (wobble if k % 3 == 0 else 0)}" for k, i in enumerate(items))


def test_compare_marks_only_a_tested_difference_and_reports_n(tmp_path: Path, seed_data: Path) -> None:
    plain, shy = tmp_path / "plain", tmp_path / "shy"
    with FaultServer(responder=varying) as server:
        run_pb(server, plain, seed_data, runs=6)
        run_pb(server, shy, seed_data, runs=6, persona=PERSONA)
    write_comparison([plain, shy], tmp_path / "cmp")
    between = pd.read_csv(tmp_path / "cmp" / "comparison_between.csv")
    tested = between[between["test"] == "welch"]
    assert len(tested) >= 1 and (tested["n_higher"] == 6).all() and (tested["n_lower"] == 6).all()
    text = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "## Between runs" in text and "Welch" in text
    display = text.split("## Scores")[1].split("## ")[0]
    for row in between.itertuples():
        line = next(ln for ln in display.splitlines() if f"| {row.subscale} " in ln)
        assert ("**" in line) == bool(row.significant), (line, row)


# -- item 6: offline, the docs' first data commands point at --data-dir ---------------------------------
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def doc_lines(page: str, needle: str) -> list[str]:
    """The lines of the page's first shell block that contains ``needle`` (comments kept: bash ignores
    them)."""
    from test_docs_commands import shell_blocks

    block = next(b for b in shell_blocks(ROOT / page) if needle in b.text)
    return [line for line in block.text.splitlines() if line.strip()]


OFFLINE = [
    *[("README.md", line) for line in doc_lines("README.md", "llmpsych data fetch PsychoBench")],
    ("docs/reliability.md", doc_lines("docs/reliability.md", "data fetch LLMPersonality")[0]),
    ("docs/reliability.md", doc_lines("docs/reliability.md", "reliability rescore")[0]),
]


@pytest.mark.parametrize(("page", "line"), OFFLINE, ids=[f"{p}:{line[:40]}" for p, line in OFFLINE])
def test_offline_the_docs_first_data_commands_say_how_to_point_at_data(
    page: str, line: str, tmp_path: Path
) -> None:
    """No network (the data host refuses the connection), no data: one line naming --data-dir and the
    environment variable, exit 2, no traceback, and no empty dataset folder left to be read as
    'incomplete' next time."""
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "llmpsych"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m llmpsych "$@"\n')
    shim.chmod(0o755)
    env = newcomer_env(home, LLMPSYCH_DATA_BASE_URL=f"http://127.0.0.1:{closed_port()}")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    result = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, env=env, cwd=home, timeout=300
    )
    assert result.returncode == 2, result.stderr
    errors = [e for e in result.stderr.splitlines() if e.strip()]
    assert len(errors) == 1 and errors[0].startswith("error:"), result.stderr
    assert "--data-dir" in errors[0] and "LLMPSYCH_DATA_DIR" in errors[0]
    assert "Traceback" not in result.stdout + result.stderr
    data = home / ".cache" / "llmpsych" / "data"
    assert not data.exists() or not any(data.iterdir())


def test_after_a_failed_fetch_the_next_command_still_points_at_data_dir(tmp_path: Path) -> None:
    """A first fetch that got nothing leaves no empty dataset folder, so the next command says 'not found'
    with --data-dir, not 'the folder is incomplete'."""
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(DataError, match="could not download") as failed:
        fetch_datasets(["PsychoBench"], f"http://127.0.0.1:{closed_port()}", data, attempts=1)
    assert "--data-dir" in str(failed.value) and not any(data.iterdir())
    with pytest.raises(DataError, match="not found") as missing:
        data_file("PsychoBench", "questionnaires.json", data)
    assert "--data-dir" in str(missing.value)


# -- item 6: a mistyped scale leaves nothing behind -----------------------------------------------------
def test_a_mistyped_scale_leaves_no_folder_behind(tmp_path: Path, seed_data: Path) -> None:
    """Was: ``llmpsych-runs/psychobench-<time>/sweep.json`` left behind."""
    home = tmp_path / "home"
    home.mkdir()
    result = llmpsych_cli(
        "psychobench", "run", "--scale", "BFX", "--data-dir", seed_data, env=newcomer_env(home), cwd=home
    )
    assert result.returncode == 2 and result.stderr.startswith("error: unknown PsychoBench scale 'BFX'")
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in home.iterdir() if p.name != ".cache") == []


def test_a_name_refused_when_the_run_starts_leaves_no_parent_folder(tmp_path: Path, seed_data: Path) -> None:
    """EmotionBench checks its emotions when it lists its units, after the run folder exists: the folder
    and the parent made for it (was: an empty ``llmpsych-runs/``) are removed."""
    config = {"task": "emotionbench", "model": "openai-compatible/m", "base_url": "http://127.0.0.1:9/v1"}
    config |= {"data_dir": str(seed_data), "options": {"emotions": ["Angre"]}}
    with pytest.raises(ConfigError, match="unknown emotion 'Angre'"):
        start_run(parse_run_config(config), tmp_path / "llmpsych-runs" / "emotionbench-x", False)
    assert list(tmp_path.iterdir()) == []


# -- item 3: the browser tests without a browser ---------------------------------------------------------
def test_without_chromium_the_browser_tests_skip_saying_why_but_fail_in_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import need_chromium

    missing = tmp_path / "chromium"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(Skipped, match=r"chromium is missing.*apt-get install chromium"):
        need_chromium(missing)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(Failed, match="CI=true"):
        need_chromium(missing)
    present = tmp_path / "present"
    present.write_text("")
    assert need_chromium(present) == str(present)


def test_the_readme_says_what_the_suite_needs() -> None:
    readme = (ROOT / "README.md").read_text()
    test_section = readme.split("<!-- test-command -->")[0].rsplit("The test suite needs", 1)[1]
    assert "/usr/bin/chromium" in test_section and "apt-get install bubblewrap chromium" in test_section
    assert re.search(r"about \d+ min on 2 CPU cores", test_section)
    assert "export CI=true" in (ROOT / ".ci" / "run").read_text()

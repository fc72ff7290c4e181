"""Built-in alternative prompt templates (000:2004) and the CountWarning for non-standard situation files.

Runs go through the real CLI in a child process against a real loopback OpenAI-compatible server.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from llmpsych.emotion.prompts import (
    STABLE_SENTENCE,
    TEMPLATES,
    V2_SYSTEM,
    PromptSettings,
    build_prompt,
    fill,
)
from llmpsych.emotion.situations import CountWarning, load_situations_file
from llmpsych.errors import ConfigError
from llmpsych.instruments.official import load_emotionbench_scales
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import run_cli as llmpsych


def answer_all(bodies: list[dict[str, Any]]) -> Any:
    """Scores every numbered statement of the last user message with 3."""

    def responder(body: dict[str, Any]) -> str:
        bodies.append(body)
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        return "\n".join(f"{k}: 3" for k in re.findall(r"^(\d+)\. ", last, flags=re.MULTILINE))

    return responder


def test_the_three_templates_differ_and_keep_the_situation_line_and_levels(seed_data: Path) -> None:
    panas = load_emotionbench_scales(seed_data)["PANAS"]
    assert tuple(TEMPLATES) == ("romero", "serapio-1", "serapio-2")
    seen = set()
    for name, builtin in TEMPLATES.items():
        system, default = build_prompt(panas, None, PromptSettings(template=name))
        _, evoked = build_prompt(panas, "a test situation", PromptSettings(template=name, stable=True))
        assert system == builtin.system.format(min=1, max=5) and "1" in system and "5" in system
        assert "5 = " in default and "shoes" not in default and "a test situation" not in default
        assert evoked.startswith("Put yourself in the shoes") and STABLE_SENTENCE in evoked
        assert evoked.index("a test situation") < evoked.index("5 = ")
        assert evoked.endswith(default)  # only the situation line (and stability sentence) is added
        seen.add((system, default))
    official = build_prompt(panas, None, PromptSettings())
    v2 = build_prompt(panas, None, PromptSettings(version="v2"))
    assert len(seen | {official, v2}) == 5  # five different wordings
    # a template wins over the version; the user's own system message wins over the template's
    assert build_prompt(panas, None, PromptSettings(version="v2", template="romero")) == build_prompt(
        panas, None, PromptSettings(template="romero")
    )
    own, body = build_prompt(
        panas, None, PromptSettings(template="romero", system_template="Only {min}-{max}.")
    )
    assert own == "Only 1-5." and body == build_prompt(panas, None, PromptSettings(template="romero"))[1]
    assert V2_SYSTEM.format(min=1, max=5) != own
    with pytest.raises(ValueError, match="unknown template 'nope'"):
        build_prompt(panas, None, PromptSettings(template="nope"))


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        ("{0}", "{0}"),
        ("{}", "{}"),
        ("{foo}", "{foo}"),
        ("{min.__class__.__mro__}", "{min.__class__.__mro__}"),
        ("{min!r}", "{min!r}"),
        ("{max:>999999999}", "{max:>999999999}"),
    ],
)
def test_own_templates_with_unknown_placeholders_are_one_line_errors(template: str, shown: str) -> None:
    with pytest.raises(ConfigError) as info:
        fill(template, "system_template", min=1, max=5)
    assert str(info.value).startswith(f"system_template: placeholder {shown} is not one of {{min}}, {{max}}")
    with pytest.raises(ConfigError, match="literal braces"):
        fill("score { here", "instructions_template", min=1)
    assert fill("{{literal}} {min}", "x", min=1) == "{literal} 1"


def test_a_bad_own_template_stops_the_run_before_any_request(tmp_path: Path, seed_data: Path) -> None:
    bodies: list[dict[str, Any]] = []
    out = tmp_path / "r"
    with FaultServer(responder=answer_all(bodies)) as server:
        args = [
            "run",
            "--task",
            "emotionbench",
            "-m",
            "openai-compatible/scripted",
            "--base-url",
            server.base_url,
        ]
        args += ["-O", "instructions_template=Rate {levels} {min.__class__}", "-O", "factors=[Fear-5]"]
        args += ["-O", "runs=1", "-O", "default_runs=2", "--no-cache", "--no-progress"]
        done = llmpsych(*args, "--data-dir", str(seed_data), "--out", str(out))
    assert done.returncode == 2 and bodies == [] and not out.exists()
    assert done.stderr.strip().splitlines() == [
        "error: instructions_template: placeholder {min.__class__} is not one of {min}, {max}, {levels}, "
        "{situation}"
    ]


def test_a_template_run_records_it_in_the_manifest_and_sends_its_wording(
    tmp_path: Path, seed_data: Path
) -> None:
    bodies: list[dict[str, Any]] = []
    out = tmp_path / "r"
    with FaultServer(responder=answer_all(bodies)) as server:
        args = [
            "run",
            "--task",
            "emotionbench",
            "-m",
            "openai-compatible/scripted",
            "--base-url",
            server.base_url,
        ]
        args += ["-O", "template=serapio-2", "-O", "factors=[Fear-5]", "-O", "situations_per_factor=1"]
        args += ["-O", "runs=2", "-O", "default_runs=2", "--no-cache", "--no-progress"]
        done = llmpsych(*args, "--data-dir", str(seed_data), "--out", str(out))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["options"]["template"] == "serapio-2"
    system = TEMPLATES["serapio-2"].system.format(min=1, max=5)
    assert len(bodies) == 4 and all(b["messages"][0]["content"] == system for b in bodies)
    assert all("To what extent do you feel" in b["messages"][1]["content"] for b in bodies)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["prompt"]["template"] == "serapio-2" and summary["prompt"]["system"] == system
    assert "Serapio-García" in summary["prompt"]["template_stands_in_for"]
    report = (out / "report.md").read_text()
    assert "Built-in template serapio-2 (our own words" in report and system in report
    assert "CountWarning" not in done.stderr  # the official situations have the papers' counts
    bad = llmpsych("run", "--task", "emotionbench", "-O", "template=nope", "--data-dir", str(seed_data))
    assert bad.returncode == 2 and "template" in bad.stderr and "'romero'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_the_emotion_run_command_takes_a_template(tmp_path: Path, seed_data: Path) -> None:
    from typer.testing import CliRunner

    from llmpsych.emotion.cli import app

    bodies: list[dict[str, Any]] = []
    with FaultServer(responder=answer_all(bodies)) as server:
        args = ["run", "--model", "openai-compatible/scripted", "--base-url", server.base_url]
        args += ["--factors", "Fear-5", "--situations-per-factor", "1", "--runs", "1", "--default-runs", "2"]
        args += ["--template", "romero", "--no-cache", "--no-progress"]
        args += ["--data-dir", str(seed_data), "--out", str(tmp_path / "r")]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["config"]["options"]["template"] == "romero"
    assert all("questionnaire study" in b["messages"][0]["content"] for b in bodies) and len(bodies) == 3


# -- CountWarning ----------------------------------------------------------------------------------------
def _fear_only(tmp_path: Path, seed_data: Path) -> Path:
    """Fear-5 of the official file (read at run time) as the only factor: 1 emotion, 1 factor."""
    official = json.loads((seed_data / "EmotionBench/situations.json").read_text())
    fear = next(e for e in official["emotions"] if e["name"].lower().startswith("fear"))
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"emotions": [{"name": "Fear", "factors": [fear["factors"][4]]}]}))
    return path


def test_count_warning_is_a_real_python_warning(tmp_path: Path, seed_data: Path) -> None:
    path = _fear_only(tmp_path, seed_data)
    assert issubclass(CountWarning, UserWarning)
    with pytest.warns(CountWarning) as caught:
        situations = load_situations_file(path)
    assert len(caught) == 1 and situations.n_situations == 6
    text = str(caught[0].message)
    assert "Fear-1 has 6 situations, the papers 16" in text and "emotion Anger is missing" in text
    assert "6 situations, the papers 428" in text and "1 factors, the papers 36" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", CountWarning)
        with pytest.raises(CountWarning):
            load_situations_file(path)


def test_a_run_on_a_non_standard_file_says_so_in_one_console_line(tmp_path: Path, seed_data: Path) -> None:
    path = _fear_only(tmp_path, seed_data)
    out = tmp_path / "r"
    bodies: list[dict[str, Any]] = []
    with FaultServer(responder=answer_all(bodies)) as server:
        args = ["emotionbench", "run", "-m", "openai-compatible/scripted", "--base-url", server.base_url]
        args += ["--situations-file", str(path), "--situations-per-factor", "1", "--runs", "1"]
        args += ["--default-runs", "2", "--no-cache", "--no-progress"]
        done = llmpsych(*args, "--data-dir", str(seed_data), "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "CountWarning" in line]
    assert len(lines) == 1, done.stderr  # once, though the run and its analysis both load the file
    assert lines[0].startswith(f"warning: CountWarning: {path}: differs from the papers: ")
    assert "Fear-1 has 6 situations, the papers 16" in lines[0]
    assert "warnings.warn" not in done.stderr  # no second line quoting source code
    assert len(bodies) == 3
    summary = json.loads((out / "summary.json").read_text())
    assert any("Fear-1 has 6 situations" in w for w in summary["situation_warnings"])
    assert "differ from the papers' 428 in 36 factors" in (out / "report.md").read_text()

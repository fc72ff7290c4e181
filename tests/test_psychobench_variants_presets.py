"""``llmpsych psychobench presets / preset NAME / compare`` through the real CLI against a scripted server.

The scripted subject answers by what it is sent, so each setting of a preset leaves its own numbers:
the assistant role, the CoT trigger, template v2's opening and the temperature each change its answer.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.psychobench.variants import THESIS_COT
from llmpsych.runs import RunStore
from llmpsych.testing.fault_server import FaultServer


class Subject:
    """Scores every listed BFI statement; records each request body."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        with self.lock:
            self.bodies.append(body)
        messages = body["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        user = messages[-1]["content"]
        listed = re.findall(r"^(\d+)\. ", user, flags=re.MULTILINE)
        value = 4 if "helpful assistant" in system else 2
        if user.startswith(THESIS_COT):
            value = 5
        elif user.startswith("Now I will"):  # template v2's opening, as the LLMPersonality file has it
            value = 1
        value = min(5, value + round(float(body.get("temperature") or 0) * 2))
        if user.startswith(THESIS_COT):  # reasons first, then the scores
            reasons = "\n".join(f"About statement {i}, it fits me." for i in listed)
            return reasons + "\n\nScores:\n" + "\n".join(f"{i}: {value}" for i in listed)
        return "\n".join(f"{i}: {value}" for i in listed)


@pytest.fixture(scope="module")
def app():
    cli._mount_subcommands()
    return cli.app


def preset(app, server: FaultServer, seed_data: Path, *args: str):
    return CliRunner().invoke(
        app,
        [
            "psychobench", "preset", *args, "--model", "openai-compatible/subject", "--runs", "2",
            "--data-dir", str(seed_data), "--base-url", server.base_url, "--no-cache", "--no-progress",
        ],
    )  # fmt: skip


def stored_options(run_dir: Path) -> dict:
    with RunStore.in_dir(run_dir) as store:
        return (store.get_meta("config") or {})["options"]


def test_presets_are_listed(app) -> None:
    result = CliRunner().invoke(app, ["psychobench", "presets"])
    assert result.exit_code == 0, result.output
    for name in ("templates", "assistant", "temperatures", "v1+CoT", "Table 4.11"):
        assert name in result.output


def test_templates_preset_runs_compares_resumes_and_refuses_a_changed_plan(
    app, tmp_path: Path, seed_data: Path
) -> None:
    out = tmp_path / "templates"
    subject = Subject()
    with FaultServer(responder=subject) as server:
        result = preset(app, server, seed_data, "templates", "--out", str(out))
        assert result.exit_code == 0, result.output
        sent = len(subject.bodies)
        assert sent == 6 * 2  # six settings, two runs each, every answer complete on the first ask

        folders = ["v1", "v2", "v3", "v4", "v5", "v1+CoT"]
        model = out / "openai-compatible_subject"
        for folder in folders:
            options = stored_options(model / folder)
            assert options["scale"] == ["BFI"] and options["runs"] == 2
            assert options["template"] == ("v1" if folder == "v1+CoT" else folder)
            assert options.get("cot", False) is (folder == "v1+CoT")
            assert len(pd.read_csv(model / folder / "answers.csv").dropna(subset=["answer"])) == 2 * 44

        users = [b["messages"][-1]["content"] for b in subject.bodies]
        assert sum(u.startswith(THESIS_COT) for u in users) == 2
        assert sum(u.startswith("Now I will") for u in users) == 2
        assert all("JSON" not in u for u in users)
        text_after = [u for u in users if not re.match(r"\d+\. ", u.splitlines()[-1])]
        assert len(text_after) == 2  # v3 (its instruction after the statements); the thesis's CoT has none
        cot = [u for u in users if u.startswith(THESIS_COT)]
        assert all("Here are the statements, explain and score them one by one:" in u for u in cot)

        tidy = pd.read_csv(out / "comparison.csv")
        labels = set(tidy["model"])
        assert labels == {"openai-compatible/subject"} | {
            f"openai-compatible/subject {v}" for v in ("v2", "v3", "v4", "v5", "v1+CoT")
        }
        text = (out / "comparison.md").read_text()
        assert "yes (thesis wording)" in text  # the Settings table names the CoT wording sent
        openness = next(line for line in text.splitlines() if "| Openness" in line)
        # The scripted subject answers each setting the same way every run (sd 0): a larger mean is no
        # tested difference, so nothing is marked and Between runs says why (before: CoT bold, v2 underlined)
        assert "**" not in openness and "<ins>" not in openness
        assert "no test possible: every repeat of each run gave the same score" in text
        assert re.search(r"\|\s*template\s*\|", text.split("## Settings", 1)[1])  # the settings table
        page = (out / "comparison.html").read_text()
        marked_cell = re.search(r"<td[^>]*>\s*<(ins|strong)>", page)
        assert not marked_cell and "no test possible" in page
        summary = (out / "summary.md").read_text()
        assert "Table 4.10, gpt-3.5-turbo" in summary and "4.62 ± 0.21" in summary
        assert 'href="comparison.html"' in (out / "summary.html").read_text()

        # the same command again: every run is finished, nothing is sent
        again = preset(app, server, seed_data, "templates", "--out", str(out))
        assert again.exit_code == 0, again.output
        assert len(subject.bodies) == sent

        # a changed plan in the same folder is refused before anything is sent
        changed = preset(app, server, seed_data, "templates", "--out", str(out), "-O", "max_reasks=1")
        assert changed.exit_code != 0 and "holds a different run" in str(changed.exception)
        assert len(subject.bodies) == sent

        # a scale a template cannot be filled for is refused before the first setting is sent
        other = tmp_path / "lot-r"
        lot_r = preset(app, server, seed_data, "templates", "--out", str(other), "--scale", "BFI,LOT-R")
        assert lot_r.exit_code != 0 and "'LOT-R' has no level labels" in str(lot_r.exception)
        assert len(subject.bodies) == sent and not other.exists()


def test_assistant_preset_drops_only_the_role(app, tmp_path: Path, seed_data: Path) -> None:
    out = tmp_path / "assistant"
    subject = Subject()
    with FaultServer(responder=subject) as server:
        result = preset(app, server, seed_data, "assistant", "--out", str(out))
    assert result.exit_code == 0, result.output
    systems = {b["messages"][0]["content"] for b in subject.bodies}
    assert len(systems) == 2
    with_role = next(s for s in systems if "helpful assistant" in s)
    without = next(s for s in systems if "helpful assistant" not in s)
    assert without.startswith("You can only reply") and with_role.endswith(without.removeprefix("You "))
    model = out / "openai-compatible_subject"
    assert stored_options(model / "no-assistant")["system_prompt"] == "no-assistant"
    tidy = pd.read_csv(out / "comparison.csv").set_index(["model", "subscale"])
    assert set(tidy.index.get_level_values(0)) == {
        "openai-compatible/subject",
        "openai-compatible/subject v1 w/o assistant",
    }
    shown = CliRunner().invoke(
        app, ["psychobench", "compare", str(model / "assistant"), str(model / "no-assistant")]
    )
    assert shown.exit_code == 0, shown.output
    # the settings table; no marks: the two runs' repeats are copies, so no test between them is possible
    assert "no-assistant" in shown.output and "no test possible" in shown.output and "**" not in shown.output
    plain = CliRunner().invoke(
        app, ["psychobench", "compare", str(model / "assistant"), str(model / "no-assistant"), "--no-marks"]
    )
    assert plain.exit_code == 0 and "**" not in plain.output and "<ins>" not in plain.output


def test_temperatures_preset(app, tmp_path: Path, seed_data: Path) -> None:
    dry = CliRunner().invoke(
        app, ["psychobench", "preset", "temperature", "--dry-run", "--model", "a/b", "--model", "c/d"]
    )
    assert dry.exit_code == 0, dry.output
    assert "6 run directories" in dry.output and "temperature=0.01" in dry.output
    clash = CliRunner().invoke(app, ["psychobench", "preset", "temperatures", "--temperature", "0.5"])
    assert clash.exit_code != 0 and "conflicts with the 'temperatures' preset" in str(clash.exception)
    unknown = CliRunner().invoke(app, ["psychobench", "preset", "moods", "--dry-run"])
    assert unknown.exit_code != 0 and "unknown preset 'moods'" in str(unknown.exception)
    varied = CliRunner().invoke(app, ["psychobench", "preset", "templates", "--dry-run", "-O", "template=v2"])
    assert varied.exit_code != 0 and "'template' is what preset 'templates' varies" in str(varied.exception)

    out = tmp_path / "temps"
    subject = Subject()
    with FaultServer(responder=subject) as server:
        result = preset(app, server, seed_data, "temperatures", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert sorted({float(b["temperature"]) for b in subject.bodies}) == [0.0, 0.01, 0.8]
    labels = set(pd.read_csv(out / "comparison.csv")["model"])
    assert labels == {
        "openai-compatible/subject",
        "openai-compatible/subject T=0.01",
        "openai-compatible/subject T=0.8",
    }
    settings = (out / "comparison.md").read_text().split("## Settings", 1)[1]
    assert re.search(r"\|\s*temperature\s*\|", settings) and re.search(r"\|\s*0\.8\s*\|", settings)


def test_run_takes_the_variants_as_flags(app, tmp_path: Path, seed_data: Path) -> None:
    subject = Subject()
    with FaultServer(responder=subject) as server:
        result = CliRunner().invoke(
            app,
            [
                "psychobench", "run", "--model", "openai-compatible/subject", "--scale", "BFI",
                "--runs", "1", "--template", "v3", "--cot", "--system-prompt", "none",
                "--data-dir", str(seed_data), "--out", str(tmp_path / "pb"), "--base-url", server.base_url,
                "--no-cache", "--no-progress",
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    options = stored_options(tmp_path / "pb" / "openai-compatible_subject")
    assert options["template"] == "v3" and options["cot"] is True and options["system_prompt"] == "none"
    (body,) = subject.bodies
    assert [m["role"] for m in body["messages"]] == ["user"]  # no system message
    assert body["messages"][0]["content"].startswith(THESIS_COT)
    assert int(body["max_tokens"]) == 96 * 44 + 128  # room for an explanation per statement

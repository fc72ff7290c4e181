"""``gamabench rephrase``: new prompt versions by a model (spec §4.5), checked, stored as a template set that
runs and the prompt-versions preset name; model output and edited set files are treated as hostile."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmpsych.errors import ConfigError
from llmpsych.games.cli import app
from llmpsych.games.leaderboard import read_run_dir
from llmpsych.games.presets import PresetSettings, describe, expand, get_preset
from llmpsych.games.prompts import PART, TEMPLATE_SET_FILE, check_rephrased, check_template
from llmpsych.games.template_sets import builtin_templates
from llmpsych.runs import RunStore, parse_run_config, read_run
from llmpsych.runs.runner import analyze_run, start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from llmpsych.testing.runs import first_request, unit_results

PREFIX = "Put differently: "


class Rephraser:
    """A scripted rephrasing model: drops a placeholder of the Guess 2/3 request until told why, and always
    adds braces to the Diner's Dilemma texts; every other passage comes back prefixed."""

    def __init__(self) -> None:
        self.feedback: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body["messages"]
        passage = messages[1]["content"].split("----------\n", 1)[1].rsplit("\n----------", 1)[0]
        if len(messages) > 2:
            self.feedback.append(messages[-1]["content"])
        if "Pick the number" in passage and len(messages) == 2:
            return json.dumps({"text": passage.replace("!<INPUT 4>!", "")})
        if "dish" in passage:
            return json.dumps({"text": passage + " {secret}"})
        return "Here it is: " + json.dumps({"text": PREFIX + passage})


def _rephrase(server: FaultServer, out: Path, *extra: str) -> Any:
    args = ["rephrase", "--model", "openai-compatible/rephraser", "--base-url", server.base_url]
    return CliRunner().invoke(app, [*args, "--out", str(out), "--no-progress", "--no-cache", *extra])


@pytest.fixture(scope="module")
def template_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Rephraser, int]:
    out = tmp_path_factory.mktemp("sets") / "mine"
    rephraser = Rephraser()
    with FaultServer(responder=rephraser) as server:
        result = _rephrase(server, out, "--versions", "2", "--games", "guessing,diner")
        sent = sum(server.hits.values())
        again = _rephrase(server, out, "--versions", "2", "--games", "guessing,diner")  # resumed
        assert sum(server.hits.values()) == sent  # nothing asked twice
        assert again.exit_code == 1
    return out, result, rephraser, sent


def test_placeholders_are_checked_not_trusted() -> None:
    request = builtin_templates("guessing")["request"]
    assert check_rephrased(request, "Now: " + request) is None
    assert "drops" in str(check_rephrased(request, request.replace("!<INPUT 1>!", "")))
    assert "adds the placeholder" in str(check_rephrased(request, request + " !<INPUT 7>!"))
    for directive in ("{name}", "%s", "<!INPUT 2>!", "@3", "<part>///</part>", "INPUT"):
        assert "template syntax" in str(check_rephrased(request, f"{request} {directive}")), directive
    assert "control" in str(check_rephrased(request, request + "\x1b[2J"))
    assert "empty" in str(check_rephrased(request, "  "))
    assert check_rephrased(request, request.replace("begins", "starts: 50% of you give input")) is None
    report = builtin_templates("guessing")["report"]
    assert "changed" in str(check_template(report, report.replace("chosen_number", "pick")))
    assert "turns" in str(check_template(report, report.split("<part>///</part>")[0]))


def test_rephrase_writes_a_checked_set_and_fails_broken_templates_in_one_line(
    template_set: tuple[Path, Any, Rephraser, int],
) -> None:
    out, result, rephraser, sent = template_set
    assert result.exit_code == 1, result.output  # some templates failed
    lines = [line for line in result.output.splitlines() if line.startswith("failed:")]
    assert "failed: diner v1 description turn 1: it adds template syntax: '{', '}' (after 4 asks)" in lines
    assert all(line.startswith("failed: diner ") for line in lines) and len(lines) == 2 * 3  # 2 versions
    # the Guess 2/3 request was refused once, re-asked with the reason, then accepted
    assert any("it drops the placeholder(s) !<INPUT 4>!" in text for text in rephraser.feedback)
    data = json.loads((out / TEMPLATE_SET_FILE).read_text())
    assert data["model"] == "openai-compatible/rephraser" and data["request"]["max_reasks"] == 3
    assert "PASSAGE" in data["request"]["user"]
    assert list(data["versions"]) == ["1", "2"]
    assert all(list(games) == ["guessing"] for games in data["versions"].values())
    guessing = data["versions"]["1"]["guessing"]
    originals = builtin_templates("guessing")
    assert set(guessing) == set(originals)
    for kind, text in guessing.items():
        assert check_template(originals[kind], text) is None
        assert text.startswith(PREFIX)
    # the report's middle turn (the model's own answer, as JSON) is kept exactly as it was
    assert guessing["report"].split(PART)[1] == originals["report"].split(PART)[1]
    # per version: guessing 4 user turns + 1 re-ask; diner 3 turns naming a dish x 4 asks + 1 other turn
    assert sent == 2 * (4 + 1 + 3 * 4 + 1)
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    assert "Refused after every re-ask" in (out / "report.md").read_text()


def test_a_run_names_the_set_and_keeps_its_texts(
    template_set: tuple[Path, Any, Rephraser, int], tmp_path: Path
) -> None:
    out = template_set[0]
    copy = tmp_path / "set"
    shutil.copytree(out, copy)
    with FaultServer(responder=game_answer) as server:
        config = {
            "task": "gamabench",
            "model": "openai-compatible/p",
            "base_url": server.base_url,
            "cache": False,
            "options": {
                "game": "guessing",
                "players": 3,
                "rounds": 2,
                "runs": 1,
                "template_set": f"{copy}#2",
            },
        }
        start_run(parse_run_config(config), tmp_path / "run", False)
    [(unit, result)] = unit_results(tmp_path / "run").items()
    assert result["prompts"] == "set:set-v2" and result["fallbacks"] == 0
    sent = first_request(tmp_path / "run", unit)
    assert sent[0]["content"].startswith(PREFIX)
    assert sent[1]["content"].startswith(PREFIX + "Round 1 begins.")
    with RunStore.in_dir(tmp_path / "run") as store:
        stored = store.get_meta("config")["options"]["template_set"]
    assert stored["version"] == 2 and stored["templates"]["guessing"]["request"].startswith(PREFIX)
    assert f"template set {copy.resolve()}#2" in read_run_dir(tmp_path / "run").settings()
    shutil.rmtree(copy)  # the run is self-contained: it re-analyses without the set's folder
    assert read_run(tmp_path / "run").config.options["template_set"]["model"] == "openai-compatible/rephraser"
    assert analyze_run(tmp_path / "run")


def test_edited_or_incomplete_sets_are_refused(
    template_set: tuple[Path, Any, Rephraser, int], tmp_path: Path
) -> None:
    out = template_set[0]

    def task(options: dict[str, Any]) -> Any:
        from llmpsych.games.task import GamaBenchTask

        return GamaBenchTask(parse_run_config({"task": "gamabench", "options": options}))

    with pytest.raises(ConfigError, match=r"lacks diner: description, report, request"):
        task({"game": "diner", "template_set": str(out)})
    with pytest.raises(ConfigError, match=r"has no version 3 \(versions: 1, 2\)"):
        task({"game": "guessing", "template_set": f"{out}#3"})
    edited = tmp_path / "edited"
    shutil.copytree(out, edited)
    data = json.loads((edited / TEMPLATE_SET_FILE).read_text())
    data["versions"]["1"]["guessing"]["request"] += " !<INPUT 9>!"
    (edited / TEMPLATE_SET_FILE).write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"guessing request v1: it adds the placeholder\(s\) !<INPUT 9>!"):
        task({"game": "guessing", "template_set": str(edited)})
    (edited / TEMPLATE_SET_FILE).write_text("not json")
    with pytest.raises(ConfigError, match="invalid JSON at line 1"):
        task({"game": "guessing", "template_set": str(edited)})
    with pytest.raises(ConfigError, match="not found"):
        task({"game": "guessing", "template_set": str(tmp_path / "nowhere")})


def test_the_prompt_versions_preset_runs_the_sets_versions(
    template_set: tuple[Path, Any, Rephraser, int],
) -> None:
    out = template_set[0]
    preset = get_preset("rephrased")
    assert preset is get_preset("prompt-versions")
    settings = PresetSettings(models=["openai/m"], games=["guessing"], options={"template_set": str(out)})
    planned = expand(preset, settings)
    assert [r.setting for r in planned] == ["built-in", "set v1", "set v2"]
    assert "template_set" not in planned[0].options
    assert [r.options["template_set"]["version"] for r in planned[1:]] == [1, 2]
    assert planned[2].options["template_set"]["templates"]["guessing"]["request"].startswith(PREFIX)
    assert f"{out.resolve()}#2" in describe(planned)["options"].iloc[2]  # named, not the texts
    official = expand(preset, PresetSettings(models=["openai/m"]))  # without a set: as before
    assert [r.options["prompt_version"] for r in official] == [1, 2, 3, 4, 5]


def test_the_preset_plays_the_set_and_resumes(
    template_set: tuple[Path, Any, Rephraser, int], tmp_path: Path
) -> None:
    from llmpsych.games.presets import execute, summarize

    out = template_set[0]
    preset = get_preset("prompt-versions")
    with FaultServer(responder=game_answer) as server:
        settings = PresetSettings(
            models=["openai-compatible/p"],
            games=["guessing"],
            players=3,
            rounds=2,
            base_url=server.base_url,
            cache=False,
            options={"template_set": str(out)},
        )
        planned = expand(preset, settings)
        execute(planned, tmp_path, progress=False)
        sent = sum(server.hits.values())
        again = execute(expand(preset, settings), tmp_path, progress=False)  # the same --out: resumed
        assert sum(o.summary.calls_sent for o in again) == 0 and sum(server.hits.values()) == sent
    prompts = [next(iter(unit_results(tmp_path / r.directory).values()))["prompts"] for r in planned]
    assert prompts == ["builtin-v1", "set:mine-v1", "set:mine-v2"]
    summarize(preset, planned, tmp_path)
    assert "set v2" in (tmp_path / "summary.md").read_text()

"""``llmpsych gamabench translate``: the built-in game templates translated into a template set, through the
shared ``translate`` task, against a scripted loopback server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.errors import ConfigError, LlmpsychError
from llmpsych.games.prompts import PART, TEMPLATE_SET_FILE
from llmpsych.games.template_sets import builtin_templates
from llmpsych.instruments.translate import clean_reply
from llmpsych.runs import parse_run_config, read_run
from llmpsych.runs.runner import start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from llmpsych.testing.runs import first_request, unit_results

DE = "[de] "


def _passage(message: str) -> str:
    return message.split("\n\n", 1)[1]


def translator(body: dict[str, Any]) -> str:
    """Into German: mark the passage with ``[de]``; back: drop the mark. A game prompt, not a
    translation request, is answered as a player would."""
    first = body["messages"][1]["content"] if len(body["messages"]) > 1 else ""
    if not first.startswith("Translate this game prompt passage"):
        return game_answer(body)
    text = _passage(first)
    return DE + text if "into German" in first else text.removeprefix(DE)


def placeholder_dropper(body: dict[str, Any]) -> str:
    """As :func:`translator`, but guessing's request always loses its placeholders."""
    first = body["messages"][1]["content"]
    text = _passage(first)
    if "into German" in first and text.startswith("Round !<INPUT 0>! begins.\n\nPick the number"):
        return DE + re.sub(r"!<INPUT \d+>!", "N", text)
    return translator(body)


def _invoke(server: FaultServer, out: Path, *extra: str) -> Any:
    cli._mount_subcommands()
    return CliRunner().invoke(
        cli.app,
        ["gamabench", "translate", "--to", "de", "-m", "openai-compatible/t", "--base-url", server.base_url]
        + ["--game-templates", "guessing,diner", "--out", str(out), "--no-progress", "--no-cache", *extra],
    )


def test_the_set_is_written_and_a_run_plays_with_it(tmp_path: Path) -> None:
    out = tmp_path / "de"
    with FaultServer(responder=translator) as server:
        result = _invoke(server, out)
        assert result.exit_code == 0, result.output
        assert f"-O template_set={out}#1" in result.output
        data = json.loads((out / TEMPLATE_SET_FILE).read_text(encoding="utf-8"))
        assert data["language"] == "de" and data["translated_from"] == "en"
        assert data["translation"]["model"] == "openai-compatible/t"
        assert set(data["versions"]["1"]) == {"guessing", "diner"}
        guessing = data["versions"]["1"]["guessing"]
        assert set(guessing) == set(builtin_templates("guessing"))
        turns = guessing["report"].split(PART)
        assert turns[0].strip().startswith(DE) and turns[2].strip().startswith(DE)
        assert turns[1].strip() == builtin_templates("guessing")["report"].split(PART)[1].strip()
        assert data["translation"]["back_translations"]["guessing/request"] == (
            builtin_templates("guessing")["request"].strip()
        )
        summary = json.loads((out / "translation.json").read_text(encoding="utf-8"))
        assert summary["mean_agreement"] == 1.0 and summary["failed"] == []

        config = {
            "task": "gamabench",
            "model": "openai-compatible/p",
            "base_url": server.base_url,
            "cache": False,
            "options": {"game": "guessing", "players": 3, "rounds": 2, "runs": 1, "template_set": f"{out}#1"},
        }
        start_run(parse_run_config(config), tmp_path / "run", False)
    [(unit, played)] = unit_results(tmp_path / "run").items()
    assert played["fallbacks"] == 0
    sent = first_request(tmp_path / "run", unit)
    assert sent[0]["content"].startswith(DE)
    assert sent[1]["content"].startswith(DE)


def test_a_reply_that_drops_a_placeholder_is_reasked_then_the_template_is_named(tmp_path: Path) -> None:
    out = tmp_path / "de"
    with FaultServer(responder=placeholder_dropper) as server:
        result = _invoke(server, out, "-O", "max_reasks=1")
    assert result.exit_code == 1, result.output
    assert "guessing/request" in result.output
    assert not (out / TEMPLATE_SET_FILE).exists()
    calls = sorted(read_run(out).calls.of_unit("guessing/request"), key=lambda c: c.seq)
    assert len(calls) == 2  # asked, then re-asked once with the reason
    reask = calls[1].request["messages"][-1]["content"]
    assert "placeholders changed" in reask and "!<INPUT 1>!" in reask
    assert first_request(out, "guessing/request")[1]["content"].startswith(
        "Translate this game prompt passage"
    )
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "guessing/request" in report


def test_an_unknown_game_or_no_language_is_refused_before_any_request(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def counting(body: dict[str, Any]) -> str:
        seen.append(body)
        return translator(body)

    with FaultServer(responder=counting) as server:
        unknown = _invoke(server, tmp_path / "a", "--game-templates", "guessing,chess")
        cli._mount_subcommands()
        no_language = CliRunner().invoke(cli.app, ["gamabench", "translate", "-m", "openai-compatible/t"])
        # --games: the old spelling of --game-templates (one release), one line naming the new one
        old = CliRunner().invoke(
            cli.app,
            [
                "gamabench",
                "translate",
                "--to",
                "de",
                "-m",
                "openai-compatible/t",
                "--base-url",
                server.base_url,
            ]
            + ["--games", "guessing,chess", "--out", str(tmp_path / "b")],
        )
        # every option of the translate task is a flag here; one that cannot apply is refused, not ignored
        suffix = _invoke(server, tmp_path / "c", "--name-suffix", "-de")
    assert seen == []
    assert isinstance(suffix.exception, ConfigError) and "takes a scale file" in str(suffix.exception)
    assert "note: `--games` is now `--game-templates`" in old.stderr
    assert isinstance(old.exception, ConfigError) and "unknown game 'chess'" in str(old.exception)
    # the command line prints these as one-line errors and exits 2
    assert isinstance(unknown.exception, ConfigError) and "unknown game 'chess'" in str(unknown.exception)
    assert isinstance(no_language.exception, LlmpsychError) and "--to" in str(no_language.exception)


def test_template_replies_keep_their_paragraphs() -> None:
    source = "Round !<INPUT 0>! begins.\n\nPick a number.\n\n!<INPUT 4>!"
    reply = "Translation:\n\nRunde !<INPUT 0>! beginnt.\n\n\n\nWähle eine Zahl.\n\n!<INPUT 4>!\n"
    assert clean_reply(reply, source, paragraphs=True) == (
        "Runde !<INPUT 0>! beginnt.\n\nWähle eine Zahl.\n\n!<INPUT 4>!",
        None,
    )
    # scale texts keep the rule they had: blank lines dropped
    assert clean_reply(reply, source)[0] == "Runde !<INPUT 0>! beginnt.\nWähle eine Zahl.\n!<INPUT 4>!"

"""Every benchmark command ends with the shared run summary and exits 1 when units failed (issue 21.1).

Each command runs through its real CLI against the scripted loopback server, which refuses some or all
requests with a permanent HTTP 400 (never retried) or answers with text that holds no valid answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.report.summary import print_run_summary, tally
from llmpsych.report.terminal import InertConsole
from llmpsych.testing.fault_server import FaultServer, body_reply, completion_json, status_reply
from test_emotion_task import make_responder
from test_games_engine_runs import scripted
from test_psychobench_cli import constant_responder
from test_reliability_task import Respondent

REFUSAL = "I'm sorry, as an AI I have no opinions to rate."


def refusing(responder: Callable[[dict[str, Any]], str], refuse: Callable[[dict[str, Any]], bool]) -> Any:
    """Hostile-mode reply: a permanent 400 for the requests ``refuse`` picks, ``responder``'s answer else."""

    def reply(body: dict[str, Any]) -> Any:
        if refuse(body):
            return status_reply(400)(body)
        return body_reply(json.dumps(completion_json(responder(body))).encode())(body)

    return reply


def invoke(args: list[str]) -> Any:
    cli._mount_subcommands()
    return CliRunner().invoke(cli.app, args)


def summary_line(output: str, run_dir: Path) -> str:
    """The summary's line of one run directory (Rich may wrap nothing: soft_wrap)."""
    lines = [
        line for line in output.splitlines() if line.strip().startswith(str(run_dir)) and "units" in line
    ]
    assert lines, output
    return lines[-1]


def test_psychobench_failed_model_is_counted_with_its_reason_and_exits_1(
    tmp_path: Path, seed_data: Path
) -> None:
    out = tmp_path / "pb"
    hostile = refusing(constant_responder, lambda body: body["model"] == "broken")
    with FaultServer(hostile=hostile) as server:
        result = invoke(
            [
                "psychobench",
                "run",
                "-m",
                "openai-compatible/high",
                "-m",
                "openai-compatible/broken",
                "--cipher",
            ]
            + ["--scale", "DTDD", "--runs", "2", "--data-dir", str(seed_data), "--out", str(out)]
            + ["--base-url", server.base_url, "--no-cache", "--no-progress"]
        )
    assert result.exit_code == 1, result.output
    good = summary_line(result.output, out / "openai-compatible_high")
    assert "2/2 units done" in good and "valid answers 24/24 (100.0%)" in good
    assert re.search(r"│ DTDD\s+│ Narcissism\s+│\s+2 │ 9\.00 ± 0\.00 │", result.output), result.output
    bad = summary_line(result.output, out / "openai-compatible_broken")
    assert "0/2 units done, 2 failed" in bad
    assert re.search(r"failed .*400", result.output), result.output  # the reason, once (distinct)
    assert len(re.findall(r"^\s+failed ", result.output, flags=re.MULTILINE)) == 1
    assert f"llmpsych run --resume {out / 'openai-compatible_broken'}" in result.output


def test_psychobench_all_invalid_answers_show_a_zero_rate(tmp_path: Path, seed_data: Path) -> None:
    out = tmp_path / "pb"
    with FaultServer(responder=lambda body: REFUSAL) as server:
        result = invoke(
            ["psychobench", "run", "-m", "openai-compatible/mute", "--scale", "DTDD", "--runs", "1"]
            + ["--data-dir", str(seed_data), "--out", str(out), "--base-url", server.base_url]
            + ["--no-cache", "--no-progress"]
        )
    assert result.exit_code == 0, result.output  # the unit finished; its answers are invalid
    line = summary_line(result.output, out / "openai-compatible_mute")
    assert "1/1 units done" in line and "valid answers 0/12 (0.0%)" in line


def test_emotionbench_refused_requests_fail_the_command(tmp_path: Path, seed_data: Path) -> None:
    out = tmp_path / "eb"
    hostile = refusing(make_responder(seed_data, []), lambda body: "shoes of the person" in json.dumps(body))
    with FaultServer(hostile=hostile) as server:
        result = invoke(
            ["emotionbench", "run", "--model", "openai-compatible/scripted", "--base-url", server.base_url]
            + ["--factors", "Fear-5", "--situations-per-factor", "1", "--runs", "2", "--default-runs", "2"]
            + ["--no-cache", "--no-progress", "--data-dir", str(seed_data), "--out", str(out)]
        )
    assert result.exit_code == 1, result.output
    line = summary_line(result.output, out)
    assert "2/4 units done, 2 failed" in line and "(100.0%)" in line
    assert re.search(r"failed .*400", result.output) and "--resume" in result.output


def test_emotionbench_all_invalid_answers_show_a_zero_rate(tmp_path: Path, seed_data: Path) -> None:
    out = tmp_path / "eb"
    with FaultServer(responder=lambda body: REFUSAL) as server:
        result = invoke(
            ["emotionbench", "run", "--model", "openai-compatible/scripted", "--base-url", server.base_url]
            + ["--factors", "Fear-5", "--situations-per-factor", "1", "--runs", "2", "--default-runs", "2"]
            + ["--no-cache", "--no-progress", "--data-dir", str(seed_data), "--out", str(out)]
        )
    assert result.exit_code == 0, result.output
    line = summary_line(result.output, out)
    assert "4/4 units done" in line and re.search(r"valid answers 0/\d+ \(0\.0%\)", line), line
    assert f"{out}: no result: fewer than two valid default runs" in result.output


def lettered(respondent: Respondent, body: dict[str, Any]) -> bool:
    """Whether the prompt's answer labels are letters (the ``au`` label set), not numbers (``n``)."""
    labels = re.findall(rf"(\S+) {respondent.denotes} ", body["messages"][-1]["content"])
    return bool(labels) and labels[0].strip("()").isalpha()


def reliability_args(server: FaultServer, seed_data: Path, out: Path) -> list[str]:
    return (
        ["reliability", "run", "-m", "openai-compatible/scripted", "--base-url", server.base_url]
        + ["--languages", "En", "--templates", "t1,t2", "--versions", "v1", "--labels", "n,au"]
        + ["--max-attempts", "1", "--no-cache", "--no-progress", "--data-dir", str(seed_data), "-o", str(out)]
    )


def test_reliability_failed_units_exit_1_with_the_reliability_resume_command(
    tmp_path: Path, seed_data: Path
) -> None:
    out = tmp_path / "rel"
    respondent = Respondent(seed_data)
    hostile = refusing(respondent, lambda body: lettered(respondent, body))
    with FaultServer(hostile=hostile) as server:
        result = invoke(reliability_args(server, seed_data, out))
    assert result.exit_code == 1, result.output
    t = tally(out)
    assert t.failed and t.done and t.failed + t.done == t.total == 8
    assert f"{t.done}/8 units done, {t.failed} failed" in summary_line(result.output, out)
    assert re.search(r"failed .*400", result.output)
    assert f"llmpsych reliability run --resume {out}" in result.output


def test_reliability_configuration_without_valid_answers_counts_in_the_mean(
    tmp_path: Path, seed_data: Path
) -> None:
    """Seen: a configuration with 0 of 44 valid answers vanished from "mean valid-answer rate 1.000"."""
    out = tmp_path / "rel"
    respondent = Respondent(seed_data)

    silent: list[dict[str, Any]] = []

    def half_mute(body: dict[str, Any]) -> str:
        """Every configuration of one label set answers nothing valid; the others answer in full."""
        if lettered(respondent, body):
            silent.append(body)
            return REFUSAL
        return respondent(body)

    with FaultServer(responder=half_mute) as server:
        result = invoke(reliability_args(server, seed_data, out))
    assert result.exit_code == 0, result.output
    t = tally(out)
    assert t.done == 8 and t.answers == 8 * 44 and t.valid == 4 * 44, (t, len(silent))
    assert "valid answers 176/352 (50.0%)" in summary_line(result.output, out)
    report = (out / "report.md").read_text()
    assert "mean valid-answer rate 0.500 over all 8 configurations" in report
    validity = (out / "validity.csv").read_text()
    assert "0.0" in validity  # the mute label level is there with rate 0, not dropped


def test_mas_run_refused_items_fail_the_command_with_the_reason(tmp_path: Path, seed_data: Path) -> None:
    """Seen: 4 of 5 MAS items failed (requests over the model's context) and the command exited 0."""
    out = tmp_path / "mas"
    with FaultServer(hostile=status_reply(400)) as server:
        result = invoke(
            ["mas", "run", "--system", "mad", "--dataset", "ciar", "--items", "2", "--fault", "none"]
            + ["--model", "openai-compatible/scripted", "--base-url", server.base_url]
            + ["--data-dir", str(seed_data), "--no-cache", "--no-progress", "--out", str(out)]
        )
    assert result.exit_code == 1, result.output
    assert "0/2 units done, 2 failed" in summary_line(result.output, out)
    assert re.search(r"failed .*HTTP 400", result.output) and f"llmpsych run --resume {out}" in result.output


def test_gamabench_preset_with_a_refusing_model_exits_1(tmp_path: Path) -> None:
    out = tmp_path / "lb"
    hostile = refusing(scripted, lambda body: body["model"] == "broken")
    with FaultServer(hostile=hostile) as server:
        result = invoke(
            ["gamabench", "preset", "leaderboard", "--model", "openai-compatible/fine"]
            + ["--model", "openai-compatible/broken", "--runs", "1", "--players", "3", "--rounds", "2"]
            + ["--base-url", server.base_url, "--no-cache", "--no-progress", "--out", str(out)]
        )
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if "(gamabench)" in line]
    assert lines and all("units done" in line for line in lines)
    assert any(", 8 failed" in line for line in lines) and any("8/8 units done" in line for line in lines)
    assert re.search(r"failed .*HTTP 400", result.output) and f"--out {out}" in result.output


def test_the_summary_neither_drives_the_terminal_nor_repeats_a_reason(
    tmp_path: Path, seed_data: Path
) -> None:
    """A server's error text is untrusted: ESC sequences and Rich markup in it print inert, and a reason
    shared by many units prints once."""
    error = b'{"error": {"message": "\\u001b]52;c;cGF5bG9hZA==\\u0007[bold red]boom\\u001b[2J"}}'

    def hostile(body: dict[str, Any]) -> Any:
        from llmpsych.testing.fault_server import RawReply

        return RawReply(400, {"Content-Type": "application/json", "Content-Length": str(len(error))}, [error])

    out = tmp_path / "mas"
    with FaultServer(hostile=hostile) as server:
        result = invoke(
            ["mas", "run", "--system", "mad", "--dataset", "ciar", "--items", "3", "--fault", "none"]
            + ["--model", "openai-compatible/scripted", "--base-url", server.base_url]
            + ["--data-dir", str(seed_data), "--no-cache", "--no-progress", "--out", str(out)]
        )
    assert result.exit_code == 1
    assert "\x1b" not in result.output and "\x07" not in result.output
    reasons = [line for line in result.output.splitlines() if line.strip().startswith("failed ")]
    assert len(reasons) == 1 and "[bold red]boom" in reasons[0], result.output
    console = InertConsole(file=open(tmp_path / "summary.txt", "w"), width=200)  # noqa: SIM115
    errors = InertConsole(file=open(tmp_path / "errors.txt", "w"), width=200)  # noqa: SIM115
    assert print_run_summary(console, out, err_console=errors) == 3
    console.file.close()
    errors.file.close()
    assert "0/3 units done, 3 failed" in (tmp_path / "summary.txt").read_text()
    assert (tmp_path / "errors.txt").read_text().count("failed RequestFailed") == 1


def test_mas_preset_with_refused_requests_exits_1_and_names_every_run(
    tmp_path: Path, seed_data: Path
) -> None:
    out = tmp_path / "preset"
    with FaultServer(hostile=status_reply(400)) as server:
        result = invoke(
            ["mas", "preset", "main", "--systems", "mad", "--tasks", "ciar", "--items", "1"]
            + ["--model", "openai-compatible/scripted", "--base-url", server.base_url]
            + ["--data-dir", str(seed_data), "--out", str(out)]
        )
    assert result.exit_code == 1, result.output
    for run in ("mad_ciar_none", "mad_ciar_autotransform", "mad_ciar_autoinject_pe0.2-pm1.0-semantic"):
        assert "0/1 units done, 1 failed" in summary_line(result.output, out / run)
    assert len(re.findall(r"^\s+failed .*HTTP 400", result.output, flags=re.MULTILINE)) == 3
    assert f"llmpsych mas preset main ... --out {out}" in result.output


def test_headline_prints_mean_sd_with_the_one_missing_rule(tmp_path: Path) -> None:
    from rich.console import Console

    from llmpsych.report.summary import headline

    (tmp_path / "summary.csv").write_text("scale,n,mean,sd\nBFI,3,3.5,0.25\nEPQ,1,4.0,\nGAS,0,,\n")
    table = headline(tmp_path)
    assert table is not None
    console = Console(width=120, record=True)
    console.print(table)
    text = console.export_text()
    assert "3.50 ± 0.25" in text and "4.00 ± n/a" in text and re.search(r"GAS\s+│\s+0\s+│\s+n/a", text)

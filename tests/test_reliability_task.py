"""The reliability task through the run engine, against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError

from llmpsych.reliability.official import load_bfi, load_steering
from llmpsych.reliability.results import detail_frame, kept_conversation, run_frame
from llmpsych.reliability.task import ReliabilityOptions
from llmpsych.runs import RunStore, parse_run_config, read_run, resume_run, start_run
from llmpsych.runs.store import finish_unit_statements
from llmpsych.testing.fault_server import FaultServer

STATEMENT = re.compile(r"^(\d+)\. (.+)$", re.MULTILINE)


def truth(item: int) -> int:
    """The canonical level the scripted respondent gives each BFI item."""
    return 1 + (item * 7) % 5


class Respondent:
    """Answers every English chunk in JSON, in the label format and order the prompt defines."""

    def __init__(self, seed_data: Path, garble_first: bool = False) -> None:
        bfi = load_bfi(seed_data)
        pack = bfi.pack("En")
        self.level_of_text = {text: level for level, text in pack.level_texts.items()}
        self.item_of_text = {t: i for v in pack.versions.values() for i, t in v.items()}
        self.denotes = pack.denotes
        self.bodies: list[dict[str, Any]] = []
        self.garble_first = garble_first

    def __call__(self, body: dict[str, Any]) -> str:
        self.bodies.append(body)
        prompt = body["messages"][-1]["content"]
        if "story" in prompt.lower() or "describe in about 100 words" in prompt.lower():
            return "A short generated text."
        if self.garble_first and len(self.bodies) == 1:
            return "I would rather not."
        label_for = {}
        texts = sorted(self.level_of_text, key=len, reverse=True)
        for match in re.finditer(rf"(\S+) {self.denotes} ", prompt):
            rest = prompt[match.end() :]
            text = next(t for t in texts if rest.startswith(t))
            label_for[self.level_of_text[text]] = match.group(1)
        answers = {
            number: label_for[truth(self.item_of_text[text.strip()])]
            for number, text in STATEMENT.findall(prompt)
        }
        return "Here are my scores:\n" + json.dumps(answers)


def config(server: FaultServer, data_dir: Path, **options: Any):
    return parse_run_config(
        {
            "task": "reliability",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "data_dir": str(data_dir),
            "options": options,
        }
    )


def test_grid_subset_maps_every_label_format_and_order_back(tmp_path: Path, seed_data: Path) -> None:
    respondent = Respondent(seed_data)
    options = {"languages": ["En"], "templates": ["t1", "t3"], "versions": ["v1", "v4"]}
    with FaultServer(responder=respondent) as server:
        outcome = start_run(config(server, seed_data, **options), tmp_path / "r", False)
    assert outcome.summary.done == 40 and outcome.summary.failed == 0
    assert outcome.summary.calls_sent == 80  # two chunks per configuration, no retries
    frame = run_frame(tmp_path / "r")
    assert len(frame) == 40 and (frame["valid_rate"] == 1.0).all()
    scale = load_bfi(seed_data).scale("En", "v1")
    expected = scale.score({i: truth(i) for i in scale.item_indices})
    for dim, value in expected.items():
        assert frame[dim].to_numpy() == pytest.approx([value] * 40)
    for row in frame.itertuples():
        assert row.answers == {i: truth(i) for i in range(1, 45)}
    # chunks of 17-27 as successive turns of one conversation with the official system prompt
    second_turns = [b for b in respondent.bodies if len(b["messages"]) == 4]
    assert len(second_turns) == 40
    for body in second_turns:
        sizes = [len(STATEMENT.findall(m["content"])) for m in body["messages"] if m["role"] == "user"]
        assert sum(sizes) == 44 and all(17 <= s <= 27 for s in sizes)
        assert body["messages"][0]["role"] == "system"
    orders = {tuple(r["chunks"][0]) for r in _results(tmp_path / "r")}
    assert len(orders) == 40  # every configuration has its own seeded shuffle
    report = (tmp_path / "r" / "report.md").read_text()
    assert "Table 3.3" in report and "Outliers" in report
    validity = pd.read_csv(tmp_path / "r" / "validity.csv")
    assert set(validity["factor"]) == {"template", "version", "language", "label", "order"}
    assert (validity["valid_rate"] == 1.0).all() and (validity["incomplete"] == 0).all()
    detail = pd.read_csv(tmp_path / "r" / "configurations.csv")
    assert len(detail) == 40 and detail["replies"].str.contains("Here are my scores").all()
    assert resume_run(tmp_path / "r", False).summary.calls_sent == 0


def _results(run_dir: Path) -> list[dict[str, Any]]:
    store = RunStore.in_dir(run_dir)
    try:
        return [u.result for u in store.units()]
    finally:
        store.close()


def _conversations(run_dir: Path) -> list[tuple[dict[str, Any], list[dict[str, str]]]]:
    """Each finished unit's result and the conversation of its scored attempt (from the stored calls)."""
    record = read_run(run_dir)
    return [(u.result, kept_conversation(u.result, record.calls.of_unit(u.unit_id))) for u in record.done()]


def test_invalid_replies_are_retried_with_a_new_shuffle_and_bounded(tmp_path: Path, seed_data: Path) -> None:
    respondent = Respondent(seed_data, garble_first=True)
    options = {
        "languages": ["En"],
        "templates": ["t1"],
        "versions": ["v1"],
        "labels": ["rl"],
        "orders": ["r"],
    }
    with FaultServer(responder=respondent) as server:
        outcome = start_run(config(server, seed_data, **options), tmp_path / "r", False)
    assert outcome.summary.done == 1
    (result,) = _results(tmp_path / "r")
    assert result["attempts"] == 2 and result["valid_rate"] == 1.0
    assert result["kept_attempt"] == 2 and "transcript" not in result
    # configurations.csv shows the scored (second) attempt, read from the calls: exactly what the server
    # was sent last, and the replies; the same as from a result that still copies the conversation
    ((_, kept),) = _conversations(tmp_path / "r")
    assert kept[:-1] == respondent.bodies[-1]["messages"] and kept[-1]["role"] == "assistant"
    detail = detail_frame(tmp_path / "r")
    assert "I would rather not" not in detail["replies"][0] and detail["replies"][0].count("---") >= 1
    with RunStore.in_dir(tmp_path / "r") as store:
        (unit,) = store.units("done")
        store.write(finish_unit_statements(unit.unit_id, {**result, "transcript": kept}))
    pd.testing.assert_frame_equal(detail_frame(tmp_path / "r"), detail)
    with FaultServer(responder=lambda body: "no idea") as server:
        start_run(config(server, seed_data, max_attempts=2, **options), tmp_path / "bad", False)
    (bad,) = _results(tmp_path / "bad")
    assert bad["attempts"] == 2 and bad["valid_rate"] == 0.0 and bad["scores"]["Openness"] is None


def test_steering_turns_come_from_the_official_files_and_our_wording(tmp_path: Path, seed_data: Path) -> None:
    respondent = Respondent(seed_data)
    grid = {"languages": ["En"], "templates": ["t1"], "versions": ["v1"], "labels": ["n"], "orders": ["f"]}
    profiles = list(load_steering("personality", seed_data))
    with FaultServer(responder=respondent) as server:
        start_run(
            config(
                server, seed_data, steer="personality", style="POR", cot=True, targets=profiles[:2], **grid
            ),
            tmp_path / "p",
            False,
        )
        start_run(
            config(server, seed_data, steer="environment", targets=["anger"], **grid), tmp_path / "e", False
        )
        start_run(
            config(server, seed_data, steer="environment", source="generate", targets=["fun"], **grid),
            tmp_path / "g",
            False,
        )
        start_run(
            config(server, seed_data, steer="character", targets=["Sauron"], **grid), tmp_path / "c", False
        )
    descriptions = load_steering("personality", seed_data)
    personality = _conversations(tmp_path / "p")
    assert {r["target"] for r, _ in personality} == set(profiles[:2])
    for result, transcript in personality:
        assert transcript[2] == {"role": "assistant", "content": descriptions[result["target"]]["1"]}
        assert result["target"] in transcript[1]["content"] and result["valid_rate"] == 1.0
    ((_, environment),) = _conversations(tmp_path / "e")
    assert environment[2]["content"] == load_steering("environment", seed_data)["anger"]["1"]
    ((_, generated),) = _conversations(tmp_path / "g")
    assert generated[2]["content"] == "A short generated text."  # the generated turn, from its own call
    ((_, character),) = _conversations(tmp_path / "c")
    assert character[1]["content"].startswith("You are Sauron.")
    assert run_frame(tmp_path / "c")["append_label"].tolist() == ["Sauron"]


def test_cli_run_then_analyze_the_run_directory(tmp_path: Path, seed_data: Path) -> None:
    from typer.testing import CliRunner

    from llmpsych.reliability.cli import app

    profile = list(load_steering("personality", seed_data))[0]
    respondent = Respondent(seed_data)
    with FaultServer(responder=respondent) as server:
        args = ["run", "-m", "openai-compatible/scripted", "--base-url", server.base_url]
        args += ["--languages", "En", "--templates", "t1,t2", "--versions", "v1", "--labels", "n,au"]
        args += ["--steer", "personality:bio", "--targets", profile, "--no-cache", "--no-progress"]
        args += ["--data-dir", str(seed_data), "-o", str(tmp_path / "run")]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len(respondent.bodies) == 16  # 2 templates x 2 labels x 2 orders, two chunks each
    assert all("Description: I see myself as" in b["messages"][1]["content"] for b in respondent.bodies)
    analysed = CliRunner().invoke(app, ["rescore", str(tmp_path / "run"), "--json"])
    assert analysed.exit_code == 0, analysed.output
    payload = json.loads(analysed.output)
    assert payload["n"] == 8 and payload["groups"][0]["n"] == 8
    assert payload["settings"]["published"] is False  # own run directories: corrected by default
    forced = CliRunner().invoke(app, ["rescore", str(tmp_path / "run"), "--json", "--published"])
    assert forced.exit_code == 0 and json.loads(forced.output)["settings"]["published"] is True


def test_item_order_experiment_modes(tmp_path: Path, seed_data: Path) -> None:
    grid = {
        "languages": ["En"],
        "templates": ["t1", "t2"],
        "versions": ["v1"],
        "labels": ["n"],
        "orders": ["f"],
    }
    with FaultServer(responder=Respondent(seed_data)) as server:
        start_run(config(server, seed_data, item_order="original", **grid), tmp_path / "o", False)
        start_run(config(server, seed_data, item_order="fixed", **grid), tmp_path / "f", False)
    original = [sum(r["chunks"], []) for r in _results(tmp_path / "o")]
    assert original == [list(range(1, 45))] * 2
    fixed = [sum(r["chunks"], []) for r in _results(tmp_path / "f")]
    assert fixed[0] == fixed[1] and fixed[0] != list(range(1, 45))


def test_compare_and_retest_commands(seed_data: Path) -> None:
    from typer.testing import CliRunner

    from llmpsych.reliability.cli import app

    saves = seed_data / "LLMPersonality" / "Analysis" / "save"
    files = [str(saves / f"personality_{s}.json") for s in ("qa", "qa_cot", "biography")]
    result = CliRunner().invoke(app, ["compare", *files, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert len(payload["tests"]) == 3 * 5 and set(payload["groups"]) == {
        "personality_qa",
        "personality_qa_cot",
        "personality_biography",
    }
    retest = CliRunner().invoke(app, ["retest", *files, "--json"])
    assert retest.exit_code == 0, retest.output
    rows = json.loads(retest.output)
    assert len(rows) == 10 and {r["side"] for r in rows} == {"min", "max"}


def test_run_option_method_governs_the_report_of_a_steered_run(tmp_path: Path, seed_data: Path) -> None:
    """A run's ``method`` reaches Table 3.10 of its report, as ``rescore --test`` does."""
    save = seed_data / "LLMPersonality" / "Analysis" / "save" / "save.json"
    profile = next(iter(load_steering("personality", seed_data)))  # "routine": the Openness minimum
    grid = {
        "languages": ["En"],
        "templates": ["t1", "t2"],
        "versions": ["v1"],
        "labels": ["n"],
        "orders": ["f"],
    }
    steer = {"steer": "personality", "targets": [profile], "default_data": [str(save)], **grid}
    with FaultServer(responder=Respondent(seed_data)) as server:
        for method in ("f-test", "welch"):
            options = {**steer, "published": True} if method == "f-test" else {**steer, "test": method}
            start_run(config(server, seed_data, **options), tmp_path / method, False)
    for method in ("f-test", "welch"):
        (row,) = pd.read_csv(tmp_path / method / "extremes.csv").to_dict("records")
        assert (row["dimension"], row["side"], row["method"]) == ("Openness", "min", method)
        assert row["sd_ddof"] == (0 if method == "f-test" else 1) and row["test"] == "welch"
        assert f"t-test `{method}`" in (tmp_path / method / "report.md").read_text()
    with pytest.raises(ValidationError, match="test"):
        ReliabilityOptions(test="Welch")  # type: ignore[arg-type]

"""The EmotionBench task end to end against a scripted OpenAI-compatible server and the official data."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from llmpsych.emotion.prompts import STABLE_SENTENCE, PromptSettings, build_prompt
from llmpsych.instruments.official import load_emotionbench_scales
from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer

MARK = "IMPOSSIBLE-SITUATION"


def make_responder(seed_data: Path, bodies: list[dict]) -> Any:
    """Answers every listed item: good by default, bad when evoked; refuses a marked situation."""
    panas = load_emotionbench_scales(seed_data)["PANAS"]
    positive = set(panas.subscale("Positive Affect").item_indices)

    def responder(body: dict) -> str:
        bodies.append(body)
        text = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        if MARK in text:
            return "I'm sorry, but as an AI I cannot rate my feelings."
        evoked = "shoes of the person" in text
        rng = random.Random(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest())
        listed = re.findall(r"^(\d+)\. ", body["messages"][1]["content"], flags=re.MULTILINE)
        lines = []
        for item in map(int, listed):
            high = (item in positive) != evoked
            lines.append(f"{item}: {rng.choice([4, 5]) if high else rng.choice([1, 2])}")
        return "\n".join(lines)

    return responder


def config(server: FaultServer, data_dir: Path, **options: Any):
    return parse_run_config(
        {
            "task": "emotionbench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "data_dir": str(data_dir),
            "seed": 3,
            "options": options,
        }
    )


def test_default_and_evoked_runs_are_scored_tested_and_compared_with_humans(
    tmp_path: Path, seed_data: Path
) -> None:
    bodies: list[dict] = []
    with FaultServer(responder=make_responder(seed_data, bodies)) as server:
        outcome = start_run(
            config(server, seed_data, emotions=["Anger"], situations_per_factor=2, runs=3, default_runs=4),
            tmp_path / "r",
            False,
        )
    assert outcome.summary.done == 4 + 5 * 2 * 3 and outcome.summary.failed == 0
    panas = load_emotionbench_scales(seed_data)["PANAS"]
    orders = set()
    for body in bodies:
        assert body["messages"][0] == {"role": "system", "content": panas.system_prompt}
        assert "SCENARIO" not in body["messages"][1]["content"] and body["temperature"] == 0
        orders.add(tuple(re.findall(r"^(\d+)\. ", body["messages"][1]["content"], flags=re.MULTILINE)))
    assert len(orders) > 1  # items shuffled per run
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["default"]["positive"]["n"] == 4 and summary["valid_runs"] == 34
    assert set(summary["factors"]) == {f"Anger-{k}" for k in range(1, 6)}
    anger = summary["emotions"]["Anger"]
    assert anger["positive"]["mark"] == "↓" and anger["negative"]["mark"] == "↑"
    assert anger["positive"]["n"] == 30 and summary["overall"]["negative"]["change"] > 20
    assert summary["human_alignment"]["cells"] == 10
    report = (tmp_path / "r" / "report.md").read_text()
    assert "Anger: Average" in report and "Human table" in report and "Per situation" in report
    assert (tmp_path / "r" / "transcripts.jsonl").read_text().count("\n") == 34
    rendered = (tmp_path / "r" / "transcripts.md").read_text()  # the report kit's renderer, from the calls
    assert rendered.count("\n## ") == 34 and rendered.count(panas.system_prompt) == 34
    assert (tmp_path / "r" / "transcripts.html").is_file()
    situations = (tmp_path / "r" / "situations.csv").read_text()
    assert situations.count("evoked") == 10


def test_unparseable_runs_are_reasked_counted_and_reported(tmp_path: Path, seed_data: Path) -> None:
    own = tmp_path / "own.json"
    scenarios = {"Anger-1": ["calm one", f"{MARK} here"], "Anger-2": ["another", "and another"]}
    factors = [{"name": f, "scenarios": s} for f, s in scenarios.items()]
    own.write_text(json.dumps({"emotions": [{"factors": factors, "name": "Anger"}]}))
    bodies: list[dict] = []
    with FaultServer(responder=make_responder(seed_data, bodies)) as server:
        start_run(
            config(
                server,
                seed_data,
                situations_file=str(own),
                situations_per_factor=None,
                runs=2,
                default_runs=3,
                max_reasks=1,
                shuffle=False,
            ),
            tmp_path / "r",
            False,
        )
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["invalid_runs"] == {"Anger-1": 2} and summary["valid_runs"] == 3 + 6
    assert summary["factors"]["Anger-1"]["positive"]["n"] == 2
    assert sum(1 for b in bodies if MARK in b["messages"][1]["content"]) == 2 * 2  # ask + one re-ask each
    listed = re.findall(r"^(\d+)\. ", bodies[0]["messages"][1]["content"], flags=re.MULTILINE)
    assert listed == [str(i) for i in range(1, 21)]  # shuffle=False keeps the original order
    report = (tmp_path / "r" / "report.md").read_text()
    assert "invalid runs per group" in report.lower() and "Anger-1 has 2 situations, the papers 13" in report


def test_positive_situations_are_compared_with_their_negative_originals(
    tmp_path: Path, seed_data: Path
) -> None:
    positive = tmp_path / "positive.json"
    positive.write_text(
        json.dumps(
            {
                "emotions": [
                    {"name": "Guilt", "factors": [{"scenarios": [{"text": "all good", "original": 2}]}]}
                ]
            }
        )
    )

    def responder(body: dict) -> str:
        text = body["messages"][1]["content"]
        good = "all good" in text or "shoes of the person" not in text
        rng = random.Random(text + str(len(body["messages"])))
        listed = re.findall(r"^(\d+)\. ", text, flags=re.MULTILINE)  # the numbers as shown
        return "\n".join(f"{i}: {rng.choice([3, 4, 5] if good else [1, 2])}" for i in listed)

    with FaultServer(responder=responder) as server:
        outcome = start_run(
            config(server, seed_data, positive=str(positive), runs=4, default_runs=3), tmp_path / "r", False
        )
    store = RunStore.in_dir(tmp_path / "r")
    ids = sorted(u.unit_id for u in store.units())
    store.close()
    assert outcome.summary.done == 3 + 4 + 4
    assert "negative/Guilt-1/s02/run001" in ids and "positive/Guilt-1/s02/p01/run001" in ids
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["positive"]["factors"]["Guilt-1"]["positive"]["n"] == 4
    assert summary["positive"]["factors"]["Guilt-1"]["positive"]["baseline_n"] == 4


def test_prompt_versions_and_the_stable_variant(seed_data: Path) -> None:
    panas = load_emotionbench_scales(seed_data)["PANAS"]
    system, text = build_prompt(panas, None, PromptSettings())
    assert system == panas.system_prompt and "SCENARIO" not in text and "shoes" not in text
    _, evoked = build_prompt(panas, "a test situation", PromptSettings())
    assert "a test situation" in evoked and evoked.index("a test situation") < evoked.index("1 denotes")
    system2, v2 = build_prompt(panas, "a test situation", PromptSettings(version="v2", stable=True))
    assert system2 != panas.system_prompt and "from 1 to 5" not in system2 and "between 1 and 5" in system2
    assert v2.startswith("Put yourself") and STABLE_SENTENCE in v2 and "5 = " in v2
    _, custom = build_prompt(panas, "x", PromptSettings(situation_template="Be here: {situation}."))
    assert "Be here: x." in custom


@pytest.mark.parametrize("scale", ["BDI"])
def test_challenging_scale_defaults_to_its_own_emotion(tmp_path: Path, seed_data: Path, scale: str) -> None:
    from llmpsych.emotion.task import EmotionBenchTask

    task = EmotionBenchTask(
        parse_run_config({"task": "emotionbench", "data_dir": str(seed_data), "options": {"scale": scale}})
    )
    units = task.units()
    assert task.emotions == ["Depression"] and task.n_default == 10
    assert len(units) == 10 + 6 * 5 * 10


def test_run_and_compare_commands(tmp_path: Path, seed_data: Path) -> None:
    from typer.testing import CliRunner

    from llmpsych.emotion.cli import app

    bodies: list[dict] = []
    with FaultServer(responder=make_responder(seed_data, bodies)) as server:
        args = ["run", "--model", "openai-compatible/scripted", "--base-url", server.base_url]
        args += ["--factors", "Fear-5", "--situations-per-factor", "1", "--runs", "2", "--default-runs", "2"]
        args += ["--prompt", "v2", "--stable", "--no-shuffle", "--no-cache", "--no-progress"]
        args += ["--data-dir", str(seed_data), "--out", str(tmp_path / "r")]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len(bodies) == 4 and all("steady" in b["messages"][1]["content"] for b in bodies)
    released = seed_data / "EmotionBench/results/PANAS_Test/gpt-3.5-turbo-PANAS-testing.csv"
    out = tmp_path / "compare"  # --out is the output folder, as everywhere
    args = ["compare", str(tmp_path / "r"), str(released), "--data-dir", str(seed_data), "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = (out / "comparison.md").read_text()
    assert "gpt-3.5-turbo P" in text and "Crowd N" in text and "openai-compatible/scripted" in text
    assert "![shifts](comparison.png)" in text and (out / "comparison.png").is_file()


def test_transcripts_hold_the_whole_conversation_with_reasks(tmp_path: Path, seed_data: Path) -> None:
    def responder(body: dict) -> str:
        first_ask = len(body["messages"]) == 2
        listed = re.findall(r"^(\d+)\. ", body["messages"][1]["content"], flags=re.MULTILINE)
        return "nonsense" if first_ask else "\n".join(f"{i}: 3" for i in listed)

    with FaultServer(responder=responder) as server:
        start_run(
            config(server, seed_data, factors=["Fear-5"], situations_per_factor=1, runs=1, default_runs=2),
            tmp_path / "r",
            False,
        )
    lines = [json.loads(line) for line in (tmp_path / "r" / "transcripts.jsonl").read_text().splitlines()]
    assert len(lines) == 3
    for line in lines:
        roles = [m["role"] for m in line["transcript"]]
        assert roles == ["system", "user", "assistant", "user", "assistant"]
        assert line["transcript"][2]["content"] == "nonsense"
        assert line["transcript"][-1]["content"].count(": 3") == 20

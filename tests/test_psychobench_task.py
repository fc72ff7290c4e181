"""The PsychoBench task end to end against a scripted OpenAI-compatible server and the official data."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import random
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.errors import ConfigError, DataError
from llmpsych.instruments.official import load_psychobench_scales
from llmpsych.models.types import ChatResult
from llmpsych.psychobench.analysis import run_tables
from llmpsych.psychobench.cipher import cipher_preamble, decipher, encipher
from llmpsych.psychobench.personas import PERSONAS
from llmpsych.psychobench.task import PsychoBenchTask
from llmpsych.report.transcripts import threads
from llmpsych.runs import RunStore, analyze_run, parse_run_config, read_run, start_run
from llmpsych.runs.store import finish_unit_statements
from llmpsych.runs.task import WorkUnit
from llmpsych.testing.fault_server import FaultServer


def response_range(body: dict) -> tuple[int, int]:
    low, high = re.search(r"from (\d+) to (\d+)", body["messages"][0]["content"]).groups()
    return int(low), int(high)


def positional_responder(body: dict) -> str:
    """Scores each listed statement by its position in the prompt, so runs with other orders differ."""
    low, high = response_range(body)
    listed = re.findall(r"^(\d+)\. ", body["messages"][-1]["content"], flags=re.MULTILINE)
    return "\n".join(f"{item}: {low + p % (high - low + 1)}" for p, item in enumerate(listed))


def config(server: FaultServer, data_dir: Path, **options: Any):
    return parse_run_config(
        {
            "task": "psychobench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "data_dir": str(data_dir),
            "options": options,
        }
    )


def stored_units(run_dir: Path) -> list[Any]:
    store = RunStore.in_dir(run_dir)
    try:
        return store.units()
    finally:
        store.close()


def test_scales_times_runs_with_shuffled_orders_scored_and_tested_against_every_norm(
    tmp_path: Path, seed_data: Path
) -> None:
    scales = load_psychobench_scales(seed_data)
    bodies: list[dict] = []

    def responder(body: dict) -> str:
        bodies.append(body)
        return positional_responder(body)

    with FaultServer(responder=responder) as server:
        outcome = start_run(config(server, seed_data, scale=["bfi", "DTDD"], runs=3), tmp_path / "r", False)
    assert outcome.summary.done == 6 and outcome.summary.calls_sent == 6  # one prompt per run, no re-asks
    # the paper's prompts, taken from the data file: system = inner_setting, user = prompt + statements
    for body in bodies:
        scale = scales["BFI" if len(body["messages"][1]["content"].splitlines()) > 20 else "DTDD"]
        assert body["messages"][0] == {"role": "system", "content": scale.system_prompt}
        assert body["messages"][1]["content"].startswith(scale.instructions + "\n\n")
        assert body["temperature"] == 0
    units = {u.unit_id: u.result for u in stored_units(tmp_path / "r")}
    assert sorted(units) == [f"{s}-run{r:03d}" for s in ("BFI", "DTDD") for r in (1, 2, 3)]
    orders = [units[f"BFI-run{r:03d}"]["order"] for r in (1, 2, 3)]
    assert (
        all(sorted(o) == list(scales["BFI"].item_indices) for o in orders)
        and len({tuple(o) for o in orders}) == 3
    )

    scores = pd.read_csv(tmp_path / "r" / "scores.csv")
    for unit_id, result in units.items():
        scale = scales[result["scale"]]
        span = scale.response_max - scale.response_min + 1
        expected = scale.score({i: scale.response_min + p % span for p, i in enumerate(result["order"])})
        got = scores[(scores["scale"] == result["scale"]) & (scores["run"] == result["run"])]
        assert dict(zip(got["subscale"], got["score"], strict=True)) == pytest.approx(expected), unit_id
    summary = pd.read_csv(tmp_path / "r" / "summary.csv")
    assert summary["n"].eq(3).all() and len(summary) == 8 and "Narcissism" in set(summary["subscale"])
    bfi_e = scores[(scores["scale"] == "BFI") & (scores["subscale"] == "Extraversion")]["score"]
    row = summary[summary["subscale"] == "Extraversion"].iloc[0]
    assert row["mean"] == pytest.approx(bfi_e.mean()) and row["sd"] == pytest.approx(bfi_e.std(ddof=1))

    comparisons = pd.read_csv(tmp_path / "r" / "comparisons.csv")
    assert len(comparisons) == 8  # 5 BFI + 3 DTDD subscales, one norm group each
    assert comparisons["model_n"].eq(3).all() and set(comparisons["test"]) <= {"student", "welch"}
    holm = comparisons["p_holm"].dropna()
    assert (holm >= comparisons.loc[holm.index, "t_p_value"] - 1e-15).all() and comparisons[
        "hedges_g"
    ].notna().all()
    valid = pd.read_csv(tmp_path / "r" / "valid.csv")
    assert valid["valid_rate"].eq(1.0).all() and len(valid) == 6
    report = (tmp_path / "r" / "report.md").read_text()
    assert "What n is" in report and "number of runs whose subscale could be scored" in report
    assert "Caution: degenerate tests" not in report  # answers by position make the runs differ
    assert "Holm's correction over all 8 comparisons" in report and "168 of 168 items answered" in report
    if importlib.util.find_spec("matplotlib"):
        assert "![chart-BFI](chart-BFI.png)" in report and (tmp_path / "r" / "chart-DTDD.png").is_file()
    # re-analysis reads the store only
    assert {p.name for p in analyze_run(tmp_path / "r")} >= {"report.md", "comparisons.csv"}


def test_chunks_are_turns_of_one_conversation_and_missing_items_are_reasked(
    tmp_path: Path, seed_data: Path
) -> None:
    def responder(body: dict) -> str:
        low, _ = response_range(body)
        last = body["messages"][-1]["content"]
        listed = re.findall(r"^(\d+)\. ", last, flags=re.MULTILINE)
        if listed:  # a new chunk: leave out its last statement
            return "\n".join(f"{i}: {low}" for i in listed[:-1])
        return "\n".join(f"{i}: {low}" for i in re.findall(r"\d+", last.split("Reply")[0]))

    with FaultServer(responder=responder) as server:
        outcome = start_run(
            config(server, seed_data, scale=["DTDD"], runs=2, chunk_size=5), tmp_path / "r", False
        )
    assert outcome.summary.calls_sent == 2 * 3 * 2  # 3 chunks (5+5+2), each asked once and re-asked once
    unit = stored_units(tmp_path / "r")[0]
    result = unit.result
    assert len(result["answers"]) == 12 and result["asks"] == 6
    assert "transcript" not in result  # the conversation is the stored calls: one thread of 6 turns
    (thread,) = threads(read_run(tmp_path / "r").calls.of_unit(unit.unit_id))
    users = [m for turn in thread.turns for m in turn.new_messages if m["role"] == "user"]
    assert len(users) == 6 and users[2]["content"].count("\n") >= 5
    assert pd.read_csv(tmp_path / "r" / "valid.csv")["valid_rate"].eq(1.0).all()


def test_persona_and_cipher_wrap_the_paper_prompt(tmp_path: Path, seed_data: Path) -> None:
    sent: list[dict] = []

    def responder(body: dict) -> str:
        sent.append(body)
        plain = {**body, "messages": [{**m, "content": decipher(m["content"])} for m in body["messages"]]}
        return encipher("Here are my scores:\n") + positional_responder(plain)

    with FaultServer(responder=responder) as server:
        start_run(
            config(server, seed_data, scale=["ICB"], runs=2, persona="Hero", cipher=True),
            tmp_path / "r",
            False,
        )
    scale = load_psychobench_scales(seed_data)["ICB"]
    system = sent[0]["messages"][0]["content"]
    assert (
        system == f"{cipher_preamble()}\n\n{encipher(PERSONAS['hero'] + chr(10) * 2 + scale.system_prompt)}"
    )
    assert sent[0]["messages"][1]["content"].startswith(encipher(scale.instructions))
    result = stored_units(tmp_path / "r")[0].result
    assert len(result["answers"]) == 8 and "transcript" not in result
    # the transcript shows each reply as received (enciphered) and, under it, as the scoring read it
    transcripts = (tmp_path / "r" / "transcripts.md").read_text()
    assert transcripts.count(encipher("Here are my scores:")) == 2
    assert transcripts.count("_Deciphered, as scored:_\n\n```text\nHere are my scores:") == 2
    report = (tmp_path / "r" / "report.md").read_text()
    assert "Persona: hero; Caesar cipher: on (shift 3)" in report


def test_logprob_mode_falls_back_to_the_written_number_and_says_so(tmp_path: Path, seed_data: Path) -> None:
    sent: list[dict] = []

    def responder(body: dict) -> str:
        sent.append(body)
        return positional_responder(body)

    with FaultServer(responder=responder) as server:
        outcome = start_run(
            config(server, seed_data, scale=["GSE"], runs=2, method="logprob"), tmp_path / "r", False
        )
    assert outcome.summary.calls_sent == 20  # one request per statement
    assert all(b["logprobs"] is True and b["top_logprobs"] == 20 for b in sent)
    assert all(
        len(re.findall(r"^\d+\. ", b["messages"][-1]["content"], flags=re.MULTILINE)) == 1 for b in sent
    )
    valid = pd.read_csv(tmp_path / "r" / "valid.csv")
    assert valid["from_text"].eq(10).all() and valid["from_logprobs"].eq(0).all()
    scores = pd.read_csv(tmp_path / "r" / "scores.csv")
    assert scores["score"].eq(10.0).all()  # every single-statement prompt is answered with the minimum, 1
    report = (tmp_path / "r" / "report.md").read_text()
    assert "20 item(s) had no usable top_logprobs" in report and "item order cannot matter" in report
    assert "1 of 1 comparison(s) are degenerate" in report  # logprob at temperature 0, and SD 0


class LogprobContext:
    """A unit context whose model puts 60 % on 4 and 40 % on 5 for every statement."""

    def rng(self, *labels: Any) -> random.Random:
        return random.Random(0)

    async def chat_all(self, requests: list[tuple]) -> list[ChatResult]:
        top = [{"token": "4", "logprob": math.log(0.6)}, {"token": "5", "logprob": math.log(0.4)}]
        return [
            ChatResult(text="4", logprobs=[{"token": "4", "logprob": math.log(0.6), "top_logprobs": top}])
            for _ in requests
        ]


def test_logprob_mode_scores_the_probability_weighted_value(tmp_path: Path, seed_data: Path) -> None:
    options = {"scale": ["LMS"], "method": "logprob"}
    cfg = parse_run_config({"task": "psychobench", "data_dir": str(seed_data), "options": options})
    task = PsychoBenchTask(cfg)
    result = asyncio.run(task.run_unit(WorkUnit("LMS-run001", {"scale": "LMS", "run": 1}), LogprobContext()))
    assert len(result["items"]) == 9 and all(i["value"] == pytest.approx(4.4) for i in result["items"])
    tables = run_tables(task.all_scales, [json.loads(json.dumps(result))])
    assert tables["scores"]["score"].tolist() == pytest.approx([4.4, 4.4, 4.4])  # LMS has no reverse keys
    assert tables["valid"]["from_logprobs"].tolist() == [9]


def test_unknown_or_unscored_scales_are_clear_errors(tmp_path: Path, seed_data: Path) -> None:
    base = {"task": "psychobench", "data_dir": str(seed_data)}
    with pytest.raises(ConfigError, match=r"unknown PsychoBench scale 'BF1' \(available: Empathy, BFI"):
        PsychoBenchTask(parse_run_config({**base, "options": {"scale": ["BF1"]}})).units()
    with pytest.raises(ConfigError, match="scale '16P' cannot be scored"):
        PsychoBenchTask(parse_run_config({**base, "options": {"scale": ["16p"]}})).units()
    with pytest.raises(ConfigError, match="unknown persona"):
        PsychoBenchTask(parse_run_config({**base, "options": {"persona": "villain"}}))
    with pytest.raises(ConfigError, match="unknown PsychoBench scale"):
        start_run(parse_run_config({**base, "options": {"scale": ["BF1"]}}), tmp_path / "never", False)
    assert not (tmp_path / "never").exists()  # checked before a run directory is created
    with pytest.raises(DataError, match="dataset PsychoBench not found"):
        PsychoBenchTask(parse_run_config({**base, "data_dir": str(tmp_path)})).units()
    everything = PsychoBenchTask(parse_run_config({**base, "options": {"runs": 2}})).units()
    assert len(everything) == 26 and not any(u.unit_id.startswith("16P") for u in everything)


@pytest.mark.model
def test_short_scale_end_to_end_on_the_embedded_model(tmp_path: Path, seed_data: Path) -> None:
    cfg = parse_run_config(
        {
            "task": "psychobench",
            "model": "local/qwen2.5-0.5b",
            "data_dir": str(seed_data),
            "options": {"scale": ["ICB"], "runs": 1, "max_reasks": 1},
        }
    )
    outcome = start_run(cfg, tmp_path / "r", False)
    assert outcome.summary.done == 1 and outcome.summary.failed == 0
    valid = pd.read_csv(tmp_path / "r" / "valid.csv")
    # the tiny model answers some statements, or numbers them by position (measured on ICB: "1: 1 / 2: 1 /
    # ..." to a shuffled order, twice), and those are counted invalid, never scored as the items they name
    assert len(valid) == 1 and valid["valid"].iloc[0] + valid["positional"].iloc[0] > 0
    answers = pd.read_csv(tmp_path / "r" / "answers.csv")["answer"].dropna()
    assert answers.between(1, 6).all()
    report = (tmp_path / "r" / "report.md").read_text()
    assert "local/qwen2.5-0.5b" in report and "a test needs 2" in report  # n = 1 run: described, not tested


def test_results_that_still_copy_the_conversation_report_the_same(tmp_path: Path, seed_data: Path) -> None:
    """Runs stored before the calls were the only copy hold a ``transcript`` in each result: it is not
    read, so tables and transcripts come out byte for byte as from the new shape."""

    def responder(body: dict) -> str:
        plain = {**body, "messages": [{**m, "content": decipher(m["content"])} for m in body["messages"]]}
        return encipher("Scores:\n") + positional_responder(plain)

    run_dir = tmp_path / "r"
    with FaultServer(responder=responder) as server:
        start_run(config(server, seed_data, scale=["DTDD"], runs=2, cipher=True), run_dir, False)
    outputs = ["transcripts.md", "answers.csv", "scores.csv", "summary.csv", "valid.csv", "comparisons.csv"]
    new_shape = {name: (run_dir / name).read_bytes() for name in outputs}
    record = read_run(run_dir)
    with RunStore.in_dir(run_dir) as store:
        for unit in record.done():
            (call,) = record.calls.of_unit(unit.unit_id)
            old = [*call.request["messages"], {"role": "assistant", "content": "a copy, never read"}]
            store.write(finish_unit_statements(unit.unit_id, {**unit.result, "transcript": old}))
    assert all("transcript" in u.result for u in stored_units(run_dir))
    analyze_run(run_dir)
    assert {name: (run_dir / name).read_bytes() for name in outputs} == new_shape
    assert "_Deciphered, as scored:_" in new_shape["transcripts.md"].decode()

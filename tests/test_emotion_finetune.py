"""Tuning to align with humans (thesis Table 5.9): the 866/400 split of crowd.xlsx, its chat fine-tuning
export, and the held-out evaluation through the normal run (real CLI, real loopback server, seed data)."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from llmpsych.emotion.changes import score_answers
from llmpsych.emotion.crowd import crowd_path, load_crowd
from llmpsych.emotion.finetune import THESIS_TABLE_5_9, split_people
from llmpsych.emotion.situations import load_situations
from llmpsych.errors import ConfigError
from llmpsych.instruments.official import load_emotionbench_scales
from llmpsych.instruments.parsing import parse_item_answers
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import run_cli as llmpsych


@pytest.fixture(scope="module")
def crowd(seed_data: Path) -> tuple[Any, list[Any]]:
    panas = load_emotionbench_scales(seed_data)["PANAS"]
    return panas, load_crowd(crowd_path(seed_data), panas)


def test_the_split_is_866_400_stratified_and_seeded(crowd: tuple[Any, list[Any]]) -> None:
    _, people = crowd
    train, test = split_people(people)
    assert (len(people), len(train), len(test)) == (1266, 866, 400)  # 000:1980
    assert {p.id for p in train} | {p.id for p in test} == set(range(1, 1267))
    assert not {p.id for p in train} & {p.id for p in test}
    again = split_people(people)[1]
    assert [p.id for p in again] == [p.id for p in test]  # deterministic
    assert [p.id for p in split_people(people, seed=1)[1]] != [p.id for p in test]
    everyone, held = Counter(p.factor for p in people), Counter(p.factor for p in test)
    assert set(held) == set(everyone) and len(everyone) == 36  # every factor is tested
    for factor, n in everyone.items():
        assert math.floor(400 * n / 1266) <= held[factor] <= math.ceil(400 * n / 1266)
    with pytest.raises(ConfigError, match="test_size 1266"):
        split_people(people, 1266)


def test_export_writes_chat_jsonl_that_reads_back_as_the_answers(
    tmp_path: Path, seed_data: Path, crowd: tuple[Any, list[Any]]
) -> None:
    panas, people = crowd
    out = tmp_path / "ft"
    done = llmpsych("emotionbench", "finetune", "export", "--out", str(out), "--data-dir", str(seed_data))
    assert done.returncode == 0, done.stderr
    assert "train: 866 people, 1732 examples; test: 400 people, 800 examples" in done.stdout
    info = json.loads((out / "split.json").read_text())
    assert info["train"] == {"people": 866, "examples": 1732, "skipped_blank": 0}
    assert info["seed"] == 0 and len(info["crowd_sha256"]) == 64
    test_ids = {p.id for p in split_people(people)[1]}
    rows = (out / "split.csv").read_text().splitlines()
    assert rows[0] == "person,factor,situation,split" and len(rows) == 1267
    assert {int(r.split(",")[0]) for r in rows[1:] if r.endswith(",test")} == test_ids
    lines = (out / "test.jsonl").read_text().splitlines()
    assert len(lines) == 800
    first_test = people[min(test_ids) - 1]
    for line, answers, has_situation in zip(
        lines[:2], (first_test.default, first_test.evoked), (False, True), strict=True
    ):
        messages = json.loads(line)["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant"]
        assert ("Put yourself in the shoes" in messages[1]["content"]) is has_situation
        parsed = parse_item_answers(messages[2]["content"], list(range(1, 21)), 1, 5)
        assert parsed.answers == answers  # the person's own 20 answers, read back by the run's parser
    assert len((out / "train.jsonl").read_text().splitlines()) == 1732
    bad = llmpsych(
        "emotionbench", "finetune", "export", "--out", str(out / "split.csv"), "--data-dir", str(seed_data)
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "is a file" in bad.stderr


def twos(bodies: list[dict[str, Any]]) -> Any:
    """Answers every statement with 2 (NA = PA = 20)."""

    def responder(body: dict[str, Any]) -> str:
        bodies.append(body)
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        return "\n".join(f"{k}: 2" for k in re.findall(r"^(\d+)\. ", last, flags=re.MULTILINE))

    return responder


def test_evaluate_runs_the_heldout_situations_and_reports_table_5_9(
    tmp_path: Path, seed_data: Path, crowd: tuple[Any, list[Any]]
) -> None:
    panas, people = crowd
    export = tmp_path / "ft"
    assert (
        llmpsych(
            "emotionbench", "finetune", "export", "-o", str(export), "--data-dir", str(seed_data)
        ).returncode
        == 0
    )
    out = tmp_path / "eval"
    bodies: list[dict[str, Any]] = []
    with FaultServer(responder=twos(bodies)) as server:
        args = [
            "emotionbench",
            "finetune",
            "evaluate",
            "-m",
            "openai-compatible/ft",
            "--base-url",
            server.base_url,
        ]
        args += ["--default-runs", "3", "--no-shuffle", "--no-cache", "--no-progress"]
        done = llmpsych(*args, "--data-dir", str(seed_data), "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert len(bodies) == 403  # 3 default runs + one evoked run per held-out person
        again = llmpsych("emotionbench", "finetune", "evaluate", "--resume", str(out), "--no-progress")
        assert again.returncode == 0 and len(bodies) == 403, again.stderr
    # the evaluation sends the exported test prompts (same wording, items in order with --no-shuffle)
    exported = {
        json.loads(line)["messages"][1]["content"]
        for line in (export / "test.jsonl").read_text().splitlines()
    }
    sent = {b["messages"][1]["content"] for b in bodies}
    test = split_people(people)[1]
    situations = load_situations(seed_data)
    texts = {situations.factor(p.factor).situations[p.respondent.situation - 1].text for p in test}
    assert sent <= exported and len(sent) == 1 + len(texts)  # the default prompt and each situation's
    summary = json.loads((out / "summary.json").read_text())
    cells = summary["heldout"]
    assert cells["split"] == {"seed": 0, "test_size": 400, "people": 400}
    assert cells["model"]["evoked"]["negative"] == {"mean": 20.0, "sd": 0.0, "n": 400}
    assert cells["model"]["default"]["negative"]["n"] == 3
    na = [score_answers(panas, p.respondent.default, published=True)["negative"] for p in test]
    assert cells["humans"]["default"]["negative"]["mean"] == pytest.approx(sum(na) / 400)
    assert cells["humans"]["default"]["negative"]["n"] == 400
    assert cells["thesis"]["Human"] == {"default": [14.2, 6.4], "evoked": [25.9, 9.7]}
    report = (out / "report.md").read_text()
    assert "Held-out humans (thesis Table 5.9)" in report and "| Default (N) |" in report
    assert "33.0 ± 4.5" in report  # the thesis's LLaMA-3.1-8B (V) default, for reference
    table = llmpsych("emotionbench", "finetune", "table", str(out), str(out), "--label", "V", "--label", "FT")
    assert table.returncode == 0, table.stderr
    assert "| Models | Human (held out) | V | FT |" in table.stdout
    assert "| Evoked (N) |" in table.stdout and "20.0 ± 0.0 | 20.0 ± 0.0 |" in table.stdout
    not_heldout = llmpsych("emotionbench", "finetune", "table", str(export))
    assert not_heldout.returncode == 2 and "no summary.json" in not_heldout.stderr


def test_the_thesis_table_is_as_printed() -> None:
    assert THESIS_TABLE_5_9["Human"] == {"default": (14.2, 6.4), "evoked": (25.9, 9.7)}  # 000:1987-1988
    assert THESIS_TABLE_5_9["LLaMA-3.1-8B (FT)"]["default"] == (10.3, 1.1)  # "from 33.0 to 10.3", 000:1996


def test_heldout_needs_panas(tmp_path: Path, seed_data: Path) -> None:
    done = llmpsych(
        "run", "--task", "emotionbench", "-O", "experiment=heldout", "-O", "scale=BDI",
        "--data-dir", str(seed_data), "--out", str(tmp_path / "x"),
    )  # fmt: skip
    assert done.returncode == 2 and "held-out humans answered PANAS" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

"""Issue 14 class 4: any reply is survivable.

Each shape a hostile or broken server can send becomes either a counted invalid answer (the envelope is
fine, the content unusable: the task's parser counts it) or a recorded, retryable failure (the envelope
is malformed). Tested through a real loopback server, through the model client, and through two real
tasks run by ``llmpsych run`` (PsychoBench and a GAMA-Bench game) with ``--resume`` afterwards.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from llmpsych.errors import EndpointError
from llmpsych.models import open_client
from llmpsych.models.retry import RetryPolicy
from llmpsych.models.types import ChatResult, MalformedReply, reply_logprobs, token_count
from llmpsych.runs.store import stored_json
from llmpsych.testing.fault_server import HOSTILE_REPLIES, FaultServer, body_reply, hostile_reply

#: reply name -> the text a task receives; None: a malformed envelope, retried then a counted failure.
EXPECTED: dict[str, str | None] = {
    "content-list": "4",
    "content-number": "",
    "content-null": "",
    "content-object": "",
    "content-huge": "4 " * (5 * 2**20),
    "content-nested-json-text": '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "body-nested": None,
    "lone-surrogate": "\ufffd 4 \ufffd",
    "usage-hostile": "4",
    "no-choices": None,
    "empty-choices": None,
    "message-null": None,
    "finish-reason-weird": "4",
    "logprobs-malformed": "4",
    "not-json": None,
    "wrong-content-type": "4",
}


def test_every_catalogued_reply_has_an_expectation() -> None:
    assert set(EXPECTED) == set(HOSTILE_REPLIES)


@pytest.mark.parametrize("name", list(HOSTILE_REPLIES))
def test_hostile_reply_through_a_real_server(name: str) -> None:
    with FaultServer(hostile=hostile_reply(name)) as server:
        client = open_client("openai-compatible/m", base_url=server.base_url)
        client.policy = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)

        async def go():
            try:
                return await client.complete([{"role": "user", "content": "q"}])
            finally:
                await client.aclose()

        expected = EXPECTED[name]
        if expected is None:
            with pytest.raises(EndpointError, match="gave up after 3 attempts; last error: malformed"):
                asyncio.run(go())
            assert sum(server.hits.values()) == 3 and client.stats.failures == 1
            return
        result = asyncio.run(go())
    assert result.text == expected and sum(server.hits.values()) == 1
    assert isinstance(result.usage.prompt_tokens, int) and result.usage.prompt_tokens >= 0
    assert result.finish_reason in ("stop", None) and result.logprobs is None
    # what the run store and the cache write: encodable by orjson and SQLite, read back equal
    text = stored_json(result.to_json(), finite=True)
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE TABLE t (v TEXT)")
        db.execute("INSERT INTO t VALUES (?)", (text,))
        (back,) = db.execute("SELECT v FROM t").fetchone()
    assert ChatResult.from_json(json.loads(back)).text == expected
    orjson.dumps(result.to_json())


def test_envelope_rules() -> None:
    for body in [None, [], "x", {}, {"choices": {}}, {"choices": [1]}, {"choices": [{"message": "hi"}]}]:
        with pytest.raises(MalformedReply):
            ChatResult.from_response(body)
    parts = [{"type": "text", "text": "a"}, "b", {"type": "image_url", "text": "no"}, {"text": "c"}, 5]
    assert ChatResult.from_response({"choices": [{"message": {"content": parts}}]}).text == "abc"
    assert (
        ChatResult.from_response({"choices": [{"message": {"content": [{"type": "image_url"}]}}]}).text == ""
    )
    assert ChatResult.from_response({"choices": [{"message": {"content": True}}]}).text == ""
    weird = {"choices": [{"message": {"content": "x"}, "finish_reason": "l" * 10_000}]}
    assert ChatResult.from_response(weird).finish_reason == "l" * 64
    # text stored by an older version in another shape is read as a reply would be
    assert ChatResult.from_json({"text": [{"type": "text", "text": "7"}]}).text == "7"
    assert ChatResult.from_json({"text": None}).text == ""


@pytest.mark.parametrize(
    "value, count",
    [(12, 12), (12.0, 12), (float("inf"), 0), (float("nan"), 0), (-5, 0), ("12", 0), (None, 0),
     (True, 0), (2**64, 0), (1.5, 0), ([3], 0)],
)  # fmt: skip
def test_token_counts(value, count: int) -> None:
    assert token_count(value) == count


def test_logprobs_are_kept_when_well_formed_and_dropped_whole_when_not() -> None:
    top = [{"token": "4", "logprob": -0.1}, {"token": "5", "logprob": float("-inf")}]
    top.append({"token": "\ud800", "logprob": "x"})
    good = {"content": [{"token": "4", "logprob": -0.1, "bytes": [52], "top_logprobs": top}]}
    entries = reply_logprobs(good)
    assert entries is not None and entries[0]["token"] == "4" and entries[0]["bytes"] == [52]
    assert [c["logprob"] for c in entries[0]["top_logprobs"]] == [-0.1, None, None]  # unreadable: None
    assert entries[0]["top_logprobs"][2]["token"] == "\ufffd"
    for bad in [
        {"content": [1]},
        {"content": [{"token": 4}]},
        {"content": [{"token": "9" * 5000}]},
        {"content": [{"token": "4", "top_logprobs": "x"}]},
        {"content": [{"token": "4", "top_logprobs": [None]}]},
        {"content": "x"},
        [],
        "x",
    ]:
        assert reply_logprobs(bad) is None, bad


# -- through real tasks, run by the command line -------------------------------------------------------
def _llmpsych(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llmpsych", *args], capture_output=True, text=True)


def _run(task: str, server: FaultServer, run_dir: Path, seed_data: Path) -> subprocess.CompletedProcess[str]:
    config = {
        "task": task,
        "model": "openai-compatible/m",
        "base_url": server.base_url,
        "cache": False,
        "max_retries": 1,
        "data_dir": str(seed_data),
        "options": (
            {"scale": ["DTDD"], "runs": 1, "max_reasks": 1}
            if task == "psychobench"
            else {"game": "guessing", "players": 2, "rounds": 2, "runs": 1, "max_reasks": 1}
        ),
    }
    path = run_dir.with_suffix(".yaml")  # JSON is YAML
    path.write_text(json.dumps(config))
    return _llmpsych("run", str(path), "--no-progress", "--out", str(run_dir))


def _units(run_dir: Path) -> list[tuple[str, str | None, str | None]]:
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        return db.execute("SELECT status, result, error FROM units").fetchall()


@pytest.mark.parametrize(
    "name",
    ["content-number", "content-null", "content-object", "content-list", "lone-surrogate", "usage-hostile",
     "logprobs-malformed", "content-nested-json-text", "finish-reason-weird"],
)  # fmt: skip
@pytest.mark.parametrize("task", ["psychobench", "gamabench"])
def test_unusable_content_is_a_counted_invalid_answer_and_resume_replays_it(
    task: str, name: str, tmp_path: Path, seed_data: Path
) -> None:
    run_dir = tmp_path / "run"
    with FaultServer(hostile=hostile_reply(name)) as server:
        first = _run(task, server, run_dir, seed_data)
        sent = sum(server.hits.values())
        # a resume replays the stored replies: nothing is sent again, nothing crashes
        again = _llmpsych("run", "--resume", str(run_dir), "--no-progress")
        assert sum(server.hits.values()) == sent
    assert first.returncode == 0, first.stderr
    ((status, result, _),) = _units(run_dir)
    assert status == "done"
    if task == "psychobench":
        valid = (run_dir / "valid.csv").read_text().splitlines()
        assert valid[0].startswith("scale,run,items,valid,") and valid[1].startswith("DTDD,1,12,0,")
        assert "0 of 12 items answered validly" in (run_dir / "report.md").read_text()
    else:
        assert json.loads(result)["fallbacks"] == 4  # 2 players x 2 rounds, each unreadable after re-asking
        assert "fallbacks" in (run_dir / "report.md").read_text()
    assert again.returncode == 0, again.stderr
    assert _units(run_dir)[0][:2] == (status, result)
    assert sent >= 2


@pytest.mark.parametrize("name", ["no-choices", "not-json", "body-nested", "message-null"])
@pytest.mark.parametrize("task", ["psychobench", "gamabench"])
def test_malformed_envelope_is_a_recorded_retryable_failure_not_a_permanent_one(
    task: str, name: str, tmp_path: Path, seed_data: Path
) -> None:
    run_dir = tmp_path / "run"
    with FaultServer(hostile=hostile_reply(name)) as server:
        first = _run(task, server, run_dir, seed_data)
        # max_retries = 1: two attempts per request (the game's two seats ask the same, at once)
        assert sum(server.hits.values()) in ((2,) if task == "psychobench" else (2, 3, 4))
        assert first.returncode == 1 and "malformed response" in first.stderr
        ((status, _, error),) = _units(run_dir)
        assert status == "failed" and "malformed response" in error
        with sqlite3.connect(run_dir / "run.sqlite") as db:
            assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0  # nothing bad was stored
        server.hostile = None  # the server recovers: the resume finishes the unit
        again = _llmpsych("run", "--resume", str(run_dir), "--no-progress")
    assert again.returncode == 0, again.stderr
    assert _units(run_dir)[0][0] == "done"


def test_huge_reply_is_read_stored_and_reported(tmp_path: Path, seed_data: Path) -> None:
    """10 MB of content (under the 32 MiB cap) is an answer like another: parsed, stored, reported."""
    run_dir = tmp_path / "run"
    with FaultServer(hostile=hostile_reply("content-huge")) as server:
        first = _run("psychobench", server, run_dir, seed_data)
    assert first.returncode == 0, first.stderr
    assert _units(run_dir)[0][0] == "done"
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        (size,) = db.execute("SELECT MAX(LENGTH(response)) FROM calls").fetchone()
    assert size > 10 * 10**6
    again = _llmpsych("run", "--resume", str(run_dir), "--no-progress")
    assert again.returncode == 0, again.stderr


def test_reply_body_function_is_called_per_request() -> None:
    calls = []
    reply = body_reply(lambda: calls.append(1) or b"{}")
    reply({})
    reply({})
    assert len(calls) == 2


def test_replies_of_any_backend_are_read_by_the_same_rules() -> None:
    """The embedded backend hands the client dicts, not bytes: the same reading and retry rules apply."""
    from llmpsych.models.client import ModelClient
    from llmpsych.models.spec import parse_model_spec

    class Scripted:  # stands for EmbeddedBackend: send() returns llama.cpp's response dict
        def __init__(self, replies: list) -> None:
            self.replies = replies

        async def send(self, body: dict) -> dict:
            return self.replies.pop(0)

        async def aclose(self) -> None:
            pass

    backend = Scripted([{}, {"choices": []}, {"choices": [{"message": {"content": [{"text": "\ud800x"}]}}]}])
    client = ModelClient(
        parse_model_spec("openai-compatible/m"), backend, "test", "m", 1, RetryPolicy(2, base_delay=0.0)
    )
    result = asyncio.run(client.complete([{"role": "user", "content": "q"}]))
    assert result.text == "\ufffdx" and result.attempts == 3
    assert result.errors == ["malformed response: no choices"] * 2

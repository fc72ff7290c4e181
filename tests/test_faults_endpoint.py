"""The fault endpoint (issue 32, items 1, 2 and 5): the OpenAI Python client stands in for an agent
framework, the scripted loopback server for the user's model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from openai import APIStatusError, OpenAI
from starlette.testclient import TestClient

from llmpsych import cli
from llmpsych.errors import ConfigError, ModelSpecError
from llmpsych.faults import attribution_score, load_plan, parse_plan, running
from llmpsych.faults.session import REFUSAL
from llmpsych.faults.truth import TRUTH_FILE, read_table
from llmpsych.runs import load_runs
from llmpsych.runs.record import read_run
from llmpsych.testing.fault_server import FaultRates, FaultServer, RawReply
from llmpsych.web.app import create_app
from llmpsych.web.catalog import _run_id

CODE = "def add(a, b):\n    total = a + b\n    return total\n\nprint(add(1, 2))"


def responder(body: dict[str, Any]) -> str:
    """A deterministic model: code for an agent's request; for AutoInject's request (a JSON object of
    fragments) each fragment with ``+`` turned into ``-`` and a marker, so every edit is visible."""
    last = body["messages"][-1]["content"]
    if isinstance(last, str) and "Input: {" in last:
        fragments = json.loads(last.split("Input: ", 1)[1])
        return json.dumps({k: v.replace("+", "-") + "  # changed" for k, v in fragments.items()})
    return CODE + f"\n# for: {last[:40]}"


def team(client: OpenAI) -> list[str]:
    """Two agents, three turns each, recognised by the model name they send."""
    replies = []
    for turn in (1, 2, 3):
        for agent in ("coder", "tester"):
            reply = client.chat.completions.create(
                model=agent, messages=[{"role": "user", "content": f"{agent} turn {turn}"}]
            )
            replies.append(reply.choices[0].message.content or "")
    return replies


AGENTS = [{"name": "coder", "model": "coder"}, {"name": "tester", "model": "tester"}]
FAULTS = [
    {"agent": "coder", "kind": "autoinject", "turns": [2], "share": 0.5},
    {"agent": "tester", "kind": "refusal", "turns": [3]},
]


def serve(plan: dict[str, Any], upstream: FaultServer, out: Path, **kwargs: Any) -> Any:
    return running(
        parse_plan(plan, "test"),
        upstream="openai-compatible/up",
        base_url=upstream.base_url,
        out=out,
        **kwargs,
    )


def test_clean_and_faulty_runs_differ_exactly_where_the_plan_says(tmp_path: Path) -> None:
    with FaultServer(responder=responder) as upstream:
        with serve({"agents": AGENTS}, upstream, tmp_path / "clean") as endpoint:
            clean = team(OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0))
        with serve(
            {"seed": 1, "agents": AGENTS, "faults": FAULTS}, upstream, tmp_path / "faulty"
        ) as endpoint:
            faulty = team(OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0))
    differ = [i for i, (a, b) in enumerate(zip(clean, faulty, strict=True)) if a != b]
    assert differ == [2, 5]  # coder's turn 2, tester's turn 3 (requests alternate coder, tester)
    assert faulty[5] == REFUSAL
    assert "-" in faulty[2] and "# changed" in faulty[2]
    truth = pd.read_csv(tmp_path / "faulty" / TRUTH_FILE, dtype=str, keep_default_na=False)
    assert list(zip(truth["agent"], truth["turn"], truth["kind"], strict=True)) == [
        ("coder", "2", "autoinject"),
        ("tester", "3", "refusal"),
    ]
    # the ground truth holds what the client received, and what it would have received
    assert truth["injected"].str.replace("\r\n", "\n").tolist() == [faulty[2], faulty[5]]
    assert truth["original"].str.replace("\r\n", "\n").tolist() == [clean[2], clean[5]]
    # share 0.5 of the 5 code lines: 3 lines changed (halves round up), named by line number
    assert len(truth["lines"][0].split(";")) == 3
    assert truth["error_type"].tolist() == ["semantic", "refusal"]
    assert "Mathematical Errors" in truth["category"][0]
    assert not (tmp_path / "clean" / TRUTH_FILE).read_text().strip().count("\n")  # header only
    # an ordinary run: the record, load_runs
    record = read_run(tmp_path / "faulty")
    assert record.config.task == "faults" and len(record.done()) == 6
    assert {c.role for c in record.calls} == {"subject"}  # forwarded requests and the injector's
    assert len(record.calls) == 7
    assert len(load_runs([tmp_path / "faulty"]).runs) == 1
    pages = TestClient(create_app([tmp_path], token="t", port=9, hosts={"127.0.0.1"}), "http://127.0.0.1:9")
    pages.cookies.set("llmpsych_web_9", "t")
    page = pages.get(f"/run/{_run_id(0, 'faulty')}")
    assert page.status_code == 200 and "ground_truth.csv" in page.text
    assert pages.get(f"/run/{_run_id(0, 'faulty')}/unit", params={"id": "coder/2/1"}).status_code == 200


def test_same_plan_same_seed_same_faults_and_resume_asks_nothing_again(tmp_path: Path) -> None:
    plan = {"seed": 5, "agents": AGENTS, "faults": [{"agent": "coder", "kind": "autoinject", "rate": 0.5}]}
    with FaultServer(responder=responder) as upstream:
        runs = []
        for name in ("a", "b"):
            with serve(plan, upstream, tmp_path / name) as endpoint:
                runs.append(team(OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0)))
        assert runs[0] == runs[1]
        asked = len(upstream.bodies)
        with running(resume=tmp_path / "a") as endpoint:
            again = team(OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0))
        assert len(upstream.bodies) == asked  # every answer came from the store
    assert again == runs[0]
    hit = pd.read_csv(tmp_path / "a" / TRUTH_FILE)
    assert 0 < len(hit) < 3  # rate 0.5 of coder's 3 turns, drawn from the seed


def test_streaming_and_tool_calls_pass_through(tmp_path: Path) -> None:
    tool_reply = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "run", "arguments": '{"x": 1}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }

    def hostile(body: dict[str, Any]) -> RawReply:
        if body.get("tools"):
            payload = json.dumps(tool_reply).encode()
        else:
            text = responder(body)
            payload = json.dumps(
                {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
            ).encode()
        return RawReply(
            200, {"Content-Type": "application/json", "Content-Length": str(len(payload))}, [payload]
        )

    plan = {"seed": 2, "agents": AGENTS, "faults": [{"agent": "coder", "kind": "autoinject", "share": 1.0}]}
    with FaultServer(hostile=hostile) as upstream, serve(plan, upstream, tmp_path / "run") as endpoint:
        client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0)
        messages = [{"role": "user", "content": "coder turn 1"}]
        plain = client.chat.completions.create(model="coder", messages=messages)  # type: ignore[arg-type]
        stream = client.chat.completions.create(
            model="coder",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
        )
        pieces = list(stream)
        tools = [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]
        called = client.chat.completions.create(model="coder", messages=messages, tools=tools)  # type: ignore[arg-type]
        sent_tools = upstream.bodies[-1].get("tools")
    streamed = "".join(p.choices[0].delta.content or "" for p in pieces if p.choices)
    assert streamed == plain.choices[0].message.content != responder({"messages": messages})
    assert pieces[-1].usage is not None and pieces[-1].usage.total_tokens >= 0
    assert len(pieces) > 3  # role, content in pieces, finish
    call = called.choices[0].message.tool_calls
    assert call is not None and call[0].function.name == "run" and call[0].function.arguments == '{"x": 1}'
    assert called.choices[0].finish_reason == "tool_calls" and sent_tools == tools
    truth = pd.read_csv(tmp_path / "run" / TRUTH_FILE)
    assert len(truth) == 2  # the plain and the streamed reply; the tool call has no text to corrupt


def test_a_timeout_is_one_attempt_and_the_framework_s_retry_gets_through(tmp_path: Path) -> None:
    plan = {"agents": AGENTS, "faults": [{"agent": "tester", "kind": "timeout", "turns": [1]}]}
    with FaultServer(responder=responder) as upstream, serve(plan, upstream, tmp_path / "run") as endpoint:
        client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0)
        with pytest.raises(APIStatusError) as failed:
            client.chat.completions.create(model="tester", messages=[{"role": "user", "content": "hi"}])
        retried = client.chat.completions.create(model="tester", messages=[{"role": "user", "content": "hi"}])
        malformed_plan = {"agents": AGENTS, "faults": [{"agent": "coder", "kind": "malformed"}]}
    assert failed.value.status_code == 504
    assert retried.choices[0].message.content == responder({"messages": [{"role": "user", "content": "hi"}]})
    truth = pd.read_csv(tmp_path / "run" / TRUTH_FILE)
    assert truth[["agent", "turn", "attempt", "kind"]].values.tolist() == [["tester", 1, 1, "timeout"]]
    units = {u.unit_id for u in read_run(tmp_path / "run").done()}
    assert units == {"tester/1/1", "tester/1/2"}  # the retry is the same turn's second attempt
    with (
        FaultServer(responder=responder) as upstream,
        serve(malformed_plan, upstream, tmp_path / "m") as endpoint,
    ):
        raw = httpx.post(
            f"{endpoint.base_url}/chat/completions",
            headers={"Authorization": f"Bearer {endpoint.token}"},
            json={"model": "coder", "messages": [{"role": "user", "content": "x"}]},
        )
    assert raw.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw.content)


def test_the_endpoint_is_loopback_and_needs_its_token_and_host(tmp_path: Path) -> None:
    with (
        FaultServer(responder=responder) as upstream,
        serve({"agents": AGENTS}, upstream, tmp_path / "r") as endpoint,
    ):
        assert endpoint.base_url.startswith("http://127.0.0.1:")
        url = f"{endpoint.base_url}/chat/completions"
        body = {"model": "coder", "messages": [{"role": "user", "content": "x"}]}
        assert httpx.post(url, json=body).status_code == 401
        assert httpx.post(url, json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        host = {"Authorization": f"Bearer {endpoint.token}", "Host": "evil.example"}
        assert httpx.post(url, json=body, headers=host).status_code == 421
        ok = {"Authorization": f"Bearer {endpoint.token}"}
        assert httpx.post(url, content=b"[1, 2", headers=ok).status_code == 400
        assert httpx.post(url, content=b"x" * (17 * 2**20), headers=ok).status_code == 413
        message = b'"messages": [{"role": "user", "content": "x"}]'
        for hostile in (
            b'{"temperature": 1e999, ' + message + b"}",  # a number no JSON encoder writes back
            b'{"messages": [{"role": "user", "content": "\\ud800"}]}',  # a lone surrogate
            b'{"model": ' + b"[" * 5000 + b"]" * 5000 + b", " + message + b"}",  # nested past recursion
            b'{"n": 3, ' + message + b"}",  # more choices than a fault applies to
            b'{"messages": []}',
        ):
            assert httpx.post(url, content=hostile, headers=ok).status_code == 400, hostile[:40]
        response = httpx.post(url, json=body, headers=ok)
        assert response.status_code == 200 and "access-control-allow-origin" not in response.headers
    assert upstream.bodies == [{**body, "model": "up"}]  # only the authorised request went upstream


def test_a_key_goes_only_to_its_own_upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-stay-home")
    monkeypatch.setenv("LLMPSYCH_API_KEY", "sk-compatible-upstream")
    with (
        FaultServer(responder=responder, api_key="sk-compatible-upstream") as upstream,
        FaultServer() as decoy,
    ):
        # a key with a URL of its own cannot be pointed at another server (the run rules, one line)
        with (
            pytest.raises(ModelSpecError, match="its key goes nowhere else"),
            running(parse_plan({"agents": AGENTS}, "t"), upstream="openai/gpt-x", base_url=decoy.base_url),
        ):
            pass
        with serve({"agents": AGENTS, "faults": FAULTS}, upstream, tmp_path / "run") as endpoint:
            client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0)
            replies = team(client)
    assert decoy.bodies == [] and decoy.authorization_headers == []
    assert set(upstream.authorization_headers) == {"Bearer sk-compatible-upstream"}
    assert all("sk-" not in reply for reply in replies)
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"sk-compatible-upstream" not in data and b"sk-openai" not in data, path


def test_a_hostile_plan_is_one_line_and_nothing_in_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = {
        "rate = 2": (
            'agents = [{name = "a", model = "a"}]\n[[faults]]\nagent = "a"\nkind = "refusal"\nrate = 2\n',
            "faults.0.rate",
        ),
        "unknown agent": ('[[faults]]\nagent = "ghost"\nkind = "refusal"\n', "not one of the plan's agents"),
        "bad regex": ('agents = [{name = "a", system = "(unclosed"}]\n', "not a regular expression"),
        "backtracking": ('agents = [{name = "a", system = "(a+)+$"}]\n', "exponential time"),
        "two rules": ('agents = [{name = "a", model = "a", header = "a"}]\n', "exactly one of"),
        "unknown key": ('exec = "rm -rf /"\n', "exec"),
        "not TOML": ("[[agents]\n", "not valid TOML"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        with pytest.raises(ConfigError, match=expected.replace("(", r"\(")):
            load_plan(path)
    # a pattern that reads like code is a regular expression and nothing else
    marker = tmp_path / "pwned"
    plan = load_plan_text(
        tmp_path, f'agents = [{{name = "a", system = "__import__(.os.).system(.touch {marker}.)"}}]\n'
    )
    assert plan.agents[0].system is not None and not marker.exists()
    huge = tmp_path / "huge.toml"
    huge.write_bytes(b"#" * (2 * 2**20))
    with pytest.raises(ConfigError, match="more than a fault plan may hold"):
        load_plan(huge)
    argv = [
        "llmpsych",
        "faults",
        "serve",
        "--plan",
        str(tmp_path / "rate = 2.toml"),
        "--model",
        "openai-compatible/m",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    said = capsys.readouterr().err
    assert exited.value.code != 0 and "Traceback" not in said
    assert [line for line in said.splitlines() if "faults.0.rate" in line]


def load_plan_text(folder: Path, text: str) -> Any:
    path = folder / "plan.toml"
    path.write_text(text)
    return load_plan(path)


def test_recorded_texts_are_data(tmp_path: Path) -> None:
    """A model reply that looks like a spreadsheet formula or markup is recorded and delivered as it is,
    and the CSV neutralises the formula (the Parquet keeps the exact value)."""
    formula = '=HYPERLINK("http://evil.example","x")\n<script>alert(1)</script>'
    with FaultServer(responder=lambda body: formula) as upstream:
        plan = {"agents": AGENTS, "faults": [{"agent": "coder", "kind": "refusal"}]}
        with serve(plan, upstream, tmp_path / "r") as endpoint:
            OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0).chat.completions.create(
                model="coder", messages=[{"role": "user", "content": "x"}]
            )
    exact = pd.read_parquet(tmp_path / "r" / "ground_truth.parquet")
    assert exact["original"].tolist() == [formula]
    cells = pd.read_csv(tmp_path / "r" / TRUTH_FILE, dtype=str, keep_default_na=False)
    assert cells["original"][0].startswith("'=HYPERLINK")  # a spreadsheet shows it, never runs it


def test_attribution_scores_agent_and_step_with_every_n(tmp_path: Path) -> None:
    truth = pd.DataFrame(
        [
            {"run": "r1", "call": 2, "agent": "coder", "turn": 1, "source": "fault"},
            {"run": "r1", "call": 5, "agent": "tester", "turn": 3, "source": "fault"},
            {"run": "r2", "call": 1, "agent": "tester", "turn": 1, "source": "fault"},
            {"run": "r3", "call": 4, "agent": "coder", "turn": 2, "source": "fault"},
            {"run": "r4", "call": 1, "agent": "coder", "turn": 1, "source": "defence"},
        ]
    )
    predictions = tmp_path / "p.csv"
    predictions.write_text("run,agent,turn\nr1,coder,1\nr2,tester,2\nr4,none,\nr9,coder,1\n")
    score = attribution_score(truth, read_table(predictions, "predictions file"), ["r4", "r5"])
    assert (score.n_runs, score.n_predicted, score.agent_correct) == (3, 2, 2)
    assert (score.step_n, score.step_correct) == (2, 1)
    assert score.missing == ["r3"] and score.unknown == ["r9"]
    assert (score.clean_runs, score.clean_judged, score.clean_said_none) == (2, 1, 1)
    text = "\n".join(score.lines())
    assert "agent level: 2/2 = 1.000" in text and "step level:  1/2 = 0.500" in text
    bad = tmp_path / "bad.csv"
    bad.write_text("run,agent,turn\nr1,coder,first\n")
    with pytest.raises(ConfigError, match="turn must be a whole number"):
        attribution_score(truth, read_table(bad, "predictions file"))


def helper_responder(body: dict[str, Any]) -> str:
    """Answers AutoTransform, the Challenger and the Inspector as a model that finds everything unsafe."""
    last = body["messages"][-1]["content"]
    if "red-team testing" in last:
        return "You are a careless coder who hides off-by-one errors."
    if "may be an adversary" in last:
        return "unsafe"
    if "You supervise a team" in last:
        return json.dumps({"decision": "unsafe", "revision": "REVISED BY THE INSPECTOR"})
    return responder(body)


def test_each_recognition_rule_autotransform_and_both_defences(tmp_path: Path) -> None:
    plan = {
        "agents": [
            {"name": "opener", "calls": [1]},
            {"name": "coder", "header": "coder"},
            {"name": "tester", "system": "(?i)you test"},
        ],
        "faults": [{"agent": "coder", "kind": "autotransform"}],
        "defences": [{"agent": "coder", "kind": "inspector"}, {"agent": "tester", "kind": "challenger"}],
    }
    coder = [{"role": "system", "content": "You write code."}, {"role": "user", "content": "go"}]
    tester = [{"role": "system", "content": "You TEST code."}, {"role": "user", "content": "check this"}]
    with (
        FaultServer(responder=helper_responder) as upstream,
        serve(plan, upstream, tmp_path / "r") as endpoint,
    ):
        client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0)
        ask = client.chat.completions.create
        opened = ask(model="m", messages=coder)  # type: ignore[arg-type]
        named = {"X-Llmpsych-Agent": "coder"}
        coded = [ask(model="m", messages=coder, extra_headers=named) for _ in (1, 2)]  # type: ignore[arg-type]
        ask(model="m", messages=tester)  # type: ignore[arg-type]
        ask(model="m", messages=[{"role": "user", "content": "nobody"}])
        bodies = list(upstream.bodies)
    assert opened.choices[0].message.content == responder({"messages": coder})  # the opener has no fault
    assert [c.choices[0].message.content for c in coded] == ["REVISED BY THE INSPECTOR"] * 2
    transformed = [b for b in bodies if b["messages"][0]["content"].startswith("You are a careless coder")]
    assert len(transformed) == 2  # coder's two requests went upstream with the rewritten profile
    assert sum("red-team testing" in b["messages"][-1]["content"] for b in bodies) == 1  # rewritten once
    warned = [b for b in bodies if b["messages"][-1]["content"].startswith("check this\n\n[Note:")]
    assert len(warned) == 1
    units = [u.unit_id for u in read_run(tmp_path / "r").done()]
    assert units == ["opener/1/1", "coder/1/1", "coder/2/1", "tester/1/1", "(unmatched)/1/1"]
    truth = pd.read_csv(tmp_path / "r" / TRUTH_FILE)
    assert truth[["agent", "turn", "source", "kind", "target"]].values.tolist() == [
        ["coder", 1, "fault", "autotransform", "system prompt"],
        ["coder", 1, "defence", "inspector", "reply"],
        ["coder", 2, "fault", "autotransform", "system prompt"],
        ["coder", 2, "defence", "inspector", "reply"],
        ["tester", 1, "defence", "challenger", "last message"],
    ]


def test_an_upstream_that_fails_is_a_502_in_one_line_and_a_failed_unit(tmp_path: Path) -> None:
    """The upstream model answers every request with HTTP 500: the framework gets one 502 line naming the
    upstream, the request is a failed unit of the run (no reply stored as if it were the model's)."""
    with (
        FaultServer(FaultRates(rate_500=1.0), responder=responder) as upstream,
        serve({"agents": AGENTS}, upstream, tmp_path / "down", max_retries=0) as endpoint,
    ):
        client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.token, max_retries=0)
        with pytest.raises(APIStatusError) as failed:
            team(client)
    assert failed.value.status_code == 502
    assert "upstream model failed" in failed.value.response.text
    assert "\n" not in failed.value.response.json()["error"]["message"].strip()
    record = read_run(tmp_path / "down")
    assert record.done() == [] and [u.unit_id for u in record.failed()] == ["coder/1/1"]

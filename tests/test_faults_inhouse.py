"""llmpsych's six systems run as a study's system behind the fault endpoint equal ``mas run`` on the same
seed: under AutoInject at a message rate and a line share below 1 with the Inspector on every agent, and
under AutoTransform (issue 32, item 4).

For each system the study (its command ``python -m llmpsych.faults.inhouse``, the endpoint in front, the
``humaneval`` scorer) and ``mas run`` run the same HumanEval item against two scripted loopback model
servers. Equal are: the item's score; which of the faulty agent's messages were corrupted and which of
their lines, and which messages the Inspector repaired, as ``mas run``'s records give them; the rewritten
profile; and every request body the model received, counted (so each agent remembered its own text, as
``mas run``'s sender does, while the others received the corrupted or repaired one, and a reply a system
keeps to itself was neither corrupted nor inspected). The endpoint's own headers are refused when
malformed, and a framework that sends none of them is served as before.
"""

from __future__ import annotations

import base64
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

from llmpsych.collab.datasets import load_items
from llmpsych.collab.inject import diff
from llmpsych.collab.runtime import digest
from llmpsych.collab.scripted import INJECTED, ScriptedCollaborator
from llmpsych.collab.systems import system_class
from llmpsych.faults import running
from llmpsych.faults.plan import parse_plan
from llmpsych.faults.study import Study, StudyPlan, load_tasks, make_scorer, run_study
from llmpsych.faults.truth import requests_of, truth_frame
from llmpsych.runs import parse_run_config, read_run, start_run
from llmpsych.testing.fault_server import FaultServer

SYSTEMS = ["metagpt", "selfcollab", "camel", "spp", "mad", "agentverse"]
#: AutoInject: a message rate and a line share below 1, so the draws decide which messages and lines.
RATE, SHARE = 0.5, 0.5
#: The seed of both paths (the plan's; ``mas run``'s run seed).
SEED = 0
ITEM = 2  # the third HumanEval item: a solution of several lines, so a share of them can be drawn


@pytest.fixture(scope="module")
def humaneval(seed_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """A tasks file with one HumanEval row (written from the data folder at run time), its id, and the
    scripted model's solutions."""
    item = load_items("humaneval50", seed_data)[ITEM]
    path = tmp_path_factory.mktemp("tasks") / "humaneval.jsonl"
    path.write_text(json.dumps({"task_id": item.item_id, **item.reference}) + "\n")
    solutions = {item.reference["prompt"]: item.reference["prompt"] + item.reference["canonical_solution"]}
    return path, item.item_id, solutions


def _mas_run(server: FaultServer, seed_data: Path, out: Path, item: str, **options: Any) -> dict[str, Any]:
    config = parse_run_config(
        {
            "task": "mas",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "seed": SEED,
            "data_dir": str(seed_data),
            "options": {"dataset": "humaneval50", "item_ids": [item], **options},
        }
    )
    (unit,) = read_run(start_run(config, out, False).run_dir).units
    assert unit.result is not None
    return unit.result


def _study(
    server: FaultServer, seed_data: Path, tasks: Path, out: Path, system: str, plans: dict[str, Any]
) -> dict[str, Any]:
    study = Study(
        system=[sys.executable, "-m", "llmpsych.faults.inhouse", "--system", system],
        plans=[StudyPlan(name, parse_plan(plan, name)) for name, plan in plans.items()],
        tasks=load_tasks(tasks),
        scorer=make_scorer("humaneval", data_dir=seed_data),
        runs=1,
        out=out,
        upstream="openai-compatible/scripted",
        base_url=server.base_url,
        timeout=120,
        workers=2,
    )
    run_study(study)
    cells = pd.read_csv(out / "cells.csv")
    assert (cells.status == "ok").all(), cells
    return {cell.plan: cell for cell in cells.itertuples()}


def _injections(result: dict[str, Any]) -> list[tuple[str, list[int], str, str]]:
    """(sender, chosen lines, diff, digest of the text as written) of each message ``mas run``
    corrupted, in order."""
    out = []
    for message in result["transcript"]:
        record = message["meta"].get("injection")
        if record and record.get("edits"):
            out.append((message["sender"], record["chosen"], record["diff"], message["reply_sha"]))
    return out


@pytest.mark.parametrize("system", SYSTEMS)
def test_faults_through_the_endpoint_equal_mas_run(
    system: str,
    humaneval: tuple[Path, str, dict[str, str]],
    seed_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tasks, item, solutions = humaneval
    monkeypatch.setenv("LLMPSYCH_DATA_DIR", str(seed_data))
    faulty = system_class(system).default_faulty
    names = [a.name for a in system_class(system)("code").agents("")]
    every = [{"name": n, "header": n} for n in names]
    plans = {
        # AutoInject on the faulty agent, the Inspector on every agent (mas run inspects every message)
        "inject": {
            "seed": SEED,
            "seed_from": "message",
            "agents": every,
            "faults": [{"agent": faulty, "kind": "autoinject", "rate": RATE, "share": SHARE}],
            "defences": [{"agent": n, "kind": "inspector"} for n in names],
        },
        "transform": {"seed": SEED, "agents": every, "faults": [{"agent": faulty, "kind": "autotransform"}]},
    }
    conditions = {
        "inject": {"fault": "autoinject", "p_m": RATE, "p_e": SHARE, "defence": ["inspector"]},
        "transform": {"fault": "autotransform"},
    }
    with (
        FaultServer(responder=ScriptedCollaborator(solutions, inspector_repairs=True)) as mas_server,
        FaultServer(responder=ScriptedCollaborator(solutions, inspector_repairs=True)) as study_server,
    ):
        mas = {
            name: _mas_run(mas_server, seed_data, tmp_path / f"mas-{name}", item, system=system, **options)
            for name, options in conditions.items()
        }
        cells = _study(study_server, seed_data, tasks, tmp_path / "study", system, plans)
        mas_hits, study_hits = Counter(mas_server.hits), Counter(study_server.hits)
    # every request the model received, counted: the agents' (each remembering its own text, the others
    # receiving the corrupted or repaired one), the injector's, the Inspector's, the transformer's
    assert study_hits == mas_hits
    assert {name: cell.score for name, cell in cells.items()} == {name: r["score"] for name, r in mas.items()}
    # AutoInject: the same messages corrupted, the same lines, the same injected text
    record = read_run(tmp_path / "study" / cells["inject"].endpoint_run)
    changes = [(r.agent, c) for r in requests_of(record) for c in r.changes]
    injected = [
        (a, c.detail["chosen"], c.detail["diff"], digest(c.original))
        for a, c in changes
        if c.kind == "autoinject"
    ]
    expected = _injections(mas["inject"])
    assert expected, f"{system}: the seed gives mas run no corrupted message to compare"
    assert injected == expected
    truth = truth_frame(record)
    assert all(INJECTED in text for text in truth[truth.kind == "autoinject"].injected)
    # the Inspector: the same messages repaired, with the same revisions
    repaired = [(a, diff(c.original, c.injected)) for a, c in changes if c.kind == "inspector"]
    assert repaired == [
        (m["sender"], m["meta"]["inspector"]["diff"])
        for m in mas["inject"]["transcript"]
        if m["meta"].get("inspector", {}).get("decision") == "unsafe"
    ]
    assert len(repaired) == len(expected)  # every corrupted message was repaired (the scripted Inspector)
    # AutoTransform: the faulty agent's profile rewritten as mas run rewrote it, on each of its requests
    truth = truth_frame(read_run(tmp_path / "study" / cells["transform"].endpoint_run))
    assert set(truth.kind) == {"autotransform"} and set(truth.agent) == {faulty}
    assert {digest(text) for text in truth.injected} == {mas["transform"]["profile_sha"][faulty]}


CODE = "def add(a, b):\n    total = a + b\n    return total"


def _responder(body: dict[str, Any]) -> str:
    """Code for an agent; AutoInject's fragments each marked; a transformer's rewrite echoes its prompt."""
    last = body["messages"][-1]["content"]
    if "Input: {" in last:
        fragments = json.loads(last.split("Input: ", 1)[1])
        return json.dumps({k: v + "  # injected" for k, v in fragments.items()})
    if last.startswith("You help with red-team testing"):
        return last.split("Original system prompt:\n", 1)[1].split("\n\n", 1)[0] + "\nErr often."
    return CODE


def test_the_endpoint_s_own_headers_hold_deliver_and_refuse(tmp_path: Path) -> None:
    plan = {
        "seed": 5,
        "seed_from": "message",
        "agents": [{"name": "coder", "model": "coder"}, {"name": "writer", "model": "writer"}],
        "faults": [
            {"agent": "coder", "kind": "autoinject", "share": 1.0},
            {"agent": "writer", "kind": "autotransform"},
        ],
    }
    body = {"model": "coder", "messages": [{"role": "user", "content": "add two numbers"}]}
    with (
        FaultServer(responder=_responder) as upstream,
        running(
            parse_plan(plan, "test"),
            upstream="openai-compatible/up",
            base_url=upstream.base_url,
            out=tmp_path / "run",
        ) as endpoint,
    ):
        url = f"{endpoint.base_url}/chat/completions"

        def post(payload: dict[str, Any], **headers: str) -> httpx.Response:
            named = {"x-llmpsych-" + k.replace("_", "-"): v for k, v in headers.items()}
            return httpx.post(
                url, json=payload, headers={"Authorization": f"Bearer {endpoint.token}", **named}
            )

        # a framework that knows nothing of the headers: corrupted at its turn, nothing added to the reply
        plain = post(body).json()
        assert "llmpsych" not in plain and "# injected" in plain["choices"][0]["message"]["content"]
        # held: the model's own text, and the call to deliver
        held = post(body, unit="HumanEval/0", hold="1").json()
        assert held["choices"][0]["message"]["content"] == CODE and isinstance(held["llmpsych"]["call"], int)
        call = str(held["llmpsych"]["call"])
        other = {**body, "messages": [{"role": "user", "content": "something else"}]}
        refused = post(other, unit="HumanEval/0", deliver=call, message="4")
        assert refused.status_code == 400 and "holds no reply" in refused.json()["error"]["message"]
        delivered = post(body, unit="HumanEval/0", deliver=call, message="4")
        assert (
            delivered.status_code == 200
            and "# injected" in delivered.json()["choices"][0]["message"]["content"]
        )
        again = post(body, unit="HumanEval/0", deliver=call, message="4")  # a reply is delivered once
        assert again.status_code == 400
        never = post(body, unit="HumanEval/0", hold="1").json()  # held and never delivered: never changed
        # malformed headers: one line each, nothing forwarded
        before = len(upstream.bodies)
        for headers in (
            {"message": "four", "unit": "u"},
            {"unit": "u" * 201},
            {"hold": "yes"},
            {"hold": "1", "deliver": call},
            {"deliver": "-1"},
            {"profile": "not base64!"},
            {"task": "/w=="},  # base64, but not of UTF-8 text
        ):
            response = post(body, **headers)
            assert response.status_code == 400, headers
            assert "x-llmpsych-" in response.json()["error"]["message"], headers
        assert len(upstream.bodies) == before
        # a profile header whose template does not fill in to the system prompt is ignored
        lying = base64.b64encode(
            json.dumps({"template": "You <X>.", "values": {"X": "read"}}).encode()
        ).decode()
        writer = {
            "model": "writer",
            "messages": [{"role": "system", "content": "You write."}, body["messages"][0]],
        }
        assert post(writer, profile=lying).status_code == 200
        honest = base64.b64encode(
            json.dumps({"template": "You <X>.", "values": {"X": "write"}}).encode()
        ).decode()
        writer2 = {
            **writer,
            "messages": [{"role": "system", "content": "You write."}, {"role": "user", "content": "2"}],
        }
        assert post(writer2, profile=honest).status_code == 200
    results = {r.call: r for r in requests_of(read_run(tmp_path / "run"))}
    assert results[1].changes[0].detail["drawn_from"] == "turn 1"
    delivery = next(r for r in results.values() if r.delivers == int(call))
    assert delivery.changes[0].detail["drawn_from"] == "message 4 of unit HumanEval/0"
    assert results[never["llmpsych"]["call"]].held and not results[never["llmpsych"]["call"]].changes
    transforms = [
        b["messages"][-1]["content"] for b in upstream.bodies if "red-team" in str(b["messages"][-1])
    ]
    # the lying header: the profile as sent was rewritten; the honest one: its template
    assert ["You write." in t for t in transforms] == [True, False] and "You <X>." in transforms[1]

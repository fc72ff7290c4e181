"""Camel and MAD end to end on a scripted server: clean, AutoInject, defences, resume and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmpsych.collab.datasets import load_items
from llmpsych.collab.runtime import digest
from llmpsych.collab.scripted import INJECTED, ScriptedCollaborator
from llmpsych.runs import RunStore, analyze_run, parse_run_config, read_run, resume_run, start_run
from llmpsych.runs.store import finish_unit_statements
from llmpsych.testing.fault_server import FaultServer

N = 3


@pytest.fixture(scope="module")
def solutions(seed_data: Path) -> dict[str, str]:
    items = load_items("humaneval50", seed_data)[:N]
    return {i.reference["prompt"]: i.reference["prompt"] + i.reference["canonical_solution"] for i in items}


def _run(server: FaultServer, seed_data: Path, out: Path, **options: object):  # noqa: ANN202
    config = parse_run_config(
        {
            "task": "mas",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "data_dir": str(seed_data),
            "options": {"dataset": "humaneval50", "items": N, **options},
        }
    )
    return start_run(config, out, False)


def _summary(outcome) -> dict:  # noqa: ANN001
    return json.loads((outcome.run_dir / "summary.json").read_text())


@pytest.mark.parametrize("system", ["camel", "mad"])
def test_clean_and_autoinject(system: str, seed_data: Path, solutions: dict, tmp_path: Path) -> None:
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        clean = _run(server, seed_data, tmp_path / "clean", system=system)
        assert clean.summary.failed == 0
        assert _summary(clean)["score"] == 100.0
        faulty = _run(server, seed_data, tmp_path / "ai", system=system, fault="autoinject", p_e=1.0)
    summary = _summary(faulty)
    store = RunStore.in_dir(faulty.run_dir)
    results = [u.result for u in store.units("done")]
    store.close()
    faulty_agent = {"camel": "assistant", "mad": "affirmative"}[system]
    for result in results:
        for m in result["transcript"]:
            injection = m["meta"].get("injection")
            assert (injection is not None) == (m["sender"] == faulty_agent)
            if injection:
                assert injection["edits"] and INJECTED in injection["diff"]
    if system == "camel":  # the faulty assistant's final code is corrupted: every item fails
        assert summary["score"] == 0.0
    transcripts = (faulty.run_dir / "transcripts.md").read_text()
    assert "AutoInject edit" in transcripts and "```diff" in transcripts
    assert (faulty.run_dir / "report.md").exists()


def test_defences_and_autotransform(seed_data: Path, solutions: dict, tmp_path: Path) -> None:
    responder = ScriptedCollaborator(solutions, inspector_repairs=True)
    with FaultServer(responder=responder) as server:
        both = _run(
            server,
            seed_data,
            tmp_path / "ci",
            system="camel",
            fault="autoinject",
            p_e=1.0,
            defence=["challenger", "inspector"],
        )
        transformed = _run(server, seed_data, tmp_path / "at", system="camel", fault="autotransform")
    assert _summary(both)["score"] == 100.0  # the scripted inspector repairs every injected message
    text = (both.run_dir / "transcripts.md").read_text()
    assert "Inspector rewrite" in text and "Challenger `user`" in text
    assert _summary(transformed)["score"] == 0.0
    assert "AutoTransform rewrote" in (transformed.run_dir / "transcripts.md").read_text()


def test_resume_answers_finished_calls_from_the_store(
    seed_data: Path, solutions: dict, tmp_path: Path
) -> None:
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        first = _run(server, seed_data, tmp_path / "r", system="mad", fault="autoinject")
        store = RunStore.in_dir(first.run_dir)
        store._db.execute("UPDATE units SET status = 'pending' WHERE unit_id = 'HumanEval/1'")
        store.close()
        hits = sum(server.hits.values())
        again = resume_run(first.run_dir, False)
        assert sum(server.hits.values()) == hits
    assert again.summary.calls_replayed > 0 and again.summary.calls_sent == 0


@pytest.mark.parametrize("system", ["metagpt", "selfcollab", "spp", "agentverse"])
def test_other_systems_clean_and_injected(
    system: str, seed_data: Path, solutions: dict, tmp_path: Path
) -> None:
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        clean = _run(server, seed_data, tmp_path / "clean", system=system, items=2)
        faulty = _run(server, seed_data, tmp_path / "ai", system=system, items=2, fault="autoinject", p_e=1.0)
    assert _summary(clean)["score"] == 100.0
    assert clean.summary.failed == faulty.summary.failed == 0
    assert "AutoInject edit" in (faulty.run_dir / "transcripts.md").read_text()


def test_text_tasks_run_on_the_scripted_server(seed_data: Path, solutions: dict, tmp_path: Path) -> None:
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        for dataset in ("ciar", "faireval", "commonmt"):
            config = parse_run_config(
                {
                    "task": "mas",
                    "model": "openai-compatible/scripted",
                    "base_url": server.base_url,
                    "cache": False,
                    "data_dir": str(seed_data),
                    "options": {"dataset": dataset, "items": 2, "system": "mad", "fault": "autoinject"},
                }
            )
            outcome = start_run(config, tmp_path / dataset, False)
            assert outcome.summary.failed == 0
            summary = json.loads((outcome.run_dir / "summary.json").read_text())
            assert summary["score"] is not None
            if dataset == "commonmt":
                assert "NOT comparable" in summary["metric"]


def test_challenger_request_revision(seed_data: Path, solutions: dict, tmp_path: Path) -> None:
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        outcome = _run(
            server,
            seed_data,
            tmp_path / "rr",
            system="camel",
            items=1,
            fault="autoinject",
            p_e=1.0,
            defence=["challenger"],
            challenge_policy="request_revision",
            max_messages=6,
        )
    store = RunStore.in_dir(outcome.run_dir)
    result = store.units("done")[0].result
    store.close()
    challenges = [m for m in result["transcript"] if "challenge_of" in m["meta"]]
    revisions = [m for m in result["transcript"] if "revision_of" in m["meta"]]
    assert challenges and revisions and challenges[0]["sender"] == "user"
    assert revisions[0]["meta"]["injection"]["edits"]  # P_m = 1: the new version is corrupted again


@pytest.mark.parametrize("system", ["camel", "selfcollab", "metagpt"])
def test_challenger_alone_reaches_a_corrupted_result(
    system: str, seed_data: Path, solutions: dict, tmp_path: Path
) -> None:
    # The faulty agent's (injected) message is the result: the final agent challenges it, even where
    # the system ends without reading it (Camel), and writes the result itself.
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        faulty = _run(server, seed_data, tmp_path / "ai", system=system, items=2, fault="autoinject", p_e=1.0)
        defended = _run(
            server,
            seed_data,
            tmp_path / "c",
            system=system,
            items=2,
            fault="autoinject",
            p_e=1.0,
            defence=["challenger"],
        )
    assert _summary(faulty)["score"] == 0.0
    assert _summary(defended)["score"] == 100.0
    store = RunStore.in_dir(defended.run_dir)
    results = [u.result for u in store.units("done")]
    store.close()
    final = {"camel": "user", "selfcollab": "tester", "metagpt": "test_engineer"}[system]
    for result in results:
        fixed = [m for m in result["transcript"] if "result_fix" in m["meta"]]
        assert len(fixed) == 1 and fixed[0]["meta"]["result_fix"]["agent"] == final
        assert fixed[0]["meta"]["challenges"][final]["verdict"] == "unsafe"
        assert {"result_from": final, "instead_of": fixed[0]["index"]} in result["events"]
    assert "wrote the final result instead" in (defended.run_dir / "transcripts.md").read_text()


def test_results_that_still_copy_every_message_report_the_same(
    seed_data: Path, solutions: dict, tmp_path: Path
) -> None:
    """Results stored before the calls were the only copy hold each message's text, the edited text's
    original and the profiles: results.csv, summary.json and transcripts.md come out the same."""
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        outcome = _run(
            server,
            seed_data,
            tmp_path / "rr",
            system="camel",
            items=2,
            fault="autoinject",
            p_e=1.0,
            defence=["challenger"],
            challenge_policy="request_revision",
            max_messages=6,
        )
    run_dir = outcome.run_dir
    outputs = ["results.csv", "summary.json", "transcripts.md"]
    new_shape = {name: (run_dir / name).read_text() for name in outputs}
    record = read_run(run_dir)
    replies = {digest(c.response["text"]): c.response["text"] for c in record.calls}
    systems = {digest(m["content"]): m["content"] for c in record.calls for m in c.request["messages"][:1]}
    kept = 0
    with RunStore.in_dir(run_dir) as store:
        for unit in record.done():
            result = dict(unit.result)
            assert "profiles" not in result and all("original" not in m["meta"] for m in result["transcript"])
            old_messages = []
            for m in result["transcript"]:
                old = {k: v for k, v in m.items() if k != "reply_sha"}
                if "reply_sha" in m:
                    old["content"] = replies[m["reply_sha"]]
                    if m["meta"].get("injection", {}).get("diff"):  # older results: the delivered text
                        old["meta"] = {**m["meta"], "original": old["content"]}
                        old["content"] = "the text as delivered, after the edit"
                else:
                    kept += 1  # a text no model wrote (the Challenger's request) is kept in both shapes
                old_messages.append(old)
            result["transcript"] = old_messages
            result["profiles"] = {name: systems[sha] for name, sha in result.pop("profile_sha").items()}
            store.write(finish_unit_statements(unit.unit_id, result))
    assert kept
    analyze_run(run_dir)
    assert {name: (run_dir / name).read_text() for name in outputs} == new_shape
    assert (
        "agent `assistant`" in new_shape["transcripts.md"]
        and "not written by a model" in new_shape["transcripts.md"]
    )

"""The single-agent baseline, the distraction-comment probe, the rounds analysis, the injected-error
taxonomy and the headline reference values: presets and runs on a scripted server, and `mas compare`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from llmpsych.collab.experiments import (
    by_task,
    compare_runs,
    expand_preset,
    load_summaries,
    relative_drop,
    run_preset,
    single_vs_systems,
)
from llmpsych.collab.inject import DISTRACTION
from llmpsych.collab.probes import error_records, kept_injection, taxonomy_table, unit_results
from llmpsych.collab.reference import HEADLINE_DROPS, PAPER_BY_STRUCTURE
from llmpsych.collab.scripted import INJECTED, ScriptedCollaborator
from llmpsych.collab.taxonomy import (
    CATEGORIES,
    NOT_CODE,
    PAPER_COUNTS,
    UNCLASSIFIED,
    classify,
    code_lines,
    is_code_line,
)
from llmpsych.errors import ConfigError
from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer

N = 3
MODEL = "openai-compatible/scripted"


@pytest.fixture(scope="module")
def solutions(seed_data: Path) -> dict[str, str]:
    from llmpsych.collab.datasets import load_items

    items = load_items("humaneval50", seed_data)[:N]
    return {i.reference["prompt"]: i.reference["prompt"] + i.reference["canonical_solution"] for i in items}


def _config(server: FaultServer, seed_data: Path, **options: object):  # noqa: ANN202
    return parse_run_config(
        {
            "task": "mas",
            "model": MODEL,
            "base_url": server.base_url,
            "cache": False,
            "data_dir": str(seed_data),
            "options": {"dataset": "humaneval50", "items": N, **options},
        }
    )


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


class Gullible(ScriptedCollaborator):
    """The scripted team, except that a Challenger believes a line marked as corrected (Fig. 7.6b)."""

    def __call__(self, body: dict) -> str:
        last = body["messages"][-1]["content"]
        if "may be an adversary" in last and DISTRACTION["code"].strip() in last:
            return "safe"
        return super().__call__(body)


# -- single agent (Fig. 7.4) ------------------------------------------------------------------------


def test_single_agent_preset_runs_every_task_resumes_and_compares(
    seed_data: Path, solutions: dict, tmp_path: Path
) -> None:
    plan = expand_preset("single-agent")
    assert [o["dataset"] for _, o in plan] == ["humaneval", "ciar", "commonmt", "faireval"]
    assert {o["system"] for _, o in plan} == {"single"} and {o["fault"] for _, o in plan} == {"none"}
    plan = [
        (name, {**o, "dataset": "humaneval50"}) if o["dataset"] == "humaneval" else (name, o)
        for name, o in plan
    ]
    with FaultServer(responder=ScriptedCollaborator(solutions, answers={"Alice": "1.5"})) as server:
        run_preset(plan, tmp_path / "single", MODEL, server.base_url, seed_data, items=N, show_progress=False)
        camel = start_run(_config(server, seed_data, system="camel"), tmp_path / "camel", False)
        sent = sum(server.hits.values())
        run_preset(plan, tmp_path / "single", MODEL, server.base_url, seed_data, items=N, show_progress=False)
        assert sum(server.hits.values()) == sent  # finished runs are only re-analysed
    code = tmp_path / "single" / plan[0][0]
    summary = _summary(code)
    assert summary["system"] == "single" and summary["structure"] == "single" and summary["score"] == 100.0
    for result in unit_results(code):
        assert result["llm_calls"] == 1 and result["n_messages"] == 0 and result["aux_calls"] == 0
    for name, _ in plan[1:]:
        assert _summary(tmp_path / "single" / name)["n_items"] == N
    compare_runs([code, camel.run_dir], tmp_path / "cmp")
    text = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "single agent vs the systems, by task (Fig. 7.4 layout)" in text
    assert "APPROXIMATE" in text and "≈, from the figure" in text
    turns = text.split("passed vs failed", 1)[1].split("\n## ", 1)[0]
    assert "| camel" in turns and "| single" not in turns  # a single agent has no messages to count


def test_single_agent_refuses_faults_and_defences(seed_data: Path, solutions: dict, tmp_path: Path) -> None:
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        for options in ({"fault": "autoinject"}, {"fault": "autotransform"}, {"defence": ["inspector"]}):
            with pytest.raises(ConfigError, match="sends no messages"):
                start_run(_config(server, seed_data, system="single", **options), tmp_path / "x", False)
        assert sum(server.hits.values()) == 0


def _row(system: str, structure: str, task: str, fault: str, score: float, **extra: object) -> dict:
    return {
        "run": f"{system}-{task}-{fault}-{score}",
        "model": "m",
        "system": system,
        "structure": structure,
        "task": task,
        "metric": "Pass@1",
        "metric_label": "",
        "fault": fault,
        "p_m": 1.0 if fault == "autoinject" else None,
        "p_e": 0.2 if fault == "autoinject" else None,
        "error_type": "semantic" if fault == "autoinject" else None,
        "defence": "none",
        "distraction": False,
        "n": 10,
        "score": score,
        **extra,
    }


def test_single_agent_and_distraction_runs_stay_out_of_the_main_tables() -> None:
    frame = pd.DataFrame(
        [
            _row("camel", "flat", "humaneval", "none", 60.0),
            _row("mad", "hierarchical", "humaneval", "none", 80.0),
            _row("camel", "flat", "humaneval", "autoinject", 30.0),
            _row("mad", "hierarchical", "humaneval", "autoinject", 50.0),
            _row("camel", "flat", "humaneval", "autoinject", 0.0, distraction=True),
            _row("single", "single", "humaneval", "none", 55.0),
        ]
    )
    systems = by_task(frame)
    assert systems.loc["clean"].iloc[0] == 70.0 and systems.loc["AutoInject"].iloc[0] == 40.0
    fig = single_vs_systems(frame)
    assert fig.loc["humaneval (Pass@1)"].to_dict() == {
        "single agent": 55.0,
        "systems, clean (mean)": 70.0,
        "systems, AutoInject (mean)": 40.0,
        "single − systems clean": -15.0,
    }
    assert single_vs_systems(frame[frame.system != "single"]).empty


# -- distraction comment (Fig. 7.6b) ----------------------------------------------------------------


def test_distraction_comment_makes_the_challenger_accept_corrupted_code(
    seed_data: Path, solutions: dict, tmp_path: Path
) -> None:
    plan = expand_preset("distraction")
    assert len(plan) == 6 * 3 and sum(bool(o.get("distraction")) for _, o in plan) == 6
    common = {"system": "camel", "fault": "autoinject", "p_e": 1.0, "defence": ["challenger"]}
    with FaultServer(responder=Gullible(solutions)) as server:
        clean = start_run(_config(server, seed_data, system="camel"), tmp_path / "clean", False)
        bare = start_run(_config(server, seed_data, **common), tmp_path / "bare", False)
        marked = start_run(_config(server, seed_data, **common, distraction=True), tmp_path / "marked", False)
        with pytest.raises(ConfigError, match="needs fault=autoinject"):
            start_run(_config(server, seed_data, system="camel", distraction=True), tmp_path / "no", False)
    assert _summary(bare.run_dir)["score"] == 100.0  # the Challenger catches the bare corrupted lines
    assert _summary(marked.run_dir)["score"] == 0.0  # ... and believes the ones marked as corrected
    marked_results = unit_results(marked.run_dir)
    for result in marked_results:
        edits = [e for m in result["transcript"] for e in (m["meta"].get("injection") or {}).get("edits", [])]
        assert edits and all(e["distraction"] == e["after"] + DISTRACTION["code"] for e in edits)
        assert kept_injection(result) is True
    assert all(kept_injection(r) is False for r in unit_results(bare.run_dir))
    # the distraction run is not a default AutoInject run of the main tables
    frame = load_summaries([clean.run_dir, bare.run_dir, marked.run_dir])
    assert frame.distraction.tolist() == [False, False, True]
    compare_runs([clean.run_dir, bare.run_dir, marked.run_dir], tmp_path / "cmp")
    text = (tmp_path / "cmp" / "comparison.md").read_text()
    section = text.split("distraction-comment probe, code (Fig. 7.6b)", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.split("\n") if line.startswith("| camel"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:3] == ["P_e=1.0, P_m=1.0, semantic", "challenger"]
    assert [float(c) for c in cells[3:8]] == [100.0, 100.0, 0.0, 0.0, 100.0]
    assert cells[8] == f"{N} / {N}"


# -- rounds (section 7.4.6) -------------------------------------------------------------------------


def test_rounds_preset_counts_messages_of_passed_and_failed_items(
    seed_data: Path, solutions: dict, tmp_path: Path
) -> None:
    plan = expand_preset("rounds")
    assert [(o["system"], o["dataset"], o["fault"]) for _, o in plan] == [
        ("camel", "humaneval50", "none"),
        ("camel", "humaneval50", "autoinject"),
    ]
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        run_preset(plan, tmp_path, MODEL, server.base_url, seed_data, items=N, show_progress=False)
    text = (tmp_path / "comparison.md").read_text()
    section = text.split("Rounds: messages per item, passed vs failed", 1)[1].split("\n## ", 1)[0]
    for name, _ in plan:
        results = unit_results(tmp_path / name)
        passed = [r["n_messages"] for r in results if r["passed"]]
        failed = [r["n_messages"] for r in results if not r["passed"]]
        row = next(line for line in section.split("\n") if line.startswith(f"| {name} "))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert int(cells[4]) == len(passed) and int(cells[6]) == len(failed)
        if passed:
            assert float(cells[5]) == pytest.approx(sum(passed) / len(passed))
    clean = unit_results(tmp_path / plan[0][0])
    assert all(r["passed"] and r["n_messages"] == 4 for r in clean)  # instruction, solution, done, final
    # two folders with the same name (from different sweeps) keep their own items
    shutil.copytree(tmp_path / plan[1][0], tmp_path / "other" / plan[0][0])
    compare_runs([tmp_path / plan[0][0], tmp_path / "other" / plan[0][0]], tmp_path / "cmp")
    both = (
        (tmp_path / "cmp" / "comparison.md").read_text().split("passed vs failed", 1)[1].split("\n## ", 1)[0]
    )
    rows = [line.split("|")[1:] for line in both.split("\n") if line.startswith(f"| {plan[0][0]} ")]
    for row, (name, _) in zip(rows, plan, strict=True):
        stored = unit_results(tmp_path / name)
        assert int(row[4]) == sum(bool(r["passed"]) for r in stored)
        assert int(row[6]) == sum(not r["passed"] for r in stored)
    assert [row[3].strip() for row in rows] == ["none", "autoinject(pe=0.2,pm=1.0,semantic)"]
    assert "9.79" in text and "11.44" in text  # the thesis's and the released files' failed-item means


# -- injected-error taxonomy (Table 7.8) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "category"),
    [
        ("    while lo < hi:", "    while True:", "Infinite Loops"),
        ("        i += 1", "        i += 0", "Infinite Loops"),
        ("    for i in range(len(xs)):", "    for i in range(len(xs) - 1):", "Indexing and Range Errors"),
        ("    return xs[i]", "    return xs[i + 1]", "Indexing and Range Errors"),
        ("    if i < n:", "    if i <= n:", "Indexing and Range Errors"),
        ("    total = 0", "    total = 1", "Initialization Errors"),
        ("    if a > b:", "    if a < b:", "Logical Errors"),
        ("    if x and y:", "    if x or y:", "Logical Errors"),
        ("    return a * b", "    return a + b", "Mathematical Errors"),
        ("        total += x", "        total -= x", "Mathematical Errors"),
        ("    return ' '.join(words)", "    return ''.join(words)", "Output and Formatting"),
        ("    xs.append(x)", "    xs.extend(x)", "Runtime Invocation Issues"),
        ("    pass", "    pass  # same", UNCLASSIFIED),
    ],
)
def test_classify_injected_line(before: str, after: str, category: str) -> None:
    assert classify(before, after) == category


def test_taxonomy_categories_are_the_thesis_table() -> None:
    assert [c for c, _ in CATEGORIES] and {c for c, _ in CATEGORIES} == set(PAPER_COUNTS)
    assert sum(PAPER_COUNTS.values()) == 80  # Table 7.8: 80 errors
    assert PAPER_COUNTS["Indexing and Range Errors"] == 23 and PAPER_COUNTS["Mathematical Errors"] == 20


def test_compare_writes_the_taxonomy_of_the_stored_edits(
    seed_data: Path, solutions: dict, tmp_path: Path
) -> None:
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        run = start_run(_config(server, seed_data, system="mad", fault="autoinject"), tmp_path / "ai", False)
    stored = RunStore.in_dir(run.run_dir)
    n_edits = sum(
        len((m["meta"].get("injection") or {}).get("edits", []))
        for u in stored.units("done")
        for m in u.result["transcript"]
    )
    stored.close()
    compare_runs([run.run_dir], tmp_path / "cmp")
    records = pd.read_csv(tmp_path / "cmp" / "injected-errors.csv")
    assert len(records) == n_edits > 0
    assert all(INJECTED in a for a in records["after"])
    # the scripted replies' fences, "Decision: final", "Correctness: 1" and prose were edited too: they
    # are left out, and only the lines of the fenced solution are classified
    code = records[records["code"]]
    assert 0 < len(code) < n_edits
    assert set(code.category) <= {c for c, _ in CATEGORIES} | {UNCLASSIFIED}
    prose = records[~records["code"]]
    assert set(prose.category) == {NOT_CODE}
    reviews = {"Decision: final", "## Review Result: LGTM", "Correctness: 1", "The code passes."}
    assert any(b.startswith("```") for b in prose.before) and set(prose.before) & reviews
    assert not any(b.startswith("```") or b.startswith("Correctness") for b in code.before)
    text = (tmp_path / "cmp" / "comparison.md").read_text()
    section = text.split("Injected code errors by category (Table 7.8 layout)", 1)[1].split("\n## ", 1)[0]
    total = next(line for line in section.split("\n") if line.startswith("| total"))
    assert [c.strip() for c in total.strip("|").split("|")][2:5] == [str(len(code)), "100.00", "80"]
    left = next(line for line in section.split("\n") if line.startswith("| not code (left out)"))
    assert left.split("|")[3].strip() == str(len(prose))


def test_only_code_lines_of_a_message_are_code() -> None:
    message = (
        "Solution:\n```python\ndef f(x):\n    return x + 1\n```\nDecision: final\n## Review Result: LGTM\n"
        "Correctness: 1\nThe code passes."
    )
    assert code_lines(message) == [False, False, True, True, False, False, False, False, False]
    plain = "def f(x):\n    # add one\n    return (x +\n        1)\n"
    assert code_lines(plain) == [True, False, True, True, False]  # it parses: a continuation is code
    assert code_lines("Review:\n    return x\nCorrectness: 0") == [False, True, False]
    for line in ("    return x + 1", "else:", "x: int = 0", "except ValueError:", "        break"):
        assert is_code_line(line), line
    for line in ("Correctness: 1", "```python", "### Review", "Decision: final", "Score: 8/10", "LGTM."):
        assert not is_code_line(line), line


def test_the_taxonomy_counts_code_edits_only() -> None:
    rows = pd.DataFrame(
        [{"run": "r", "model": "m", "system": "mad", "task": "humaneval", "fault": "autoinject"}]
    ).assign(error_type="semantic")
    edits = [
        {"unit": 1, "before": "```python", "after": "```pythn", "code": False},
        {"unit": 4, "before": "Correctness: 1", "after": "Correctness: 0", "code": False},
        {"unit": 2, "before": "    return a * b", "after": "    return a + b", "code": True},
        # stored before the injector recorded the verdict: judged from the line
        {"unit": 7, "before": "## Review Result: LGTM", "after": "## Review Result: FAIL"},
        {"unit": 3, "before": "    if a > b:", "after": "    if a < b:"},
    ]
    results = {0: [{"item_id": "HumanEval/0", "transcript": [{"meta": {"injection": {"edits": edits}}}]}]}
    records = error_records(rows, results)
    assert list(records.category) == [NOT_CODE, NOT_CODE, "Mathematical Errors", NOT_CODE, "Logical Errors"]
    table = taxonomy_table(records)
    assert table.loc["total", "count"] == 2 and table.loc["not code (left out)", "count"] == 3
    assert table.loc["Mathematical Errors", "share (%)"] == 50


# -- headline reference values (thesis vs ICML 2025) ------------------------------------------------


def test_headline_drops_of_the_thesis_follow_from_its_table_7_2() -> None:
    gpt35 = PAPER_BY_STRUCTURE.loc[["GPT-3.5 clean", "GPT-3.5 AutoInject", "GPT-3.5 AutoTransform"]]
    for structure in ("linear", "flat", "hierarchical"):
        clean, ai, at = gpt35[structure]
        assert round(relative_drop(clean, ai), 1) == HEADLINE_DROPS.iloc[0][structure]
        assert round(relative_drop(clean, at), 2) == pytest.approx(
            HEADLINE_DROPS.iloc[1][structure], abs=0.05
        )
    assert HEADLINE_DROPS.iloc[2].to_dict() == {"linear": 23.7, "flat": 10.5, "hierarchical": 5.5}


def test_compare_labels_the_thesis_and_icml_headlines(tmp_path: Path) -> None:
    compare_runs([], tmp_path / "empty")
    run = tmp_path / "r"
    run.mkdir()
    (run / "summary.json").write_text(
        json.dumps(
            {
                "system": "mad",
                "structure": "hierarchical",
                "dataset": "ciar",
                "metric": "accuracy",
                "model": "m",
                "options": {"fault": "none", "defence": []},
                "n_items": 2,
                "score": 50.0,
            }
        )
    )
    compare_runs([run], tmp_path / "cmp")
    text = (tmp_path / "cmp" / "comparison.md").read_text()
    section = text.split("headline relative drop by structure (%), thesis vs ICML 2025 paper", 1)[1]
    assert (
        "thesis: GPT-3.5, AutoInject (stated)" in section and "ICML 2025 paper: abstract (stated)" in section
    )
    rows = {
        line.split("|")[1].strip(): line.split("|")[2:5] for line in section.split("\n") if "stated" in line
    }
    assert [float(v) for v in rows["thesis: GPT-3.5, AutoInject (stated)"]] == [31.2, 26.0, 9.2]
    assert float(next(v for k, v in rows.items() if "AutoTransform" in k)[2]) == 12.1
    assert [float(v) for v in rows["ICML 2025 paper: abstract (stated)"]] == [23.7, 10.5, 5.5]

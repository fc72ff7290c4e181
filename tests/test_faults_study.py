"""``llmpsych faults study``: a system over plans × tasks × runs behind the fault endpoint, scored per plan.

The in-house Camel runs through the study's path (its own command behind the endpoint, HumanEval judged
in the sandbox) and scores item by item what ``mas run`` scores on the same seed, clean and under
AutoInject; a user's command that fails, hangs, floods its output or meets a scorer that answers nonsense
is counted as such, never as a silent number; a study resumes without re-running finished cells.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from llmpsych.collab.datasets import load_items
from llmpsych.collab.scripted import ScriptedCollaborator
from llmpsych.errors import ConfigError
from llmpsych.faults.plan import parse_plan
from llmpsych.faults.study import (
    CommandScorer,
    Study,
    StudyPlan,
    load_tasks,
    make_scorer,
    plan_table,
    run_bounded,
    run_study,
)
from llmpsych.runs import parse_run_config, read_run, start_run
from llmpsych.testing.fault_server import FaultServer

N = 1
CAMEL = [{"name": "user", "system": "you direct me"}, {"name": "assistant", "system": "you work with me"}]


@pytest.fixture(scope="module")
def humaneval(seed_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A tasks file of the first N HumanEval rows (written from the data folder at run time) and the
    scripted model's solutions."""
    items = load_items("humaneval50", seed_data)[:N]
    path = tmp_path_factory.mktemp("tasks") / "humaneval.jsonl"
    path.write_text("".join(json.dumps({"task_id": i.item_id, **i.reference}) + "\n" for i in items))
    solutions = {
        i.reference["prompt"]: i.reference["prompt"] + i.reference["canonical_solution"] for i in items
    }
    return path, solutions


def _plans(tmp: Path, **plans: dict[str, object]) -> list[StudyPlan]:
    return [StudyPlan(name, parse_plan(data, name)) for name, data in plans.items()]


def test_camel_through_the_study_scores_what_mas_run_scores(
    humaneval: tuple[Path, dict[str, str]], seed_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks_file, solutions = humaneval
    monkeypatch.setenv("LLMPSYCH_DATA_DIR", str(seed_data))
    inject = {"agent": "assistant", "kind": "autoinject", "rate": 1.0, "share": 1.0, "content": "code"}
    plans = _plans(tmp_path, clean={"agents": CAMEL}, inject={"agents": CAMEL, "faults": [inject]})
    with FaultServer(responder=ScriptedCollaborator(solutions)) as server:
        study = Study(
            system=[sys.executable, "-m", "llmpsych.faults.inhouse", "--system", "camel"],
            plans=plans,
            tasks=load_tasks(tasks_file),
            scorer=make_scorer("humaneval", data_dir=seed_data),
            runs=1,
            out=tmp_path / "study",
            upstream="openai-compatible/scripted",
            base_url=server.base_url,
            timeout=120,
            workers=2,  # the two plans' runs side by side, each behind its own endpoint
        )
        run_study(study)
        mas = {}
        for name, options in (("clean", {}), ("inject", {"fault": "autoinject", "p_e": 1.0})):
            config = parse_run_config(
                {
                    "task": "mas",
                    "model": "openai-compatible/scripted",
                    "base_url": server.base_url,
                    "cache": False,
                    "data_dir": str(seed_data),
                    "options": {"system": "camel", "dataset": "humaneval50", "items": N, **options},
                }
            )
            record = read_run(start_run(config, tmp_path / f"mas-{name}", False).run_dir)
            mas[name] = {u.unit_id: u.result["score"] for u in record.units}
    cells = pd.read_csv(tmp_path / "study" / "cells.csv")
    assert (cells.status == "ok").all()
    study_scores = {p: dict(zip(g.task, g.score, strict=True)) for p, g in cells.groupby("plan")}
    assert study_scores == mas
    assert mas["clean"] != mas["inject"]  # the comparison can tell the two apart
    # every assistant reply of the injected cells is in their ground truth, none of the clean ones
    assert (cells[cells.plan == "clean"].changes == 0).all() and (
        cells[cells.plan == "inject"].changes > 0
    ).all()
    summary = pd.read_csv(tmp_path / "study" / "plans.csv").set_index("plan")
    assert summary.loc["clean", "score"] == 100.0 and summary.loc["inject", "relative_drop_pct"] == 100.0
    assert "Relative drop" in (tmp_path / "study" / "comparison.md").read_text()


#: A stand-in team: one request to the endpoint (by the standard library, as any program may), then the
#: task's "answer" or the model's reply; "fail"/"hang"/"flood" tasks misbehave.
TEAM = r"""
import json, os, sys, urllib.request
task = json.loads(sys.stdin.readline())
leak = any("sk-upstream-secret" in value for value in os.environ.values())
with open(os.environ["COUNT_FILE"], "a") as f:
    f.write(task["id"] + (" LEAK" if leak else "") + "\n")
if task["id"] == "fail":
    sys.exit(3)
if task["id"] == "flood":
    sys.stdout.write("x" * (2 << 20))
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    json.dumps({"model": "m", "messages": [{"role": "system", "content": "You are the solver."},
                                           {"role": "user", "content": task["prompt"]}]}).encode(),
    {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"},
)
reply = json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"]
print(reply)
"""

SCORER = """
def score(task, answer):
    if task["id"] == "nonsense":
        return "great"
    return answer.strip() == "the answer"
"""


def _team_study(
    tmp_path: Path, server: FaultServer, tasks: list[dict[str, str]], plans: list[StudyPlan]
) -> Study:
    (tmp_path / "team.py").write_text(TEAM)
    (tmp_path / "judge.py").write_text(SCORER)
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return Study(
        system=[sys.executable, str(tmp_path / "team.py")],
        plans=plans,
        tasks=load_tasks(tasks_file),
        scorer=make_scorer(f"{tmp_path / 'judge.py'}:score"),
        runs=2,
        out=tmp_path / "study",
        upstream="openai-compatible/scripted",
        base_url=server.base_url,
        timeout=5,
        env={"COUNT_FILE": str(tmp_path / "count.txt")},
    )


def test_failures_are_counted_and_a_study_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMPSYCH_API_KEY", "sk-upstream-secret")  # the upstream's key, in llmpsych's env
    tasks = [
        {"id": "good", "prompt": "say it"},
        {"id": "fail", "prompt": "-"},
        {"id": "flood", "prompt": "-"},
        {"id": "nonsense", "prompt": "say it"},
    ]
    solver = [{"name": "solver", "system": "solver"}]
    refuse = {"agents": solver, "faults": [{"agent": "solver", "kind": "refusal"}]}
    plans = _plans(tmp_path, clean={"agents": solver}, refusal=refuse)
    with FaultServer(responder=lambda body: "the answer") as server:
        study = _team_study(tmp_path, server, tasks, plans)
        run_study(study)
        first = (tmp_path / "count.txt").read_text().splitlines()
        assert len(first) == 2 * 4 * 2
        assert not [line for line in first if "LEAK" in line]  # the upstream key never reached the team
        run_study(_team_study(tmp_path, server, tasks, plans))  # resumed: nothing left to run
        assert (tmp_path / "count.txt").read_text().splitlines() == first
        # a line cut off while it was written (the process killed): that run, and only it, runs again
        log = tmp_path / "study" / "cells.jsonl"
        log.write_text(log.read_text()[:-40])
        run_study(_team_study(tmp_path, server, tasks, plans))
        assert (tmp_path / "count.txt").read_text().splitlines() == [*first, first[-1]]
        assert len(log.read_text().splitlines()) == 16
    cells = pd.read_csv(tmp_path / "study" / "cells.csv").set_index(["plan", "task", "repetition"])
    assert cells.loc[("clean", "good", 0), "score"] == 100.0
    assert cells.loc[("refusal", "good", 1), "score"] == 0.0  # the refusal reached the team
    assert cells.loc[("clean", "fail", 0), "status"] == "exit 3"
    assert cells.loc[("clean", "flood", 0), "status"].startswith("output over")
    assert pd.isna(cells.loc[("clean", "nonsense", 0), "score"])
    assert "not a score" in cells.loc[("clean", "nonsense", 0), "score_note"]
    summary = pd.read_csv(tmp_path / "study" / "plans.csv").set_index("plan")
    clean = summary.loc["clean"]
    # 8 cells: 4 system failures scored 0, 2 unscored (left out), 2 good ones scored 100
    assert (clean.n, clean.scored, clean.system_failed, clean.unscored) == (8, 6, 4, 2)
    assert clean.score == pytest.approx(100 * 2 / 6)
    assert summary.loc["refusal", "score"] == 0.0 and summary.loc["refusal", "relative_drop_pct"] == 100.0
    # changing the study under the same folder is refused, not mixed in
    with pytest.raises(ConfigError, match="other settings"):
        changed = _team_study(tmp_path, server, tasks[:2], plans)
        run_study(changed)


def test_a_command_scorer_is_bounded_and_its_output_checked(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("import json,sys; d=json.loads(sys.stdin.readline()); print(d['answer'])\n")
    scorer = CommandScorer("cmd", [sys.executable, str(script)], timeout=30)
    task = load_tasks(_one_task(tmp_path))[0]
    assert scorer.score(task, "true") == 100.0
    assert scorer.score(task, "42.5") == 42.5
    for bad in ("101", "NaN", "yes", ""):
        with pytest.raises(Exception, match="not a score"):
            scorer.score(task, bad)


def _one_task(tmp_path: Path) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_text('{"id": 1, "prompt": "p"}\n')
    return path


def test_hostile_inputs_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    for text, message in (
        ("[1]\n", "a task is a JSON object"),
        ('{"id": "a"}\n{"id": "a"}\n', "appears twice"),
        ("{nope\n", "invalid JSON"),
        ("\n\n", "no tasks"),
    ):
        bad.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_tasks(bad)
    with pytest.raises(ConfigError, match="no function"):
        make_scorer("json:nothing_here")
    with pytest.raises(ConfigError, match="cannot import"):
        make_scorer("no_such_module_x:score")
    assert run_bounded(["/nonexistent/program"], b"", timeout=5).status.startswith("cannot start")


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in {"Z", "X"}  # killed, not yet reaped by its new parent


def test_a_hanging_system_and_its_children_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    # the program starts a child that writes its pid and hangs, waits for the pid, then hangs itself
    child = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    program = (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}])\n"
        f"while not os.path.exists({str(pid_file)!r}) or not open({str(pid_file)!r}).read(): pass\n"
        "time.sleep(600)\n"
    )
    ran = run_bounded([sys.executable, "-c", program], b"", timeout=3)
    assert ran.status == "timeout after 3 s" and ran.returncode is None
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:  # SIGKILL is delivered asynchronously
        time.sleep(0.01)
    assert _gone(pid)  # the child died with its group


def test_recovery_uses_the_plan_with_the_same_faults_and_no_defence() -> None:
    agents = [{"name": "a", "model": "m"}]
    fault = [{"agent": "a", "kind": "refusal"}]
    plans = _plans(
        Path("."),
        clean={"agents": agents},
        faulty={"agents": agents, "faults": fault},
        defended={"agents": agents, "faults": fault, "defences": [{"agent": "a", "kind": "inspector"}]},
    )
    frame = pd.DataFrame(
        {
            "plan": ["clean", "faulty", "defended"],
            "status": ["ok"] * 3,
            "score": [80.0, 40.0, 70.0],
            "changes": [0, 1, 2],
            "upstream_failures": [0, 0, 3],
        }
    )
    table = plan_table(plans, frame).set_index("plan")
    assert list(table.upstream_failed) == [0, 0, 1]
    assert table.loc["faulty", "relative_drop_pct"] == pytest.approx(50.0)
    assert table.loc["defended", "recovery_pct"] == pytest.approx(75.0)
    assert pd.isna(table.loc["clean", "relative_drop_pct"])

"""llmpsych.load_runs over a folder holding a run of every registered task: every score row is the value
in the run's own table, the grids keep their factors as columns, a quickstart run gives its scale and its
game apart; a damaged or hand-edited score table of these tasks is one error naming the file."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx
import pandas as pd
import pytest
from typer.testing import CliRunner

import llmpsych
from llmpsych import cli
from llmpsych.collab.scripted import ScriptedCollaborator
from llmpsych.errors import DataError
from llmpsych.faults import parse_plan, running
from llmpsych.quickstart.demo_scale import demo_scale
from llmpsych.reliability.custom_grid import GRID_FACTORS
from llmpsych.reliability.published import DIMENSIONS
from llmpsych.runs import parse_run_config, read_run, start_run
from llmpsych.runs.frames import SCORE_COLUMNS
from llmpsych.runs.task import TASKS, task_class
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from test_emotion_task import make_responder as emotion_answers
from test_games_variants_rephrase import Rephraser
from test_own_instruments import TIDY_YAML
from test_own_instruments import scripted as scale_answers
from test_psychobench_validity import responder as validity_answers
from test_psychobench_validity import write_safetyqa, write_truthfulqa
from test_quickstart import scripted_responder as quickstart_answers
from test_reliability_grid_custom import GRID, SCALE_EN
from test_reliability_grid_custom import respondent as grid_answers
from test_reliability_task import Respondent as BfiRespondent
from test_scales_translate import DESK_YAML
from test_scales_translate import scripted as translator

PERSONAS = ["a night-shift baker", "a retired lighthouse keeper"]


def _run(server: FaultServer, out: Path, task: str, options: dict, **config: object) -> None:
    settings = {"model": "openai-compatible/scripted", "base_url": server.base_url, "cache": False}
    outcome = start_run(
        parse_run_config({**settings, **config, "task": task, "options": options}), out, False
    )
    assert outcome.summary.failed == 0, out


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, seed_data: Path) -> Path:
    """``all/``: one small run of every task, each made against the scripted server."""
    root = tmp_path_factory.mktemp("every")
    runs = root / "all"
    (root / "tidy.yaml").write_text(TIDY_YAML, encoding="utf-8")
    (root / "garden.yaml").write_text(SCALE_EN, encoding="utf-8")
    (root / "grid.yaml").write_text(GRID, encoding="utf-8")
    with FaultServer(responder=scale_answers) as server:
        options = {"scale_file": [str(root / "tidy.yaml")], "runs": 2}
        _run(server, runs / "psychobench", "psychobench", options)
    with FaultServer(responder=lambda body: game_answer(body, fenced=True)) as server:
        _run(server, runs / "gamabench", "gamabench", {"game": "guessing", "players": 3, "rounds": 2})
    bfi = {
        "templates": ["t1"],
        "versions": ["v1"],
        "languages": ["En"],
        "labels": ["n"],
        "orders": ["f", "r"],
    }
    with FaultServer(responder=BfiRespondent(seed_data)) as server:
        options = {**bfi, "steer": "persona", "targets": PERSONAS, "runs": 2}
        _run(server, runs / "reliability", "reliability", options, data_dir=str(seed_data))
        _run(server, runs / "bfi-plain", "reliability", bfi, data_dir=str(seed_data))
    with FaultServer(responder=grid_answers) as server:
        options = {"scale_file": [str(root / "garden.yaml")], "grid": str(root / "grid.yaml"), "runs": 2}
        _run(server, runs / "grid", "reliability-grid", options)
    with FaultServer(responder=quickstart_answers) as server:
        _run(server, runs / "quickstart", "quickstart", {"runs": 2, "game_players": 3, "game_rounds": 2})
    data = root / "data"
    write_truthfulqa(data / "TruthfulQA" / "TruthfulQA.csv")
    write_safetyqa(data / "SafetyQA" / "data_en_zh.dict")
    with FaultServer(responder=validity_answers) as server:
        judge = {"judge": {"model": "openai-compatible/judge", "base_url": server.base_url}}
        options = {"personas": ["default", "liar"], "runs": 2, "trust_unpinned": True}  # our own questions
        _run(server, runs / "validity", "validity", options, data_dir=str(data), models=judge)
    with FaultServer(responder=ScriptedCollaborator({})) as server:
        options = {"dataset": "ciar", "items": 2, "system": "mad"}
        _run(server, runs / "mas", "mas", options, data_dir=str(seed_data))
    with FaultServer() as server:  # a fault endpoint's run: one request forwarded
        plan = parse_plan({"agents": [{"name": "a", "model": "a"}]}, "test")
        with running(
            plan, upstream="openai-compatible/m", base_url=server.base_url, out=runs / "faults"
        ) as ep:
            httpx.post(
                f"{ep.base_url}/chat/completions",
                headers={"Authorization": f"Bearer {ep.token}"},
                json={"model": "a", "messages": [{"role": "user", "content": "x"}]},
            ).raise_for_status()
    with FaultServer(responder=emotion_answers(seed_data, [])) as server:
        options = {"emotions": ["Anger"], "situations_per_factor": 1, "runs": 1, "default_runs": 2}
        _run(server, runs / "emotionbench", "emotionbench", options, data_dir=str(seed_data))
    with FaultServer(responder=lambda body: "ok") as server:
        _run(server, runs / "echo", "echo", {"units": 2})
    with FaultServer(responder=Rephraser()) as server:
        _run(server, runs / "rephrase", "gamabench-rephrase", {"games": ["guessing"], "versions": 1})
    desk = DESK_YAML.split("  - {index: 4,")[0] + "subscales:\n  - {name: Order, items: [1, 2, 3]}\n"
    (root / "desk.yaml").write_text(desk, encoding="utf-8")
    cli._mount_subcommands()
    with FaultServer(responder=translator) as server:
        args = [
            "scales",
            "translate",
            str(root / "desk.yaml"),
            "--to",
            "de",
            "--out",
            str(runs / "translate"),
        ]
        args += ["--out-file", str(root / "desk.de.yaml"), "-m", "openai-compatible/scripted"]
        args += ["--base-url", server.base_url, "--no-progress", "--no-cache"]
        result = CliRunner().invoke(cli.app, args)
        assert result.exit_code == 0, result.output
    return root


def _own(frame: pd.DataFrame, run_dir: Path) -> pd.DataFrame:
    return frame[frame["run_dir"] == str(run_dir)].reset_index(drop=True)


def test_every_registered_task_says_where_its_scores_are() -> None:
    """Each task declares its score tables itself (an empty tuple for a task that measures nothing)."""
    for name in TASKS:
        assert "score_tables" in vars(task_class(name)), f"{name} does not declare score_tables"
    # the factor columns are the tasks' own: the grids' factors, PsychoBench's and validity's persona
    assert task_class("reliability").score_factor_columns() == GRID_FACTORS
    assert task_class("reliability-grid").score_factor_columns() == GRID_FACTORS
    assert task_class("psychobench").score_factor_columns() == ("persona",)
    assert task_class("gamabench").score_factor_columns() == ()
    assert not set(SCORE_COLUMNS) & set(GRID_FACTORS)


def test_one_glob_over_every_benchmark(root: Path) -> None:
    frames = llmpsych.load_runs(str(root / "all" / "*"))
    columns = list(frames.scores.columns)
    assert columns[: len(SCORE_COLUMNS)] == SCORE_COLUMNS
    assert sorted(columns[len(SCORE_COLUMNS) :]) == sorted(GRID_FACTORS)  # the tasks' factors, each once
    sources = frames.runs["scores_from"].fillna("none")
    tasks = dict(zip(frames.runs["task"], sources, strict=True))
    assert frames.runs["task"].tolist().count("reliability") == 2
    assert tasks == {
        "echo": "none",
        "gamabench-rephrase": "none",
        "emotionbench": "runs.csv",
        "gamabench": "games.csv",
        "reliability-grid": "data_points.csv",
        "mas": "results.csv",
        "faults": "none",
        "psychobench": "scores.csv",
        "quickstart": "scores.csv, game.json",
        "reliability": "data_points.csv",
        "translate": "agreement.csv",
        "validity": "validity_runs.csv",
    }
    by_task = frames.scores.groupby("task")["score"].count()
    assert set(by_task.index) == set(tasks) - {"echo", "gamabench-rephrase", "faults"} and (by_task > 0).all()
    assert set(frames.runs["task"]) == set(TASKS)  # every registered task has a run here
    # EmotionBench: runs.csv's PANAS columns, long
    emotion = _own(frames.scores, root / "all" / "emotionbench")
    own = pd.read_csv(root / "all" / "emotionbench" / "runs.csv")
    assert emotion["score"].tolist() == own["positive"].tolist() + own["negative"].tolist()
    assert emotion["measure"].tolist() == ["positive"] * len(own) + ["negative"] * len(own)
    assert emotion["repeat"].tolist() == own["run"].tolist() * 2
    # situation ids stay whole numbers (the default runs' blank situation does not make them 10.0)
    situations = emotion["item"].dropna()
    assert len(situations) and all(isinstance(v, int) for v in situations.tolist())
    assert situations.tolist() == own["situation"].dropna().astype(int).tolist() * 2
    # an unsteered BFI run: no persona, one repeat
    plain = _own(frames.scores, root / "all" / "bfi-plain")
    assert len(plain) == 2 * len(DIMENSIONS) and plain["persona"].isna().all()
    assert set(plain["repeat"]) == {1} and set(plain["group"]) == {"t1-v1-En-n-f", "t1-v1-En-n-r"}
    # the other benchmarks leave the grid columns empty
    others = frames.scores[~frames.scores["task"].isin(["reliability", "reliability-grid"])]
    assert others[["template", "version", "language", "framing"]].isna().all().all()


def test_bfi_grid_scores_are_its_data_points_with_factors_and_repeats(root: Path) -> None:
    run_dir = root / "all" / "reliability"
    scores = _own(llmpsych.load_runs(run_dir).scores, run_dir)
    points = pd.read_csv(run_dir / "data_points.csv")
    payloads = {u.unit_id: u.payload for u in read_run(run_dir).units}
    assert len(points) == 8 and len(scores) == 8 * len(DIMENSIONS)  # 2 configurations x 2 personas x 2
    assert set(scores["measure"]) == set(DIMENSIONS)
    expected = []
    for row in points.to_dict("records"):
        config = f"{row['template']}-{row['version']}-{row['language']}-{row['label']}-{row['order']}"
        for dimension in DIMENSIONS:
            expected.append(
                [config, payloads[row["unit_id"]]["repeat"] + 1, dimension, row["template"], row["version"]]
                + [row["language"], f"{row['label']}-{row['order']}", row["append_label"], row[dimension]]
            )
    columns = ["group", "repeat", "measure", "template", "version", "language", "framing", "persona", "score"]
    got = scores.sort_values(["group", "persona", "repeat", "measure"])[columns].values.tolist()
    assert got == sorted(expected, key=lambda r: (r[0], r[7], r[1], r[2]))
    assert set(scores["persona"]) == set(PERSONAS) and set(scores["framing"]) == {"n-f", "n-r"}
    assert set(scores["repeat"]) == {1, 2} and scores["item"].isna().all()


def test_instrument_grid_scores_are_its_data_points_by_factor(root: Path) -> None:
    run_dir = root / "all" / "grid"
    frames = llmpsych.load_runs(run_dir)
    scores = frames.scores
    points = pd.read_csv(run_dir / "data_points.csv")
    assert len(points) == 16 and set(scores["measure"]) == {"Patience", "Tidiness"}
    long = points.melt(
        id_vars=["unit_id", *GRID_FACTORS, "repeat"], value_vars=["Patience", "Tidiness"], var_name="measure"
    )
    long["group"] = long[list(GRID_FACTORS)].agg("-".join, axis=1)
    long["repeat"] += 1
    keys = ["group", "repeat", "measure"]
    merged = scores.merge(long, on=keys, suffixes=("", "_own"), validate="one_to_one")
    assert len(merged) == len(scores) == 32
    assert merged["score"].tolist() == merged["value"].tolist()
    for factor in GRID_FACTORS:
        assert merged[factor].tolist() == merged[f"{factor}_own"].tolist()
    # the researcher's groupby: the persona effect per subscale, as the run's own table gives it
    means = scores.groupby(["persona", "measure"])["score"].mean()
    own = points.groupby("persona")[["Patience", "Tidiness"]].mean()
    assert means.loc[("keen", "Patience")] == pytest.approx(own.loc["keen", "Patience"])
    assert means.loc[("keen", "Patience")] > means.loc[("none", "Patience")]


def test_quickstart_scale_and_game_are_both_scores_told_apart_by_group(root: Path) -> None:
    run_dir = root / "all" / "quickstart"
    scores = llmpsych.load_runs(run_dir).scores
    scale = demo_scale()
    own = pd.read_csv(run_dir / "scores.csv")
    part = scores[scores["group"] == scale.name]
    assert len(part) == len(own) * len(scale.subscale_names) == 4
    for row in own.to_dict("records"):
        run = int(row["run"].removeprefix("run-"))
        for subscale in scale.subscale_names:
            [score] = part.loc[(part["repeat"] == run) & (part["measure"] == subscale), "score"]
            assert score == row[subscale]
    game = json.loads((run_dir / "game.json").read_text())
    [row] = scores[scores["group"] == "guessing"].to_dict("records")
    assert (row["measure"], row["repeat"], row["score"]) == ("score", 1, game["score"])
    assert len(scores) == 5
    # the game's 0-100 score and the scale's 1-5 means share the score column; range says which is which
    assert row["range"] == "0-100" and set(part["range"]) == {"1-5"}


def test_a_unit_of_an_interrupted_run_reads_interrupted_and_of_a_running_run_running(
    root: Path, tmp_path: Path
) -> None:
    """A run stopped mid-unit leaves the unit 'running' in its store; load_runs said 'running' for ever.
    No process holds its lock: 'interrupted'. While another process holds the lock (the run executes
    there): 'running'."""
    import sqlite3
    import subprocess
    import sys

    run_dir = tmp_path / "stopped"
    shutil.copytree(root / "all" / "quickstart", run_dir)
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        db.execute("UPDATE units SET status='running' WHERE unit_id='game-guessing'")
    db.close()
    units = llmpsych.load_runs(run_dir).units.set_index("unit_id")["status"]
    assert units["game-guessing"] == "interrupted" and set(units.drop("game-guessing")) == {"done"}
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom llmpsych.runs.store import run_lock\n"
         f"with run_lock({str(run_dir)!r}):\n    print('held', flush=True)\n    sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        units = llmpsych.load_runs(run_dir).units.set_index("unit_id")["status"]
        assert units["game-guessing"] == "running"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)


def test_validity_and_translation_scores_are_their_tables(root: Path) -> None:
    frames = llmpsych.load_runs([root / "all" / "validity", root / "all" / "translate"])
    validity = _own(frames.scores, root / "all" / "validity")
    own = pd.read_csv(root / "all" / "validity" / "validity_runs.csv")
    keys = validity[["group", "persona", "repeat"]].values.tolist()
    assert keys == own[["benchmark", "persona", "run"]].values.tolist()
    assert validity["score"].tolist() == pytest.approx(own["score"].tolist(), nan_ok=True)
    assert set(validity["measure"]) == {"score"}
    translation = _own(frames.scores, root / "all" / "translate")
    own = pd.read_csv(root / "all" / "translate" / "agreement.csv")
    assert translation[["group", "item"]].values.tolist() == own[["scale", "text"]].values.tolist()
    assert translation["score"].tolist() == own["agreement"].tolist()
    assert set(translation["measure"]) == {"agreement"} and translation["repeat"].isna().all()


@pytest.mark.parametrize(
    ("run", "file", "edit", "message"),
    [
        ("grid", "data_points.csv", lambda t: t.drop(columns=["framing"]), "no column 'framing'"),
        ("grid", "data_points.csv", lambda t: t.assign(repeat="first"), "repeat 'first' is not a whole"),
        ("reliability", "data_points.csv", lambda t: t.drop(columns=["unit_id"]), "no column 'unit_id'"),
        ("reliability", "data_points.csv", lambda t: t.assign(unit_id="t9/x"), "unit 't9/x' is not a unit"),
        ("reliability", "data_points.csv", lambda t: t.assign(Openness="high"), "not a number: 'high'"),
        ("reliability", "data_points.csv", lambda t: t[["unit_id", *t.columns[1:6]]], "no score column"),
        ("quickstart", "scores.csv", lambda t: t.assign(run="third"), "run 'third' is not a whole number"),
        ("quickstart", "scores.csv", lambda t: t.assign(Caution="n/a"), "a score is not a number: 'n/a'"),
        ("quickstart", "game.json", "", "invalid JSON at line 1"),
        ("quickstart", "game.json", "[75]", "not a JSON object"),
        ("quickstart", "game.json", '{"game": "guessing"}', "no column 'score'"),
        ("quickstart", "game.json", '{"score": "lots"}', "not a number: 'lots'"),
        ("quickstart", "scores.csv", "", "cannot read as CSV"),
        ("validity", "validity_runs.csv", lambda t: t.drop(columns=["persona"]), "no column 'persona'"),
        ("translate", "agreement.csv", lambda t: t.assign(agreement="good"), "not a number: 'good'"),
    ],
)
def test_a_damaged_score_table_is_one_error_naming_the_file(
    root: Path,
    tmp_path: Path,
    run: str,
    file: str,
    edit: str | Callable[[pd.DataFrame], pd.DataFrame],
    message: str,
) -> None:
    """``edit``: the file's new text, or a change to the table as read."""
    copy = tmp_path / run
    shutil.copytree(root / "all" / run, copy)
    path = copy / file
    if isinstance(edit, str):
        path.write_text(edit, encoding="utf-8")
    else:
        edit(pd.read_csv(path)).to_csv(path, index=False)
    with pytest.raises(
        DataError, match=str(path).replace("\\", "\\\\") + ": .*" + message.replace("(", r"\(")
    ):
        llmpsych.load_runs(copy)


def test_a_huge_score_table_is_refused_before_it_is_read(root: Path, tmp_path: Path) -> None:
    copy = tmp_path / "grid"
    shutil.copytree(root / "all" / "grid", copy)
    with open(copy / "data_points.csv", "r+b") as handle:  # sparse: no disk space is used
        handle.truncate(300_000_000)
    with pytest.raises(DataError, match=rf"{copy / 'data_points.csv'}: 300,000,000 bytes, more than"):
        llmpsych.load_runs(copy)


def test_items_of_every_task_that_administers_a_scale(root: Path) -> None:
    """``load_runs(...).items``: one row per finished administration x item of the run's scale, the
    stored answer as the response; tasks that administer no scale (games, MAS, echo) give no rows."""
    from llmpsych.runs.items import ITEM_COLUMNS

    frames = llmpsych.load_runs(str(root / "all" / "*"))
    items = frames.items
    assert list(items.columns) == ITEM_COLUMNS
    tasks = dict(zip(frames.runs["run_dir"], frames.runs["task"], strict=True))
    with_rows = {tasks[run] for run in items["run"].unique()}
    assert with_rows == {"psychobench", "reliability", "reliability-grid", "emotionbench"}, with_rows
    for run, task in tasks.items():
        rows = items[items["run"] == run]
        if task not in with_rows:
            assert rows.empty, task
            continue
        done = [u for u in llmpsych.read_run(run).units if u.status == "done"]
        assert rows["respondent"].nunique() == len(done), task
        assert len(rows) == len(done) * rows["item"].nunique(), task
        answered = rows[rows["status"] == "answered"]
        given = sum(
            sum(v is not None for v in (u.result.get("answers") or {}).values())
            for u in done
            if not u.result.get("refused")
        )
        assert len(answered) == given, task
        assert answered["response"].between(answered["min"], answered["max"]).all()
    grid = items[items["run"].map(tasks) == "reliability-grid"]  # each data point's own levels
    assert set(grid["template"]) == {"plain", "short"} and (grid["language"] != "").all()

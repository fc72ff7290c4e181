"""The user's sampling parameters reach every call of every registered task (and of docs/extending.md's
worked task): each task runs once, tiny, through ``llmpsych run CONFIG --temperature 0.3 --max-tokens 77
--seed 5`` (the config adds ``params.seed = 11``, the server's sampling seed) against the loopback server,
and every request body the server received is read.

Every body carries the user's values, except the values a task fixes for some of its calls, listed in
:data:`FIXED` (each a documented part of its method: docs/runs.md, "Sampling parameters"); for those, the
run's ``load_runs`` row names the field, both values and the number of calls, and the stored config keeps
what the user asked for. Before the one merge point (measured): reliability, the instrument grid and
translate sent 512 tokens and the quick start 96/48 instead of 77 (MAS its own too, given ``-O
max_tokens``); echo sent 8 tokens and no seed; the worked example sent temperature 0, 5 tokens and no
seed; the validity judge 32 tokens and no seed."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

import llmpsych
from llmpsych import cli
from llmpsych.collab.scripted import ScriptedCollaborator
from llmpsych.models.types import CallParams, GenerationParams
from llmpsych.runs import read_run
from llmpsych.runs.params import merge_params
from llmpsych.runs.task import TASKS
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

FLAGS = ["--temperature", "0.3", "--max-tokens", "77", "--seed", "5", "--no-progress", "--no-cache"]
#: What the user asked for, as every ordinary request must carry it.
ASKED = {"temperature": 0.3, "max_tokens": 77, "seed": 11}

#: (case, model the role asks, field) -> the value the task fixes for some of its calls; any other
#: difference from ASKED fails the test.
FIXED: dict[tuple[str, str, str], Any] = {
    ("quickstart", "scripted", "temperature"): 1.0,  # the game, at the paper's temperature
    ("validity", "judge", "temperature"): 0.0,  # a verdict is read at temperature 0
    ("validity-role", "judge", "temperature"): 0.0,  # ... even when the judge's role asks for 0.5
}
#: (case, model) -> what that role's own parameters ask (they win over the run's)
ROLE_ASKED = {("validity-role", "judge"): {"temperature": 0.5, "max_tokens": 20}}
#: Fields a task adds to some calls (no user value is replaced): log-prob scoring.
ADDED = {
    "psychobench-logprob": {"logprobs", "top_logprobs"},
    "reliability-logprob": {"logprobs", "top_logprobs"},
}

BFI = {"templates": ["t1"], "versions": ["v1"], "languages": ["En"], "labels": ["n"], "orders": ["f"]}

COIN_TASK = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _coin_module(folder: Path) -> None:
    """docs/extending.md's worked task module, as written, in ``folder``."""
    page = COIN_TASK.read_text(encoding="utf-8")
    block = re.search(r"<!-- extending: task-module -->\n```python\n(.*?)\n```", page, re.S)
    assert block is not None
    (folder / "coin_task.py").write_text(block.group(1), encoding="utf-8")


def _cases(
    root: Path, seed_data: Path
) -> dict[str, tuple[str, dict[str, Any], Callable[..., str], dict[str, Any]]]:
    """case -> (task, options, responder, further config): one small run of each registered task."""
    (root / "tidy.yaml").write_text(TIDY_YAML, encoding="utf-8")
    (root / "garden.yaml").write_text(SCALE_EN, encoding="utf-8")
    (root / "grid.yaml").write_text(GRID, encoding="utf-8")
    desk = DESK_YAML.split("  - {index: 3,")[0] + "subscales:\n  - {name: Order, items: [1, 2]}\n"
    (root / "desk.yaml").write_text(desk, encoding="utf-8")
    data = root / "qa"
    write_truthfulqa(data / "TruthfulQA" / "TruthfulQA.csv")
    write_safetyqa(data / "SafetyQA" / "data_en_zh.dict")
    seed = {"data_dir": str(seed_data)}
    tidy = {"scale_file": [str(root / "tidy.yaml")], "runs": 1}
    return {
        "echo": ("echo", {"units": 2, "turns": 2}, lambda body: "ok", {}),
        "coin": ("coin", {"flips": 2}, lambda body: "Heads.", {}),
        "psychobench": ("psychobench", tidy, scale_answers, {}),
        "psychobench-logprob": ("psychobench", {**tidy, "method": "logprob"}, scale_answers, {}),
        "gamabench": ("gamabench", {"game": "guessing", "players": 2, "rounds": 1}, game_answer, {}),
        "gamabench-rephrase": ("gamabench-rephrase", {"games": ["guessing"], "versions": 1}, Rephraser(), {}),
        "reliability": ("reliability", BFI, BfiRespondent(seed_data), seed),
        "reliability-logprob": ("reliability", {**BFI, "method": "logprob"}, BfiRespondent(seed_data), seed),
        "reliability-grid": (
            "reliability-grid",
            {"scale_file": [str(root / "garden.yaml")], "grid": str(root / "grid.yaml"), "runs": 1},
            grid_answers,
            {},
        ),
        "emotionbench": (
            "emotionbench",
            {"emotions": ["Anger"], "situations_per_factor": 1, "runs": 1, "default_runs": 2},
            emotion_answers(seed_data, []),
            seed,
        ),
        "mas": ("mas", {"dataset": "ciar", "items": 1, "system": "mad"}, ScriptedCollaborator({}), seed),
        "validity": (
            "validity",
            {"personas": ["default"], "runs": 1, "trust_unpinned": True},
            validity_answers,
            {"data_dir": str(data), "judge": True},
        ),
        "validity-role": (
            "validity",
            {"personas": ["default"], "runs": 1, "trust_unpinned": True},
            validity_answers,
            {"data_dir": str(data), "judge": {"temperature": 0.5, "max_tokens": 20}},
        ),
        "translate": ("translate", {"scale_file": str(root / "desk.yaml"), "to": "de"}, translator, {}),
        "quickstart": (
            "quickstart",
            {"runs": 1, "game_players": 2, "game_rounds": 1},
            quickstart_answers,
            {},
        ),
    }


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)


def _config(
    path: Path, task: str, options: dict[str, Any], server: FaultServer, extra: dict[str, Any]
) -> Path:
    lines = [
        f"task = {_toml(task)}",
        'model = "openai-compatible/scripted"',
        f"base_url = {_toml(server.base_url)}",
        "params = { seed = 11 }",
        f"options = {_toml(options)}",
    ]
    if "data_dir" in extra:
        lines.append(f"data_dir = {_toml(extra['data_dir'])}")
    if extra.get("judge"):
        judge = {"model": "openai-compatible/judge", "base_url": server.base_url}
        if isinstance(extra["judge"], dict):
            judge["params"] = extra["judge"]
        lines.append(f"models = {{ judge = {_toml(judge)} }}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, seed_data: Path
) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    """case -> (run folder, the request bodies the server received)."""
    root = tmp_path_factory.mktemp("params")
    _coin_module(root)
    sys.path.insert(0, str(root))
    TASKS.add("coin", "coin_task:CoinTask")
    cli._mount_subcommands()
    done: dict[str, tuple[Path, list[dict[str, Any]]]] = {}
    try:
        for case, (task, options, answer, extra) in _cases(root, seed_data).items():
            bodies: list[dict[str, Any]] = []

            def responder(
                body: dict[str, Any], answer: Callable[..., str] = answer, bodies: list[Any] = bodies
            ) -> str:
                bodies.append(body)
                return answer(body)

            with FaultServer(responder=responder) as server:
                config = _config(root / f"{case}.toml", task, options, server, extra)
                out = root / "runs" / case
                result = CliRunner().invoke(cli.app, ["run", str(config), *FLAGS, "--out", str(out)])
            assert result.exit_code == 0, f"{case}: {result.output} {result.exception!r}"
            done[case] = (out, bodies)
    finally:
        TASKS.remove("coin")
        sys.path.remove(str(root))
    return done


def test_every_registered_task_is_a_case(tmp_path: Path, seed_data: Path) -> None:
    tasks = {task for task, *_ in _cases(tmp_path, seed_data).values()}
    # a task registered later must be added here; a fault endpoint's run is served, not run
    # (tests/test_faults_endpoint.py checks what it forwards)
    assert tasks == set(TASKS) - {"faults"} | {"coin"}


def test_every_request_carries_the_users_parameters(
    runs: dict[str, tuple[Path, list[dict[str, Any]]]],
) -> None:
    seen_fixed = set()
    for case, (_, bodies) in runs.items():
        assert bodies, case
        for body in bodies:
            for name, asked in {**ASKED, **ROLE_ASKED.get((case, body["model"]), {})}.items():
                fixed = FIXED.get((case, body["model"], name))
                if body.get(name) != asked:
                    assert fixed is not None and body.get(name) == fixed, (case, body["model"], name, body)
                    seen_fixed.add((case, body["model"], name))
            extra = set(body) - {"model", "messages", *ASKED}
            assert extra <= ADDED.get(case, set()), (case, extra)
        for name in ADDED.get(case, set()):
            assert all(name in body for body in bodies), (case, name)
    assert seen_fixed == set(FIXED)  # each listed override happens, and in no other case
    # the quick start's fixed temperature is its game's: its scale calls carry the user's
    quickstart = [b["temperature"] for b in runs["quickstart"][1]]
    assert 0.3 in quickstart and 1.0 in quickstart


def test_the_run_record_says_what_was_sent(runs: dict[str, tuple[Path, list[dict[str, Any]]]]) -> None:
    frames = llmpsych.load_runs([path for path, _ in runs.values()])
    rows = {
        Path(r).name: row
        for r, row in zip(frames.runs["run_dir"], frames.runs.to_dict("records"), strict=True)
    }
    for case, (path, bodies) in runs.items():
        row = rows[path.name]
        config = read_run(path).config
        assert (config.seed, config.params.temperature, config.params.max_tokens, config.params.seed) == (
            5,
            0.3,
            77,
            11,
        )
        assert row["temperature"] == 0.3 and row["seed"] == 5
        fixed = row["params_fixed_by_task"]
        if case == "quickstart":
            n = sum(b["temperature"] == 1.0 for b in bodies)
            assert fixed == f"temperature 1 instead of 0.3 in {n} of {len(bodies)} calls of role subject"
            assert f"temperature=0.3 ({len(bodies) - n} calls), 1.0 ({n} calls)" in row["params_sent"]
        elif case.startswith("validity"):
            n = sum(b["model"] == "judge" for b in bodies)
            asked = "0.5" if case == "validity-role" else "0.3"
            assert fixed == f"temperature 0 instead of {asked} in {n} of {n} calls of role judge"
        else:
            assert fixed == "", case
            assert row["params_sent"].startswith("temperature=0.3; max_tokens=77; seed=11"), (case, row)


def test_the_merge_order_field_by_field() -> None:
    """task defaults < run < role < the task's fixed values; a run field left unset (None, or logprobs
    false) leaves the task's default; a fixed value must be one the call sets."""
    run = GenerationParams(temperature=0.3, seed=11)  # max_tokens, top_p: unset
    task = CallParams(
        max_tokens=16, top_p=0.5, logprobs=True, top_logprobs=20, fixed={"logprobs", "top_logprobs"}
    )
    merged = merge_params(task, run)
    assert merged.request_fields() == {
        "temperature": 0.3,
        "top_p": 0.5,
        "max_tokens": 16,
        "seed": 11,
        "logprobs": True,
        "top_logprobs": 20,
    }
    role = {"max_tokens": 40, "top_logprobs": 5, "logprobs": False}
    merged = merge_params(task, run.model_copy(update={"max_tokens": 77}), role)
    assert (merged.max_tokens, merged.logprobs, merged.top_logprobs) == (40, True, 20)
    # a plain GenerationParams: every field it sets is a default; unset fields are not
    assert merge_params(GenerationParams(max_tokens=5), run).request_fields() == {
        "temperature": 0.3,
        "max_tokens": 5,
        "seed": 11,
    }
    assert merge_params(None, GenerationParams()).request_fields() == {"temperature": 0.0}
    # merges are kept per kind of call, never across runs; stop lists (unhashable) merge too
    other_run = GenerationParams(temperature=1.0)
    assert merge_params(GenerationParams(max_tokens=5), other_run).temperature == 1.0
    stop = GenerationParams(stop=["\n\n"])
    assert merge_params(stop, run).request_fields()["stop"] == ["\n\n"]
    with pytest.raises(ValidationError, match="does not set: seed"):
        CallParams(temperature=0.0, fixed={"temperature", "seed"})

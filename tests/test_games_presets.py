"""GAMA-Bench presets: each preset's expansion into run configs, --dry-run, and presets run end to end
(a scripted OpenAI-compatible server; one tiny preset on the embedded model), resumed, and summarised."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych.errors import ConfigError
from llmpsych.games.cli import app
from llmpsych.games.presets import (
    PAPER_MODELS,
    PRESETS,
    SWEEPS,
    PresetSettings,
    describe,
    execute,
    expand,
    get_preset,
    summarize,
)
from llmpsych.games.task import GAMES as ENGINE_GAMES
from llmpsych.games.task import GamaBenchTask
from llmpsych.runs import RunStore, parse_run_config
from llmpsych.testing.fault_server import FaultServer
from test_games_engine_runs import scripted  # the deterministic player of every game


def _runs(name: str, **settings: Any) -> list[Any]:
    return expand(get_preset(name), PresetSettings(**settings))


def _valid(run: Any) -> None:
    """The run config is accepted by the config parser and the gamabench task (options, game parameters)."""
    GamaBenchTask(parse_run_config(run.config))


def test_every_preset_expands_into_valid_run_configs() -> None:
    for preset in PRESETS.values():
        runs = expand(preset, PresetSettings(models=["openai/m"]))
        assert runs and len({r.directory for r in runs}) == len(runs)
        for run in runs:
            _valid(run)
            assert run.config["task"] == "gamabench" and run.model == "openai/m"
            assert run.options["runs"] == preset.runs


def test_multiple_runs_is_the_default_protocol() -> None:
    [run] = _runs("multiple-runs", models=["openai/m"])
    assert run.options == {"game": "all", "runs": 5} and run.config["params"] == {"temperature": 1.0}
    assert run.directory == "openai_m/default" and run.n_games == 40
    assert get_preset("runs") is get_preset("multiple-runs")


def test_temperatures_prompt_versions_and_reasoning_settings() -> None:
    temps = _runs("temperatures", models=["openai/m"])
    assert [r.config["params"]["temperature"] for r in temps] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert all(r.options["runs"] == 1 and r.options["game"] == "all" for r in temps)
    versions = _runs("prompt-versions", models=["openai/m"])
    assert [(r.options["prompts"], r.options["prompt_version"]) for r in versions] == [
        ("official", k) for k in range(1, 6)
    ]
    reasoning = {r.setting: r.options for r in _runs("reasoning", models=["openai/m"])}
    assert list(reasoning) == ["default", "cot", "cooperative", "selfish", "mathematician"]
    assert reasoning["cot"]["cot"] == 1 and [reasoning[s].get("persona") for s in list(reasoning)[2:]] == [
        1,
        2,
        3,
    ]
    assert "cot" not in reasoning["default"] and "persona" not in reasoning["default"]


def test_generalisability_sweeps_every_parameter_of_the_spec() -> None:
    runs = _runs("sweeps", models=["openai/m"])
    assert len(runs) == 13 + 6 + 5 + 5 + 6 + 4 + 3 + 4
    by_game: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        game = run.options["game"]
        by_game.setdefault(game, []).append(run.options[game])
    assert set(by_game) == set(ENGINE_GAMES) == set(SWEEPS)
    ratios = [Fraction(p["ratio"]) for p in by_game["guessing"]]
    assert ratios == [Fraction(k, 6) for k in range(13)]  # 0, 1/6, ..., 2
    assert [p["ratio"] for p in by_game["bar"]] == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert [p["golds"] for p in by_game["divide_dollar"]] == [50, 100, 200, 400, 800]
    assert [p["ratio"] for p in by_game["public_goods"]] == [0.0, 0.5, 1.0, 2.0, 4.0]
    assert [tuple(p.values()) for p in by_game["diner"]] == [
        (10, 15, 20, 20),
        (11, 5, 20, 7),
        (4, 19, 9, 20),
        (1, 8, 19, 12),
        (4, 5, 17, 7),
        (2, 11, 8, 13),
    ]
    assert [p["valuation_max"] for p in by_game["auction"]] == [100, 200, 400, 800]
    assert [(p["base_hit_rate"], p["interval"]) for p in by_game["battle_royale"]] == [
        (51, 1),
        (35, 5),
        (10, 10),
    ]
    assert [p["gold"] for p in by_game["pirate"]] == [4, 5, 100, 400]
    only = _runs("sweeps", models=["openai/m"], games=["pirate", "bar"])
    assert {r.options["game"] for r in only} == {"pirate", "bar"} and len(only) == 10


def test_leaderboard_defaults_to_the_papers_13_models() -> None:
    runs = _runs("leaderboard")
    assert [r.model for r in runs] == list(PAPER_MODELS) and len(runs) == 13
    assert all(r.options == {"game": "all", "runs": 5} for r in runs)
    mine = _runs("leaderboard", models=["openai/a", "openai/b", "openai/a"])
    assert [r.directory for r in mine] == ["openai_a-1/default", "openai_b/default", "openai_a-3/default"]


def test_fixed_strategies_put_the_fixed_player_in_seat_zero() -> None:
    runs = {r.setting: r.options for r in _runs("fixed-strategies", models=["openai/m"], players=4)}
    assert runs == {
        "divide_dollar w/ fixed:91": {
            "game": "divide_dollar",
            "runs": 1,
            "players": 4,
            "seats": {0: "fixed:91"},
        },
        "divide_dollar w/o fixed": {"game": "divide_dollar", "runs": 1, "players": 4},
        "public_goods w/ fixed:0": {"game": "public_goods", "runs": 1, "players": 4, "seats": {0: "fixed:0"}},
        "public_goods w/o fixed": {"game": "public_goods", "runs": 1, "players": 4},
    }


def test_user_settings_reach_every_run() -> None:
    runs = _runs(
        "reasoning",
        models=["openai/m"],
        games=["guessing", "pirate"],
        runs=2,
        players=3,
        rounds=4,
        temperature=0.5,
        max_tokens=64,
        base_url="http://127.0.0.1:1/v1",
        concurrency=7,
        data_dir=Path("/data"),
        seed=3,
        cache=False,
        options={"reask": "feedback", "guessing": {"tie_rule": "first"}},
    )
    for run in runs:
        c = run.config
        assert (
            c["params"] == {"temperature": 0.5, "max_tokens": 64} and c["seed"] == 3 and c["cache"] is False
        )
        assert c["base_url"] == "http://127.0.0.1:1/v1" and c["concurrency"] == 7 and c["data_dir"] == "/data"
        assert run.options["game"] == ["guessing", "pirate"] and run.options["runs"] == 2
        assert (
            run.options["players"] == 3 and run.options["rounds"] == 4 and run.options["reask"] == "feedback"
        )
        assert run.options["guessing"] == {"tie_rule": "first"}
    sweep = _runs(
        "sweeps", models=["openai/m"], games=["guessing"], options={"guessing": {"tie_rule": "first"}}
    )
    assert sweep[1].options["guessing"] == {
        "tie_rule": "first",
        "ratio": "1/6",
    }  # merged, the sweep value wins


def test_unknown_names_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="unknown preset 'nope'"):
        get_preset("nope")
    with pytest.raises(ConfigError, match="unknown game 'chess'"):
        _runs("sweeps", games=["chess"])
    with pytest.raises(ConfigError, match="no setting for the games guessing"):
        _runs("fixed-strategies", games=["guessing"])


def test_dry_run_prints_the_runs_and_runs_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "preset",
            "temperatures",
            "--model",
            "openai/m",
            "--game",
            "guessing",
            "--out",
            str(tmp_path / "o"),
            "--dry-run",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("openai_m/temperature=") == 6
    assert "6 run directories, 6 games; nothing was run" in result.output and not (tmp_path / "o").exists()
    listing = CliRunner().invoke(app, ["presets"])
    assert all(name in listing.output for name in PRESETS)
    assert len(describe(_runs("sweeps", models=["openai/m"]))) == 46


def _server_settings(server: FaultServer, **kw: Any) -> PresetSettings:
    return PresetSettings(
        **{"base_url": server.base_url, "cache": False, "concurrency": 16, "players": 3, "rounds": 2, **kw}
    )


def test_temperatures_preset_runs_resumes_and_summarises(tmp_path: Path) -> None:
    out = tmp_path / "temps"
    with FaultServer(responder=scripted) as server:
        settings = _server_settings(server, models=["openai-compatible/scripted"], games=["guessing", "bar"])
        planned = expand(get_preset("temperatures"), settings)
        outcomes = execute(planned, out, progress=False)
        assert [o.summary.done for o in outcomes] == [2] * 6  # two games per temperature
        sent = sum(server.hits.values())
        assert sent == 6 * 2 * 3 * 2  # temperatures x games x players x rounds
        again = execute(planned, out, progress=False)  # same --out: resumed, nothing re-sent
        assert sum(o.summary.calls_sent for o in again) == 0 and sum(server.hits.values()) == sent
    paths = summarize(get_preset("temperatures"), planned, out)
    assert out / "summary.md" in paths
    frame = pd.read_csv(out / "summary.csv")
    assert frame["setting"].tolist() == [f"temperature={t}" for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)] + [
        "across settings (mean ± SD)"
    ]
    games = pd.read_csv(out / planned[0].directory / "games.csv")  # the live report's scores
    live = games.set_index("game")["score"]
    assert frame.loc[0, "Guess 2/3 of the Average"] == f"{live['guessing']:.1f}"
    assert frame.loc[0, "El Farol Bar"] == f"{live['bar']:.1f}"
    assert "Overall" in frame and frame.loc[0, "Overall"] == "-"  # two of eight games: no overall
    manifest = json.loads((out / "sweep.json").read_text())
    assert [m["label"]["setting"] for m in manifest][:2] == ["temperature=0.0", "temperature=0.2"]


def test_prompt_versions_preset_reads_the_official_templates(tmp_path: Path, seed_data: Path) -> None:
    with FaultServer(responder=scripted) as server:
        settings = _server_settings(
            server, models=["openai-compatible/scripted"], games=["guessing"], data_dir=seed_data
        )
        planned = expand(get_preset("prompt-versions"), settings)
        execute(planned, tmp_path, progress=False)
    summarize(get_preset("prompt-versions"), planned, tmp_path)
    frame = pd.read_csv(tmp_path / "summary.csv")
    assert frame["setting"].tolist() == ["v1", "v2", "v3", "v4", "v5", "across settings (mean ± SD)"]
    for run in planned:
        manifest = json.loads((tmp_path / run.directory / "manifest.json").read_text())
        assert "prompt_template/guessing_game" in json.dumps(manifest)  # the official files, with checksums


def test_a_resumed_run_takes_the_new_data_folder(tmp_path: Path, seed_data: Path) -> None:
    (tmp_path / "empty").mkdir()
    with FaultServer(responder=scripted) as server:
        settings = _server_settings(
            server, models=["openai-compatible/scripted"], games=["guessing"], data_dir=tmp_path / "empty"
        )
        planned = expand(get_preset("prompt-versions"), settings)[:1]
        with pytest.raises(Exception, match="GAMABench not found"):
            execute(planned, tmp_path / "o", progress=False)
        settings.data_dir = seed_data  # fixed: the same run, resumed with the right folder
        [outcome] = execute(
            expand(get_preset("prompt-versions"), settings)[:1], tmp_path / "o", progress=False
        )
    assert outcome.summary.done == 1 and outcome.summary.failed == 0


def test_a_different_run_in_the_directory_is_not_resumed(tmp_path: Path) -> None:
    with FaultServer(responder=scripted) as server:
        settings = _server_settings(server, models=["openai-compatible/scripted"], games=["guessing"])
        execute(expand(get_preset("multiple-runs"), settings), tmp_path, progress=False)
        settings.rounds = 3
        with pytest.raises(Exception, match="holds a different run"):
            execute(expand(get_preset("multiple-runs"), settings), tmp_path, progress=False)


def test_fixed_strategies_preset_against_a_scripted_model(tmp_path: Path) -> None:
    with FaultServer(responder=scripted) as server:
        settings = _server_settings(server, models=["openai-compatible/scripted"], rounds=3)
        planned = expand(get_preset("fixed"), settings)
        execute(planned, tmp_path, progress=False)
    summarize(get_preset("fixed"), planned, tmp_path)
    frame = pd.read_csv(tmp_path / "summary.csv")
    assert frame["setting"].tolist() == [
        "divide_dollar w/ fixed:91",
        "divide_dollar w/o fixed",
        "public_goods w/ fixed:0",
        "public_goods w/o fixed",
    ]
    store = RunStore.in_dir(tmp_path / planned[0].directory)
    [unit] = store.units()
    store.close()
    fixed_bids = [r["decisions"][0]["action"] for r in unit.result["rounds"]]
    model_bids = [d["action"] for r in unit.result["rounds"] for d in r["decisions"][1:]]
    assert fixed_bids == [91, 91, 91] and unit.result["seats"][0] == "fixed:91"
    assert frame.loc[0, "mean action of the model seats"] == pytest.approx(sum(model_bids) / len(model_bids))
    assert "thesis Fig. 6.4" in (tmp_path / "summary.md").read_text()


def test_leaderboard_preset_of_two_models_then_the_leaderboard_command(tmp_path: Path) -> None:
    out = tmp_path / "lb"
    with FaultServer(responder=scripted) as server:
        models = ["openai-compatible/model-a", "openai-compatible/model-b"]
        result = CliRunner().invoke(
            app,
            [
                "preset",
                "leaderboard",
                *[x for m in models for x in ("--model", m)],
                "--runs",
                "2",
                "--players",
                "3",
            ]
            + [
                "--rounds",
                "2",
                "--base-url",
                server.base_url,
                "--no-cache",
                "--no-progress",
                "--out",
                str(out),
            ],
        )
    assert result.exit_code == 0, result.output
    assert (out / "leaderboard.md").is_file() and (out / "leaderboard.csv").is_file()
    scores = json.loads((out / "leaderboard.json").read_text())
    assert set(scores) == set(models)
    for model in models:
        entry = scores[model]
        assert set(entry) == {
            "guess_2_3",
            "el_farol",
            "divide_dollar",
            "public_goods",
            "diners_dilemma",
            "sealed_bid_auction",
            "battle_royale",
            "pirate",
            "overall",
        }
        assert all(entry[k]["runs"] == 2 for k in entry if k != "overall")
        assert entry["overall"]["std"] is not None
        # the same scoring as the live games' report: games.csv of the run directory
        games = pd.read_csv(out / model.replace("/", "_") / "default" / "games.csv")
        live = games.groupby("game")["score"].agg(["mean", "std"])
        assert entry["guess_2_3"]["mean"] == pytest.approx(live.loc["guessing", "mean"])
        assert entry["pirate"]["std"] == pytest.approx(live.loc["pirate", "std"])
        per_run = games.pivot_table(index="run", columns="game", values="score").mean(axis=1)
        assert entry["overall"]["mean"] == pytest.approx(per_run.mean())
        assert entry["overall"]["std"] == pytest.approx(per_run.std(ddof=1))
    # the leaderboard command over the same run directories (pooled per model)
    dirs = [str(out / m.replace("/", "_") / "default") for m in models]
    cli = CliRunner().invoke(app, ["leaderboard", *dirs, "--json", "--out", str(tmp_path / "board")])
    assert cli.exit_code == 0, cli.output
    printed = json.loads(cli.stdout)
    assert printed == scores
    assert (tmp_path / "board" / "leaderboard.md").is_file()


@pytest.mark.model
def test_tiny_preset_on_the_embedded_model(tmp_path: Path) -> None:
    out = tmp_path / "tiny"
    result = subprocess.run(
        [sys.executable, "-m", "llmpsych", "gamabench", "preset", "multiple-runs", "--game", "guessing"]
        + ["--runs", "2", "--players", "2", "--rounds", "1", "--max-tokens", "24", "--out", str(out)]
        + ["--no-progress"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    games = pd.read_csv(out / "local_qwen2.5-0.5b" / "default" / "games.csv")
    assert len(games) == 2 and games["score"].between(0, 100).all()
    board = (out / "leaderboard.md").read_text()
    assert "local/qwen2.5-0.5b" in board and "Guess 2/3 of the Average" in board

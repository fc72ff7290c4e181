"""GAMA-Bench scoring: hand-made records, and parity with the published leaderboard from the released logs.

Published values: thesis Tables 6.3, 6.8-6.10, 6.14, 6.18 (Huang, CUHK 2025, ch. 6) and arXiv
2403.11807v4 Table 1 / Table 4, as transcribed in ``specs/gamabench.md`` §6.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmpsych.errors import DataError
from llmpsych.games import released_logs
from llmpsych.games.cli import app
from llmpsych.games.released_logs import (
    PUBLISHED,
    PUBLISHED_ARXIV,
    read_log,
    released_models,
    released_runs,
    score_released,
)
from llmpsych.games.scoring import (
    GAMES,
    AuctionLog,
    BarLog,
    BattleLog,
    BattleTurn,
    DinerLog,
    DollarLog,
    GoodsLog,
    GuessingLog,
    PirateLog,
    PirateRound,
    auction_score,
    bar_score,
    battle_score,
    diner_score,
    dollar_score,
    goods_score,
    guessing_score,
    leaderboard_row,
    optimal_plan,
    overall_score,
    pirate_parts,
    pirate_score,
    read_dish,
    score,
    summarize,
)

SEED = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"
#: Half a unit of the last printed digit (plus float slack): "equal to the published precision".
TOL = 0.05 + 1e-6
SEED_MODELS = (
    "gpt-3.5-turbo-0125",
    "gpt-3.5-turbo-1106",
    "gpt-4o",
    "gemini-1.5-pro",
    "llama-3.1-70b",
    "mixtral-8x7b",
)


@pytest.fixture(scope="module")
def data_dir() -> Path:
    """The released data; CI always has it, so its absence is a failure, not a skip."""
    if not (SEED / "GAMABench" / "raw_results").is_dir():
        pytest.fail(f"GAMA-Bench released logs not found at {SEED}/GAMABench/raw_results")
    return SEED


@pytest.fixture(scope="module")
def rows(data_dir: Path) -> dict[str, dict]:
    """Each seed model's recomputed leaderboard row (published scoring)."""
    return {m: score_released(m, data_dir) for m in SEED_MODELS}


# -- hand-made records ---------------------------------------------------------------------------
def test_guessing_equilibrium_and_variants() -> None:
    nash = GuessingLog(choices=[[0] * 10] * 20)
    assert guessing_score(nash) == 100
    assert guessing_score(GuessingLog(choices=[[50] * 4])) == 50
    # R>1: the equilibrium is MAX
    assert guessing_score(GuessingLog(choices=[[100, 100]], ratio=4 / 3)) == 100
    # R=1: thesis rewards the midpoint, arXiv its complement
    mid = GuessingLog(choices=[[50, 50]], ratio=1.0)
    assert guessing_score(mid) == 100
    assert guessing_score(mid, version="arxiv_v4") == 0
    edge = GuessingLog(choices=[[100, 100]], ratio=1.0)
    assert guessing_score(edge) == 0
    assert guessing_score(edge, version="arxiv_v4") == 100
    # MIN != 0: the thesis formula vs the reference code's (MAX - S1)/D
    shifted = GuessingLog(choices=[[20, 20]], min_value=10, max_value=110)
    assert guessing_score(shifted) == pytest.approx(90)
    assert guessing_score(shifted, published=True) == pytest.approx(100)
    with pytest.raises(ValueError):
        guessing_score(GuessingLog(choices=[]))


def test_bar_mixed_equilibrium() -> None:
    six_of_ten = [True] * 6 + [False] * 4
    assert bar_score(BarLog(went=[six_of_ten] * 20)) == pytest.approx(100)
    assert bar_score(BarLog(went=[[False] * 10])) == pytest.approx(0)  # |0 - 0.6| = max(R, 1-R)
    assert bar_score(BarLog(went=[[True] * 10])) == pytest.approx((0.6 - 0.4) / 0.6 * 100)
    assert bar_score(BarLog(went=[[True] * 5 + [False] * 5])) == pytest.approx((0.6 - 0.1) / 0.6 * 100)
    with pytest.raises(ValueError):
        bar_score(BarLog(went=[[True]], ratio=1.5))


def test_dollar_equilibrium_and_floor() -> None:
    assert dollar_score(DollarLog(bids=[[10] * 10] * 20)) == 100
    assert dollar_score(DollarLog(bids=[[20] * 10])) == 0  # |200 - 100| = G
    assert dollar_score(DollarLog(bids=[[100] * 10])) == 0  # floored, not -800
    assert dollar_score(DollarLog(bids=[[5] * 10, [15] * 10])) == pytest.approx(50)
    assert dollar_score(DollarLog(bids=[[40] * 10], golds=400)) == 100


def test_goods_free_riding_and_r_over_n() -> None:
    assert goods_score(GoodsLog(contributions=[[0] * 10] * 20)) == 100
    assert goods_score(GoodsLog(contributions=[[20] * 10])) == 0
    assert goods_score(GoodsLog(contributions=[[5] * 10])) == 75
    rich = GoodsLog(contributions=[[20] * 10], ratio=20)  # R/N > 1: contributing all is optimal
    assert goods_score(rich) == 100
    assert goods_score(rich, version="arxiv_v4") == 0


def test_diner_equilibrium_and_answer_reading() -> None:
    assert diner_score(DinerLog(dishes=[["costly"] * 10] * 20)) == 100
    assert diner_score(DinerLog(dishes=[["cheap"] * 10])) == 0
    mixed = DinerLog(dishes=[["cheap_dish", "costly_dish", "Cheap", "costly_or_cheap"]])
    assert read_dish("cheap_dish") is True and read_dish("COSTLY") is False
    assert read_dish("costly_or_cheap") is None
    assert diner_score(mixed) == pytest.approx(100 / 3)  # 2 cheap of 3 readable answers
    assert diner_score(mixed, published=True) == 100  # the reference counts anything but "cheap" as costly


def test_auction_shading_guards_and_arxiv() -> None:
    truthful = AuctionLog(valuations=[[100, 200]], bids=[[100, 200]])
    assert auction_score(truthful) == 0
    half = AuctionLog(valuations=[[100, 200]], bids=[[50, 100]])
    assert auction_score(half) == pytest.approx(50)
    assert auction_score(half, version="arxiv_v4") == pytest.approx(75 / 200 * 100)
    guarded = AuctionLog(valuations=[[0, 100]], bids=[[0, 150]])  # v=0 and an overbid both count 0
    assert auction_score(guarded) == 0
    with pytest.raises(ValueError):
        auction_score(AuctionLog(valuations=[[1, 2]], bids=[[1]]))


def _turn(shooter: int, alive: list[int], target: int | None) -> BattleTurn:
    rates = {f"player_{i}": 35 + 5 * i for i in alive}
    return BattleTurn(f"player_{shooter}", rates, None if target is None else f"player_{target}")


def test_battle_targets_strongest_other_survivor() -> None:
    alive = list(range(10))
    log = BattleLog(
        turns=[
            _turn(0, alive, 9),  # correct
            _turn(9, alive, 8),  # the shooter is the strongest: the next one is correct
            _turn(1, alive, None),  # an intentional miss counts as wrong
            _turn(2, alive, 0),  # wrong
            _turn(3, [3, 5], 7),  # not a survivor: wrong
        ]
    )
    assert battle_score(log) == pytest.approx(40)
    assert battle_score(BattleLog(turns=[_turn(0, alive, 9)] * 3)) == 100
    with pytest.raises(ValueError):
        battle_score(BattleLog(turns=[]))


def _optimal_rounds(players: int, gold: float) -> PirateRound:
    plan = optimal_plan(players, gold)
    votes = [True] + [plan[k] >= 1 and k % 2 == 0 for k in range(1, players)]
    return PirateRound(proposal=plan, votes=votes)


def test_pirate_optimal_play_scores_100() -> None:
    assert optimal_plan(10, 100) == [96, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    assert optimal_plan(10, 4) == [0, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    assert optimal_plan(1, 100) == [100]
    with pytest.raises(ValueError):
        optimal_plan(10, 3)
    for published in (False, True):
        assert pirate_score(PirateLog(rounds=[_optimal_rounds(10, 100)]), published=published) == 100
    assert pirate_score(PirateLog(rounds=[_optimal_rounds(10, 400)], gold=400)) == 100


def test_pirate_corrections() -> None:
    # An opposite-parity voter (offset 1) offered 1 gold who rejects: correct by the paper's rule only.
    plan = [97, 1, 1, 0, 1, 0, 0, 0, 0, 0]
    votes = [True, False, True, False, True, False, False, False, False, False]
    log = PirateLog(rounds=[PirateRound(plan, votes)])
    distance, accuracy, scale = pirate_parts(log)
    assert (distance, accuracy, scale) == (4, 1.0, 200)
    assert pirate_parts(log, published=True)[1] == pytest.approx(8 / 9)
    # G=4: the code compares plans rescaled to 100 gold with the 100-gold optimum
    small = PirateLog(rounds=[PirateRound([0, 0, 1, 0, 1, 0, 1, 0, 1, 0], [True] + [False] * 9)], gold=4)
    assert pirate_parts(small)[0] == 0
    assert pirate_parts(small, published=True)[0] == pytest.approx(96 + 4 * 24)
    with pytest.raises(ValueError):
        pirate_score(PirateLog(rounds=[PirateRound([100], [True])]))  # 10 pirates, 1 share


def test_summaries_and_overall() -> None:
    s = summarize([45.9, 41.7, 47.1, 43.4, 44.1])
    assert (round(s.mean, 1), round(s.sd, 1), s.n) == (44.4, 2.1, 5)
    assert math.isnan(summarize([1.0]).sd)
    assert (str(s), str(summarize([1.0]))) == ("44.4±2.1", "1.0±n/a")  # stats.format_mean_sd's rule
    t1 = dict(zip(GAMES, [65.4, 73.3, 68.1, 41.2, 4.0, 14.6, 20.0, 80.6], strict=True))
    assert overall_score(t1) == pytest.approx(45.9, abs=0.01)
    with pytest.raises(ValueError):
        overall_score({"guessing_game": 1.0})
    row = leaderboard_row({g: [t1[g], t1[g] + 2] for g in GAMES})
    assert row["overall"].values == pytest.approx((45.9, 47.9), abs=0.01)


def test_score_dispatch() -> None:
    assert score(DinerLog(dishes=[["costly"]])) == 100
    assert score(DinerLog(dishes=[["cheap_dish", "costly"]]), published=True) == 100
    assert score(GuessingLog(choices=[[50]], ratio=1.0), version="arxiv_v4") == 0
    with pytest.raises(TypeError):
        score("not a log")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        score(DinerLog(dishes=[["costly"]]), version="v9")  # type: ignore[arg-type]


# -- parity with the published leaderboard ---------------------------------------------------------
def test_all_seed_models_are_found(data_dir: Path) -> None:
    assert set(SEED_MODELS) <= set(released_models(data_dir))
    for model in SEED_MODELS:
        for game in GAMES:
            assert len(released_runs(game, model, data_dir)) == 5, (model, game)


@pytest.mark.parametrize("model", SEED_MODELS)
def test_leaderboard_row_matches_thesis(rows: dict[str, dict], model: str) -> None:
    """Thesis Tables 6.8/6.9: every game and the overall, mean and SD, to the printed 0.1."""
    row = rows[model]
    for key, (mean, sd) in PUBLISHED[model].items():
        assert abs(row[key].mean - mean) <= TOL, (key, row[key].mean, mean)
        assert abs(row[key].sd - sd) <= TOL, (key, row[key].sd, sd)


# Per-run values T1-T5 (thesis Tables 6.3, 6.10, 6.14, 6.18), games in GAMES order, then the overall.
PER_RUN = {
    "gpt-3.5-turbo-0125": [
        [65.4, 62.3, 63.9, 58.3, 67.3], [73.3, 67.5, 68.3, 67.5, 66.7], [68.1, 67.7, 68.7, 66.0, 72.6],
        [41.2, 25.4, 45.7, 38.0, 44.0], [4.0, 3.5, 0.0, 6.5, 0.0], [14.6, 14.6, 11.6, 12.9, 11.5],
        [20.0, 21.4, 46.7, 23.5, 31.2], [80.6, 71.2, 72.0, 74.7, 59.5], [45.9, 41.7, 47.1, 43.4, 44.1],
    ],
    "llama-3.1-70b": [
        [82.2, 82.7, 84.3, 84.6, 86.4], [64.2, 55.8, 61.7, 60.0, 56.7], [87.9, 92.0, 86.0, 80.8, 88.6],
        [93.4, 90.8, 84.7, 90.4, 93.6], [47.0, 41.5, 56.0, 44.5, 51.5], [15.6, 20.2, 13.8, 13.6, 15.4],
        [70.0, 90.0, 92.9, 100.0, 35.7], [42.8, 53.8, 71.4, 81.8, 70.3], [62.9, 65.8, 68.8, 69.5, 62.3],
    ],
    "gemini-1.5-pro": [
        [96.2, 95.4, 95.1, 95.1, 95.1], [37.5, 40.0, 35.8, 30.8, 41.7], [93.8, 94.2, 94.2, 93.5, 93.5],
        [100.0] * 5, [29.0, 43.0, 33.0, 38.5, 36.0], [42.5, 25.3, 21.4, 27.0, 18.2],
        [75.0, 90.0, 71.4, 85.0, 85.0], [92.2, 83.9, 88.8, 94.0, 80.6], [70.8, 71.5, 67.5, 70.5, 68.8],
    ],
    "gpt-4o": [
        [94.9, 94.8, 94.2, 94.1, 93.4], [95.0, 41.7, 70.8, 55.0, 87.5], [95.7, 95.7, 94.9, 94.0, 95.4],
        [94.1, 88.1, 87.4, 93.5, 91.5], [23.5, 4.5, 3.5, 8.0, 14.0], [19.2, 18.8, 17.7, 25.3, 23.0],
        [89.5, 60.0, 50.0, 72.2, 65.0], [77.3, 88.4, 93.7, 79.8, 82.8], [73.6, 61.5, 64.0, 65.2, 69.1],
    ],
}  # fmt: skip


@pytest.mark.parametrize("model", sorted(PER_RUN))
def test_each_run_matches_thesis(rows: dict[str, dict], model: str) -> None:
    row = rows[model]
    for key, published in zip((*GAMES, "overall"), PER_RUN[model], strict=True):
        recomputed = row[key].values
        assert all(abs(r - p) <= TOL for r, p in zip(recomputed, published, strict=True)), (
            key,
            recomputed,
            published,
        )


ARXIV_MODELS = ("gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106", "gemini-1.5-pro", "llama-3.1-70b", "mixtral-8x7b")


@pytest.mark.parametrize("model", ARXIV_MODELS)
def test_arxiv_scoring_matches_arxiv_table(data_dir: Path, model: str) -> None:
    """arXiv v4 Table 1: the rows its formulas change (Sealed-Bid Auction, Overall)."""
    row = score_released(model, data_dir, version="arxiv_v4")
    for key in ("sealed_bid_auction", "overall"):
        mean, sd = PUBLISHED_ARXIV[model][key]
        assert abs(row[key].mean - mean) <= TOL, (key, row[key].mean, mean)
        assert abs(row[key].sd - sd) <= TOL, (key, row[key].sd, sd)


def test_arxiv_per_run_gpt35(data_dir: Path) -> None:
    """arXiv Table 4: GPT-3.5-0125 auction 6.5, 6.5, 4.6, 5.5, 4.4 and overall 44.9 ... 43.2 (the printed
    values are kept once, in ``llmpsych.reproduce.gamabench``)."""
    from llmpsych.reproduce.gamabench import ARXIV_TABLE_4

    row = score_released("gpt-3.5-turbo-0125", data_dir, version="arxiv_v4")
    for key, published in ARXIV_TABLE_4.items():
        assert all(abs(r - p) <= TOL for r, p in zip(row[key].values, published, strict=True)), key


def test_battle_royale_turn_counts(data_dir: Path) -> None:
    """GPT-3.5-0125: 4/20, 3/14, 7/15, 4/17 and 5/16 turns aimed at the strongest opponent."""
    runs = released_runs("battle_royale", "gpt-3.5-turbo-0125", data_dir)
    assert [len(r.log.turns) for r in runs] == [20, 14, 15, 17, 16]
    assert [battle_score(r.log) for r in runs] == pytest.approx([20.0, 300 / 14, 700 / 15, 400 / 17, 31.25])


def test_pirate_worked_example(data_dir: Path) -> None:
    """Thesis Table 6.1 (GPT-3.5-0125, T1): S8P = 36, S8V = 19/24, score 80.6."""
    log = released_runs("pirate_game", "gpt-3.5-turbo-0125", data_dir)[0].log
    distance, accuracy, _ = pirate_parts(log, published=True)
    assert distance == pytest.approx(36)
    assert accuracy == pytest.approx(19 / 24)
    assert pirate_score(log, published=True) == pytest.approx(164 / 200 * 50 + 19 / 24 * 50)


def test_corrections_change_only_the_documented_cells(data_dir: Path, rows: dict[str, dict]) -> None:
    """Corrected scoring: Pirate (three models) and Mixtral-8x7B's Diner differ; nothing else does."""
    changed = {}
    for model in SEED_MODELS:
        corrected = score_released(model, data_dir, published=False)
        for game in GAMES:
            if abs(corrected[game].mean - rows[model][game].mean) > 1e-9:
                changed[(model, game)] = round(corrected[game].mean, 1)
    assert changed == {
        ("gpt-4o", "pirate_game"): 85.2,
        ("llama-3.1-70b", "pirate_game"): 70.4,
        ("mixtral-8x7b", "pirate_game"): 69.4,
        ("mixtral-8x7b", "diner_dilemma"): 66.0,
    }
    llama_t1 = released_runs("pirate_game", "llama-3.1-70b", data_dir)[0].log
    assert round(pirate_score(llama_t1), 1) == 60.6  # published (reference rule): 42.8


# -- loader errors --------------------------------------------------------------------------------
def _copy(data_dir: Path, tmp_path: Path, relpath: str) -> Path:
    target = tmp_path / "GAMABench" / "raw_results" / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(data_dir / "GAMABench" / "raw_results" / relpath, target)
    return target


def test_read_log_detects_the_game(data_dir: Path) -> None:
    path = (
        data_dir
        / "GAMABench/raw_results/sealed_bid_auction/second_price/gemini-1.5-pro_sealed_bid_auction_v1_1.json"
    )
    log = read_log(path)
    assert isinstance(log, AuctionLog) and log.mode == "second_price"
    assert 0 <= auction_score(log) <= 100  # descriptive only: the leaderboard scores first-price auctions
    assert isinstance(
        read_log(data_dir / "GAMABench/raw_results/pirate_game/pirate_game_v1_1.json"), PirateLog
    )


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("round_records"), "round_records"),
        (lambda d: d["round_records"][2].pop("responses"), "round 3 has no 'responses'"),
        (lambda d: d["round_records"][0]["responses"].__setitem__(0, "fifty"), "not a number"),
        (lambda d: d.pop("meta"), "meta"),
    ],
)
def test_malformed_logs_raise_one_line_data_errors(data_dir: Path, tmp_path: Path, mutate, message) -> None:
    path = _copy(data_dir, tmp_path, "guessing_game/guessing_game_v1_1.json")
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=re.escape(message)) as info:
        released_runs("guessing_game", data_dir=tmp_path)
    assert "\n" not in str(info.value)


def test_unreadable_and_unknown_logs(data_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        read_log(bad)
    bad.write_text(json.dumps({"meta": {}, "round_records": [{"something": 1}]}))
    with pytest.raises(DataError, match="match no GAMA-Bench game"):
        read_log(bad)
    with pytest.raises(DataError, match="unknown GAMA-Bench game"):
        read_log(bad, "chess")
    with pytest.raises(DataError, match="GAMABench not found"):
        released_models(tmp_path)
    (tmp_path / "GAMABench").mkdir()
    with pytest.raises(DataError, match="raw_results"):
        released_models(tmp_path)


def test_battle_and_pirate_logs_are_checked(data_dir: Path, tmp_path: Path) -> None:
    path = _copy(data_dir, tmp_path, "pirate_game/pirate_game_v1_1.json")
    data = json.loads(path.read_text())
    data["round_records"][1]["gold_distribution"].append(0)
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match="surviving pirates"):
        read_log(path)
    path = _copy(data_dir, tmp_path, "battle_royale/battle_royale_v1_1.json")
    data = json.loads(path.read_text())
    data["round_records"][0]["player_shooting"] = "42"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match="shooter player_42"):
        read_log(path)


# -- command line ----------------------------------------------------------------------------------
runner = CliRunner()


def test_cli_leaderboard_and_detail(data_dir: Path) -> None:
    result = runner.invoke(app, ["rescore", "--data-dir", str(data_dir)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "gpt-3.5-turbo-0125" in result.output and "44.4±2.1" in result.output
    assert "pub." not in result.output  # every cell equals the published value
    result = runner.invoke(
        app, ["rescore", "--data-dir", str(data_dir), "--model", "llama-3.1-70b", "--corrected"],
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "70.4±12.8" in result.output and "64.0±15.5" in result.output


def test_cli_user_errors(data_dir: Path) -> None:
    result = runner.invoke(app, ["rescore", "--data-dir", str(data_dir), "--model", "nope"])
    assert result.exit_code != 0
    assert "no released logs for model 'nope'" in str(result.exception)
    result = runner.invoke(app, ["rescore", "--data-dir", str(data_dir), "--method", "v9"])
    assert "unknown --method" in str(result.exception)


def test_published_tables_are_complete() -> None:
    assert len(PUBLISHED) == 13 and len(PUBLISHED_ARXIV) == 12
    for table in (PUBLISHED, PUBLISHED_ARXIV):
        for values in table.values():
            assert set(values) == {*GAMES, "overall"}
    assert released_logs.DEFAULT_MODEL in PUBLISHED

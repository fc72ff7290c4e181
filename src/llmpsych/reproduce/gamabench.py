"""GAMA-Bench: the leaderboard (thesis Tables 6.8-6.9, arXiv v4 Table 1) and the thesis's variant tables
(6.2-6.18, §6.6.2), recomputed from the released game logs with the library's scorer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .cells import Cause, PrintedCell, Recomputed, printed

SYSTEM = "GAMA-Bench"
DATASET = "GAMABench"

#: Printed variant-table cells the released logs do not give (thesis, seed 000), with why: three are
#: population SDs (sample SD x sqrt((n-1)/n): 4.88, 8.16 and 2.72) where the tables print sample SDs;
#: Table 6.17's El Farol row has 42.5 where the log gives 37.5 (its Avg and Std follow the 42.5); Table
#: 6.13's auction row matches no log (nor the arXiv scoring: 8.1, 4.4, 3.8, 3.4); the 29.0 of Table 6.7
#: is a log of 28.925 (29.0 rounds it up). Measured on the authors' full raw_results (CUHK-ARISE/GAMABench
#: @ 41ebccf, 1,445 logs); keys are (table, row, column) as :func:`variant_tables` names them, values the
#: recomputed value (the cause holds only while llmpsych still gives it) and the note.
VARIANT_MISPRINTS: dict[tuple[str, str, str], tuple[float, str]] = {
    ("Table 6.7", "gpt-3.5-turbo-0125 public_goods", "R=0.5"): (
        28.925,
        "the log scores 28.925, printed rounded up",
    ),
    ("Table 6.13", "llama-3.1-70b public_goods", "Std"): (
        5.457,
        "a population SD (sample SD 5.457 x sqrt(4/5))",
    ),
    ("Table 6.13", "llama-3.1-70b sealed_bid_auction", "(0,100]"): (
        22.192,
        "the row matches no released log",
    ),
    ("Table 6.13", "llama-3.1-70b sealed_bid_auction", "(0,400]"): (
        11.848,
        "the row matches no released log",
    ),
    ("Table 6.13", "llama-3.1-70b sealed_bid_auction", "(0,800]"): (
        14.441,
        "the row matches no released log",
    ),
    ("Table 6.13", "llama-3.1-70b sealed_bid_auction", "Avg"): (16.032, "the row matches no released log"),
    ("Table 6.13", "llama-3.1-70b sealed_bid_auction", "Std"): (4.402, "the row matches no released log"),
    ("Table 6.17", "gemini-1.5-pro bar_game", "R=60%"): (37.5, "the log gives 37.5"),
    ("Table 6.17", "gemini-1.5-pro bar_game", "Avg"): (
        52.625,
        "follows the misprinted R=60% cell (42.5 for 37.5)",
    ),
    ("Table 6.17", "gemini-1.5-pro bar_game", "Std"): (
        18.638,
        "follows the misprinted R=60% cell (42.5 for 37.5)",
    ),
    ("Table 6.17", "gemini-1.5-pro battle_royale", "Std"): (
        9.993,
        "a population SD, not the tables' sample SD",
    ),
    ("§6.6.2 text", "gpt-4o public_goods", "w/o jailbreak Std"): (
        3.0442,
        "a population SD (3.0442 x sqrt(4/5))",
    ),
}
#: Printed cells with no log in the authors' repository (no Public Goods jailbreak run was released).
VARIANT_UNRELEASED: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("§6.6.2 text", "gpt-4o public_goods", "w/ jailbreak Avg"),
        ("§6.6.2 text", "gpt-4o public_goods", "w/ jailbreak Std"),
    }
)

#: arXiv v4 Table 1 cells the released logs do not give where the game's formula is the same in both
#: versions and the thesis (Tables 6.8-6.9) prints the recomputed value for the same logs: (model, column)
#: -> (recomputed, the arithmetic). No convention gives the print: not the population SD, not the SD or
#: mean of the five run scores rounded to one decimal or to integers, and not truncation (39 other cells
#: of the table are rounded where truncating would differ).
ARXIV_MISPRINTS: dict[tuple[str, str], tuple[float, str]] = {
    ("gpt-3.5-turbo-1106", "Battle Royale SD"): (
        6.848,
        "the five runs 41.18, 33.33, 26.67, 33.33, 43.75 have sample SD 6.848 (population 6.125; of the "
        "scores rounded to one decimal 6.862, to integers 6.841): none is 6.9; the thesis prints 6.8",
    ),
    ("gpt-3.5-turbo-0125", "Public Goods Game mean"): (
        38.860,
        "the five runs 41.25, 25.375, 45.725, 37.975, 43.975 average 38.86 (rounds to 38.9, as the "
        "thesis prints); 38.8 only by truncating, which 39 other cells of the table contradict, or by "
        "rounding the runs to integers, whose SD would be 8.3, not the printed 8.1",
    ),
    ("mixtral-8x7b", "Battle Royale SD"): (
        9.427,
        "the five runs 5.00, 13.33, 7.14, 9.09, 28.57 have sample SD 9.427 (population 8.432; of the "
        "scores rounded to one decimal 9.444, to integers 9.633): none is 9.5; the thesis prints 9.4",
    ),
}


#: arXiv v4 Table 4: GPT-3.5-Turbo-0125's five runs T1-T5 under the arXiv formulas (the rows they change).
ARXIV_TABLE_4: dict[str, tuple[float, ...]] = {
    "sealed_bid_auction": (6.5, 6.5, 4.6, 5.5, 4.4),
    "overall": (44.9, 40.7, 46.2, 42.5, 43.2),
}


def _raw_results(data_dir: Path | None) -> Path:
    from ..games.released_logs import raw_results_dir

    return raw_results_dir(data_dir)


def _leaderboard(data_dir: Path | None, arxiv: bool) -> list[Recomputed]:
    from ..games.released_logs import PUBLISHED, PUBLISHED_ARXIV, released_models, score_released
    from ..games.scoring import GAME_TITLES

    published = PUBLISHED_ARXIV if arxiv else PUBLISHED
    table = "arXiv v4 Table 1" if arxiv else "Tables 6.8-6.9"
    citation = "arXiv 2403.11807v4 Table 1" if arxiv else "thesis Tables 6.8-6.9 (= GAMABench README)"
    have = set(released_models(data_dir))
    out = []
    for model, row in published.items():
        scores = (
            score_released(model, data_dir, version="arxiv_v4" if arxiv else "thesis")
            if model in have
            else {}
        )
        for game, (mean, sd) in row.items():
            title = "Overall" if game == "overall" else GAME_TITLES[game]
            summary = scores.get(game)
            for stat, value in (("mean", mean), ("SD", sd)):
                cell = PrintedCell(SYSTEM, table, model, f"{title} {stat}", printed(value, 1), citation)
                if summary is None:
                    why = (
                        "no logs of this model in this data folder (CUHK-ARISE/GAMABench has them)"
                        if model not in have
                        else "a game of this model has no log in this data folder"
                    )
                    out.append(Recomputed(cell, None, Cause("not-in-data-dir", why)))
                else:
                    value = summary.mean if stat == "mean" else summary.sd
                    documented = ARXIV_MISPRINTS.get((model, cell.column)) if arxiv else None
                    cause = None
                    if documented is not None and abs(value - documented[0]) < 5e-4:
                        cause = Cause("misprint", documented[1])
                    out.append(Recomputed(cell, value, cause))
    return out


def leaderboard_thesis(data_dir: Path | None) -> list[Recomputed]:
    """Thesis Tables 6.8-6.9: mean and sample SD over five runs of each game and the overall."""
    return _leaderboard(data_dir, arxiv=False)


def leaderboard_arxiv(data_dir: Path | None) -> list[Recomputed]:
    """arXiv v4 Table 1: the same logs scored with the arXiv formulas (``version="arxiv_v4"``)."""
    return _leaderboard(data_dir, arxiv=True)


#: The temperature 1.0 and prompt version V1 columns of the variant tables (and the reasoning Default,
#: which is V1) are run 1 of the default protocol: in the authors' raw_results (CUHK-ARISE/GAMABench @
#: 41ebccf) each of the 64 default-mode ``<game>_v1.json`` and ``<game>_v1_t5.json`` logs holds the same
#: ``player_data`` and ``round_records`` as that model's ``<game>_v1_1.json`` (only ``meta`` differs). So
#: where a data folder holds run 1 but not these copies (the seed data), run 1 gives those columns.
RUN_1_COPIES: tuple[tuple[str, str, float], ...] = (("version", "V1", 1), ("temperature", "1.0", 5))


def _run_1_copies(runs: list[Any], variants: list[Any]) -> list[Any]:
    """VariantRuns for the V1 and 1.0 columns from run 1, where the folder has no log of their own."""
    from ..games.variant_logs import Setting, VariantRun

    have = {(v.model, v.game, v.setting.family, v.setting.column, v.setting.mode) for v in variants}
    out = []
    for r in runs:
        if r.run != 1:
            continue
        for family, column, order in RUN_1_COPIES:
            if (r.model, r.game, family, column, "default") not in have:
                setting = Setting(family, column, order)
                out.append(VariantRun(r.model, r.game, setting, r.path, r.score, r.above_range))
    return out


def variant_tables(data_dir: Path | None) -> list[Recomputed]:
    """Thesis Tables 6.2-6.18 and the jailbreak figures of §6.6.2 (1,039 printed cells, seed 000), from
    every log in ``raw_results`` (leaderboard runs and variant logs; run 1 for the V1 and 1.0 columns
    where their copies are absent, see :data:`RUN_1_COPIES`)."""
    from ..games.score_logs import collect
    from ..games.variant_logs import as_variant_runs, build_tables
    from ..games.variant_logs import compare as compare_variants

    found = collect([_raw_results(data_dir)])
    copies = _run_1_copies(list(found.runs), list(found.variants))
    cells = compare_variants(build_tables([*as_variant_runs(found.runs), *found.variants, *copies]))
    out = []
    for c in cells:
        table = f"Table {c.table}" if c.table[0].isdigit() else c.table
        row = f"{c.model} {c.game}"
        cell = PrintedCell(SYSTEM, table, row, c.column, c.printed, f"000:{c.line}")
        key = (table, row, c.column)
        cause = None
        documented = VARIANT_MISPRINTS.get(key)
        if c.recomputed is not None and documented and abs(c.recomputed - documented[0]) < 1e-3:
            cause = Cause("misprint", documented[1])
        elif c.recomputed is None and key in VARIANT_UNRELEASED:
            cause = Cause("not-released", "the authors' repository has no Public Goods jailbreak log")
        elif c.recomputed is None:
            cause = Cause(
                "not-in-data-dir",
                "its log is in CUHK-ARISE/GAMABench@41ebccf raw_results, not in this data folder",
            )
        out.append(Recomputed(cell, c.recomputed, cause))
    return out


def arxiv_table_4(data_dir: Path | None) -> list[Recomputed]:
    """arXiv v4 Table 4: GPT-3.5-Turbo-0125's Sealed-Bid Auction and Overall score of each run."""
    from ..games.released_logs import DEFAULT_MODEL, released_models, score_released
    from ..games.scoring import GAME_TITLES

    have = DEFAULT_MODEL in released_models(data_dir)
    row = score_released(DEFAULT_MODEL, data_dir, version="arxiv_v4") if have else {}
    out = []
    for key, values in ARXIV_TABLE_4.items():
        title = "Overall" if key == "overall" else GAME_TITLES[key]
        summary = row.get(key)
        for run, value in enumerate(values, 1):
            cell = PrintedCell(
                SYSTEM,
                "arXiv v4 Table 4",
                f"{DEFAULT_MODEL} T{run}",
                title,
                printed(value, 1),
                "arXiv 2403.11807v4 Table 4",
            )
            if summary is None or len(summary.values) < run:
                why = "no log of this run in this data folder"
                out.append(Recomputed(cell, None, Cause("not-in-data-dir", why)))
            else:
                out.append(Recomputed(cell, summary.values[run - 1]))
    return out

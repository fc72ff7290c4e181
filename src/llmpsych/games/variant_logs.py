"""The released GAMA-Bench variant logs (temperatures, prompt versions, CoT and personas, sweeps, explicit
El Farol, second-price auction, jailbreak), scored and grouped into the thesis's variant tables.

The authors name each log ``[<model>_]<game>_v<k>[_<tag>].json`` (CUHK-ARISE/GAMABench ``raw_results`` at
41ebccf: 1,447 logs, 520 of them the leaderboard runs of 13 models). The tag says the setting:

=========================  ==================================================  ==========================
tag                        setting                                             thesis
=========================  ==================================================  ==========================
``<n>`` (with ``v1``)      run n of the default protocol                      Tables 6.3/6.10/6.14/6.18
``t0`` ... ``t5``          temperature 0.0, 0.2, ..., 1.0                     Tables 6.4/6.11/6.15/6.19
none, ``v1`` ... ``v5``    prompt version V1-V5                               Tables 6.5/6.12/6.16/6.20
``cot1``, ``role1-3``      CoT; cooperative, selfish, mathematician persona   Table 6.6 (with V1 default)
``r``/``g``/``p``/``vr``/  the game's generalisability sweep, value i          Tables 6.7/6.13/6.17/6.21
``h`` + i
``jailbreak<n>[_v2]``      CipherChat run n, J1-J5 (a second batch: ``_v2``)   §6.6.2 (000:2581)
=========================  ==================================================  ==========================

The El Farol mode (``bar_game_explicit``) and the auction's price rule (``second_price``) are a second
axis: each family above is grouped per mode. Other tags the authors released without a table (``m<i>``
guess ranges, ``s<i>``, ``savept*``, ``cot_default``, ``cot2-5``) are scored and grouped as "other". The
sweep value is read from the log's ``meta`` (its label, e.g. ``R=1/6``), not from the index.

Every log goes through the same reader and validation as the leaderboard
(:mod:`llmpsych.games.released_logs`): a value outside its game's rules is an error naming the file, and
answers above the asked bound are kept and counted.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd

from .published_variants import JAILBREAK, JAILBREAK_LINE, PUBLISHED_VARIANTS, SETTINGS, decimals
from .scoring import GAME_TITLES, GAMES

TEMPERATURES = ("0.0", "0.2", "0.4", "0.6", "0.8", "1.0")
PERSONAS = {"role1": "Cooperative", "role2": "Selfish", "role3": "Mathematician"}
#: The sweep tag of each game (``guessing_game_v1_r3`` is R=1/2).
SWEEP_TAGS: dict[str, str] = {
    "guessing_game": "r",
    "bar_game": "r",
    "divide_dollar": "g",
    "public_goods": "r",
    "diner_dilemma": "p",
    "sealed_bid_auction": "vr",
    "battle_royale": "h",
    "pirate_game": "g",
}
FAMILY_TITLES = {
    "runs": "multiple runs",
    "temperature": "temperatures",
    "version": "prompt versions",
    "reasoning": "reasoning strategies",
    "sweep": "generalisability",
    "jailbreak": "jailbreak (CipherChat)",
    "other": "other released variants",
}


@dataclass(frozen=True)
class Setting:
    """Where a log belongs: its family, the column within it, and the game's mode."""

    family: str  # runs, temperature, version, reasoning, sweep, jailbreak, other
    column: str  # "T1", "0.2", "V3", "CoT", "R=1/6", "J2 v2", ...
    order: float  # column order within the family
    mode: str = "default"  # default, explicit (El Farol), second-price (auction)


def _num(value: Any) -> float | None:
    """A finite JSON number, else None (text such as ``"NaN"`` included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _g(meta: Mapping[str, Any], key: str) -> str:
    """A numeric meta value as text (``400``, ``0.5``); ``?`` for anything else: no label carries text."""
    number = _num(meta.get(key))
    return "?" if number is None else f"{number:g}"


def sweep_label(game: str, meta: Mapping[str, Any]) -> str:
    """The swept parameter's value as the thesis labels it, read from a log's ``meta``."""
    if game == "guessing_game":
        r = _num(meta.get("ratio"))
        return "R=?" if r is None else f"R={Fraction(r).limit_denominator(12)}"
    if game == "bar_game":
        r = _num(meta.get("ratio"))
        return "R=?" if r is None else f"R={round(r * 100)}%"
    if game == "divide_dollar":
        return f"G={_g(meta, 'golds')}"
    if game == "public_goods":
        r = _num(meta.get("ratio"))
        return "R=?" if r is None else f"R={r:.1f}"
    if game == "diner_dilemma":
        keys = ("cheap_cost", "cheap_utility", "exp_cost", "exp_utility")
        return "(" + ",".join(_g(meta, k) for k in keys) + ")"
    if game == "sealed_bid_auction":
        low = _g(meta, "valuation_min") if "valuation_min" in meta else "0"
        return f"({low},{_g(meta, 'valuation_max')}]"
    if game == "battle_royale":
        base, step = _num(meta.get("base_hit_rate")), _num(meta.get("interval"))
        if base is None or step is None:
            return "[?]"
        return f"[{base:g},{base + 9 * step:g}]"
    return f"G={_g(meta, 'gold')}"


def mode_of(game: str, meta: Mapping[str, Any], path: Path) -> str:
    """``explicit`` / ``second-price`` for those logs (from meta, or the folder of older logs); else
    ``default``."""
    mode = str(meta.get("mode", "")).strip().lower()
    folders = "/".join(path.parts[-3:-1])
    if game == "bar_game" and (mode == "explicit" or (not mode and "explicit" in folders)):
        return "explicit"
    if game == "sealed_bid_auction" and (
        mode.startswith("second") or (not mode and "second_price" in folders)
    ):
        return "second-price"
    return "default"


def classify(game: str, version: str, tag: str | None, meta: Mapping[str, Any], path: Path) -> Setting:
    """The setting of one log from its name's version and tag (and its meta for sweeps and modes)."""
    mode = mode_of(game, meta, path)
    k = int(version[1:])
    if tag is None:
        return Setting("version", f"V{k}", k, mode)
    if version != "v1":
        return Setting("other", f"v{k}_{tag}", 1e6, mode)
    if tag.isdigit():
        return Setting("runs", f"T{int(tag)}", int(tag), mode)
    if m := re.fullmatch(r"t(\d)", tag):
        i = int(m[1])
        if i < len(TEMPERATURES):
            return Setting("temperature", TEMPERATURES[i], i, mode)
    if tag == "cot1":
        return Setting("reasoning", "CoT", 1, mode)
    if tag in PERSONAS:
        return Setting("reasoning", PERSONAS[tag], 1 + int(tag[-1]), mode)
    if m := re.fullmatch(r"jailbreak(\d+)(?:_v(\d+))?", tag):
        batch = f" v{m[2]}" if m[2] else ""
        return Setting("jailbreak", f"J{int(m[1])}{batch}", int(m[1]) + 10 * int(m[2] or 1), mode)
    if (m := re.fullmatch(r"([a-z]+)(\d+)", tag)) and m[1] == SWEEP_TAGS[game]:
        return Setting("sweep", sweep_label(game, meta), int(m[2]), mode)
    return Setting("other", tag, 1e6, mode)


@dataclass(frozen=True)
class VariantRun:
    """One scored variant log."""

    model: str
    game: str
    setting: Setting
    path: Path
    score: float
    above_range: tuple[str, ...] = ()


# -- tables -----------------------------------------------------------------------------------------
def _sd(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


@dataclass
class VariantTable:
    """One thesis-layout table: a model's family in one mode; rows are games, columns settings."""

    model: str
    family: str
    mode: str
    columns: list[str]
    cells: dict[str, dict[str, float]]  # game -> column -> score
    files: dict[str, dict[str, Path]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        mode = {"explicit": ", El Farol explicit", "second-price": ", second-price auction"}.get(
            self.mode, ""
        )
        return f"{self.model}: {FAMILY_TITLES[self.family]}{mode}"

    def overall(self) -> dict[str, float]:
        """Per column, the mean of the eight games (only where all eight have that column)."""
        if self.family in {"sweep", "other", "jailbreak"}:
            return {}
        return {
            c: math.fsum(self.cells[g][c] for g in GAMES) / len(GAMES)
            for c in self.columns
            if all(c in self.cells.get(g, {}) for g in GAMES)
        }

    def spread(self, values: Mapping[str, float]) -> tuple[float | None, float | None]:
        """Mean and sample SD across the columns (the thesis's Avg ± Std), None when not printed."""
        if self.family in {"reasoning", "other", "jailbreak"} or not values:
            return None, None
        xs = list(values.values())
        return math.fsum(xs) / len(xs), _sd(xs)


def build_tables(runs: Iterable[VariantRun]) -> list[VariantTable]:
    """Group scored logs into tables (model, family, mode), columns in the thesis's order.

    The thesis tables repeat the default run where a family has it: the 1.0 temperature, V1 and
    the reasoning Default are run 1 of the default protocol (the ``v1`` log). A sweep table has one row
    per game, each with its own columns."""
    groups: dict[tuple[str, str, str], list[VariantRun]] = {}
    for r in runs:
        groups.setdefault((r.model, r.setting.family, r.setting.mode), []).append(r)
    tables = []
    for (model, family, mode), members in sorted(groups.items()):
        order: dict[str, float] = {}
        cells: dict[str, dict[str, float]] = {}
        files: dict[str, dict[str, Path]] = {}
        for r in members:
            order.setdefault(r.setting.column, r.setting.order)
            cells.setdefault(r.game, {})[r.setting.column] = r.score
            files.setdefault(r.game, {})[r.setting.column] = r.path
        if family == "reasoning":  # the Default column is the V1 log (000:2922)
            for (m, fam, md), others in groups.items():
                if (m, fam, md) == (model, "version", mode):
                    for r in others:
                        if r.setting.column == "V1":
                            cells.setdefault(r.game, {})["Default"] = r.score
                            files.setdefault(r.game, {})["Default"] = r.path
                            order["Default"] = 0
        columns = sorted(order, key=lambda c: (order[c], c))
        if family == "sweep":
            columns = []
            for g in GAMES:
                if g in cells:
                    cells[g] = dict(sorted(cells[g].items(), key=lambda kv: _sweep_order(members, g, kv[0])))
        tables.append(VariantTable(model, family, mode, columns, cells, files))
    return tables


def _sweep_order(members: Sequence[VariantRun], game: str, column: str) -> float:
    return next(r.setting.order for r in members if r.game == game and r.setting.column == column)


def render(table: VariantTable) -> list[list[str]]:
    """The table as text rows (header first), values to one decimal as the thesis prints them."""
    from ..stats import format_mean_sd  # scipy loads on first use

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    def pm(avg: float | None, sd: float | None) -> str:
        return f(avg) if avg is None or sd is None else format_mean_sd(avg, sd)  # no sd printed: mean alone

    if table.family in {"sweep", "other"}:
        rows = [["game", "setting", "score"]]
        for g in GAMES:
            for c, v in table.cells.get(g, {}).items():
                rows.append([GAME_TITLES[g], c, f(v)])
            if table.family == "sweep" and g in table.cells:
                avg, sd = table.spread(table.cells[g])
                rows.append([GAME_TITLES[g], "Avg ± Std", pm(avg, sd)])
        return rows
    if table.family == "jailbreak":  # mean ± SD per batch of runs, as §6.6.2 prints them
        batches = sorted({c.partition(" ")[2] for c in table.columns})
        heads = [f"Avg ± Std {b}".strip() for b in batches]
        rows = [["game", *table.columns, *heads]]
        for g in GAMES:
            if g in table.cells:
                values = table.cells[g]
                row = [GAME_TITLES[g], *(f(values.get(c)) for c in table.columns)]
                for b in batches:
                    xs = [v for c, v in values.items() if c.partition(" ")[2] == b]
                    row.append(pm(math.fsum(xs) / len(xs), _sd(xs)) if xs else "-")
                rows.append(row)
        return rows
    spread = table.family != "reasoning"
    rows = [["game", *table.columns, *(["Avg ± Std"] if spread else [])]]
    for g in GAMES:
        if g not in table.cells:
            continue
        values = table.cells[g]
        row = [GAME_TITLES[g], *(f(values.get(c)) for c in table.columns)]
        if spread:
            row.append(pm(*table.spread(values)))
        rows.append(row)
    overall = table.overall()
    if overall:
        row = ["Overall", *(f(overall.get(c)) for c in table.columns)]
        if spread:
            row.append(pm(*table.spread(overall)))
        rows.append(row)
    return rows


# -- comparison with the thesis ----------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One printed number of a thesis variant table and its recomputation (None: no log for it)."""

    table: str
    model: str
    game: str
    column: str  # a setting, "Avg" or "Std"
    line: int
    printed: str
    recomputed: float | None

    @property
    def reproduced(self) -> bool:
        """The recomputed value rounds to the printed one at its printed precision (ties either way)."""
        if self.recomputed is None:
            return False
        half = 0.5 * 10.0 ** -decimals(self.printed)
        return abs(self.recomputed - float(self.printed)) <= half + 1e-9

    def describe(self) -> str:
        got = "no log" if self.recomputed is None else f"{self.recomputed:.{decimals(self.printed) + 2}f}"
        where = f"Table {self.table}" if self.table[0].isdigit() else self.table
        return (
            f"{where} {self.model} {self.game} {self.column}: printed {self.printed} "
            f"(000:{self.line}), recomputed {got}"
        )


def _find(
    tables: Sequence[VariantTable], model: str, family: str, mode: str = "default"
) -> VariantTable | None:
    return next((t for t in tables if (t.model, t.family, t.mode) == (model, family, mode)), None)


def compare(tables: Sequence[VariantTable]) -> list[Cell]:
    """Every legible printed cell of the thesis variant tables against the recomputed value.

    ``tables`` are those of :func:`build_tables` over the variant logs and the leaderboard runs (the
    multiple-runs tables and the jailbreak's "w/o" column are the default protocol's runs 1-5)."""
    cells: list[Cell] = []
    for row in PUBLISHED_VARIANTS:
        table = _find(tables, row.model, row.family)
        if table is None:
            values: dict[str, float] = {}
        elif row.game == "overall":
            values = table.overall()
        else:
            values = dict(table.cells.get(row.game, {}))
        columns = list(values) if row.family == "sweep" else list(SETTINGS[row.family])
        got = [values.get(c) if c in values else None for c in columns]
        for i, printed in enumerate(row.values):
            if printed == "?":
                continue
            label = columns[i] if i < len(columns) else f"setting {i + 1}"
            cells.append(
                Cell(
                    row.table, row.model, row.game, label, row.line, printed, got[i] if i < len(got) else None
                )
            )
        if row.avg == "-" and row.std == "-":
            continue
        complete = {c: v for c, v in zip(columns, got, strict=True) if v is not None}
        full = len(complete) == len(row.values) and table is not None
        avg, sd = table.spread(complete) if full and table is not None else (None, None)
        if row.avg != "-":
            cells.append(Cell(row.table, row.model, row.game, "Avg", row.line, row.avg, avg))
        if row.std != "-":
            cells.append(Cell(row.table, row.model, row.game, "Std", row.line, row.std, sd))
    jail, runs = _find(tables, "gpt-4o", "jailbreak"), _find(tables, "gpt-4o", "runs")
    for game, _, (m0, s0), (m1, s1) in JAILBREAK:
        before = list((runs.cells.get(game, {}) if runs else {}).values())
        after = [v for c, v in (jail.cells.get(game, {}) if jail else {}).items() if " " not in c]
        for column, xs, printed in (
            ("w/o jailbreak Avg", before, m0),
            ("w/o jailbreak Std", before, s0),
            ("w/ jailbreak Avg", after, m1),
            ("w/ jailbreak Std", after, s1),
        ):
            value = None
            if len(xs) == 5:
                value = math.fsum(xs) / 5 if column.endswith("Avg") else statistics.stdev(xs)
            cells.append(Cell("§6.6.2 text", "gpt-4o", game, column, JAILBREAK_LINE, printed, value))
    return cells


# -- outputs -------------------------------------------------------------------------------------------
class LogRun(Protocol):
    """What is read of a leaderboard run (``score_logs.LogRun``; that module imports this one)."""

    @property
    def model(self) -> str: ...
    @property
    def game(self) -> str: ...
    @property
    def run(self) -> int: ...
    @property
    def path(self) -> Path: ...
    @property
    def score(self) -> float: ...
    @property
    def above_range(self) -> tuple[str, ...]: ...


def as_variant_runs(runs: Iterable[LogRun]) -> list[VariantRun]:
    """Leaderboard runs (``score_logs.LogRun``) as the "multiple runs" family of the default mode."""
    return [
        VariantRun(r.model, r.game, Setting("runs", f"T{r.run}", r.run), r.path, r.score, r.above_range)
        for r in runs
    ]


def scores_frame(runs: Iterable[VariantRun]) -> pd.DataFrame:
    """One row per scored variant log (tidy: model, family, mode, game, setting, score, file)."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "model": r.model,
                "family": r.setting.family,
                "mode": r.setting.mode,
                "game": r.game,
                "setting": r.setting.column,
                "score": r.score,
                "above_range": len(r.above_range),
                "file": str(r.path),
            }
            for r in sorted(
                runs, key=lambda r: (r.model, r.setting.family, r.setting.mode, r.game, r.setting.order)
            )
        ]
    )


def cells_frame(cells: Iterable[Cell]) -> pd.DataFrame:
    """The thesis comparison, one row per printed cell."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "table": c.table,
                "model": c.model,
                "game": c.game,
                "column": c.column,
                "seed_line": f"000:{c.line}",
                "printed": c.printed,
                "recomputed": c.recomputed,
                "reproduced": c.reproduced,
            }
            for c in cells
        ]
    )


def tables_markdown(table: VariantTable) -> str:
    """One table in Markdown."""
    rows = render(table)
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows[1:])])


def comparison_lines(cells: Sequence[Cell], verbose: bool = False) -> list[str]:
    """The comparison with the thesis as text: the count, every cell that differs, and the cells without
    a log (listed when at most 20, or with ``verbose``; else counted per table)."""
    missing = [c for c in cells if c.recomputed is None]
    lines = [
        f"thesis variant tables: {sum(c.reproduced for c in cells)} of {len(cells)} printed cells "
        f"reproduced at the printed precision ({len(missing)} without a released log)"
    ]
    lines += [f"  {c.describe()}" for c in cells if c.recomputed is not None and not c.reproduced]
    if len(missing) <= 20 or verbose:
        lines += [f"  {c.describe()}" for c in missing]
    else:
        names = ", ".join(dict.fromkeys(c.table for c in missing))
        lines.append(f"  no released log for {len(missing)} cells of {names} (--verbose lists them)")
    return lines


def write_outputs(
    out: Path, runs: Sequence[VariantRun], tables: Sequence[VariantTable], cells: Sequence[Cell]
) -> list[Path]:
    """``variant_tables.md`` (every table), ``variant_scores.csv`` (one row per log) and
    ``thesis_variants.csv`` (one row per printed thesis cell) in ``out``."""
    from ..report.markdown import write_report
    from ..report.tables import write_tables

    out.mkdir(parents=True, exist_ok=True)
    report = write_report(
        out / "variant_tables.md",
        "GAMA-Bench variant tables",
        [(t.title, tables_markdown(t)) for t in tables],
    )
    paths, _ = write_tables(
        [("variant_scores", scores_frame(runs)), ("thesis_variants", cells_frame(cells))], out, parquet=False
    )
    return [report, *paths]

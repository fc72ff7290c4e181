"""MAS-Resilience (thesis ch. 7 = arXiv 2408.00989): Tables 7.2, 7.3, 7.5, 7.6 and 7.7, from the released
HumanEval verdicts (``MAS-Resilience-Experiments/<System>/*_results.jsonl``, read by
:func:`llmpsych.collab.released.read_verdicts`). A cell is a run's pass@1: passed tasks over 164.

Only code-generation runs with GPT-3.5 are released: Table 7.2 (each cell averages the four tasks) and
the math, translation, text-evaluation and GPT-4o cells of Table 7.3 are counted as not released, as
are the defended runs of Table 7.7 that were not released. Table 7.4 prints no numbers (which settings
improved), nor does Fig. 7.4.

Which file is which setting: the authors' file names, read as P_m (the share of a faulty agent's
messages that get errors) and P_e (the share of lines of such a message): ``partial0.2_X`` and
``collab_partial_X`` are P_m = 0.2, P_e = X; ``modify_2/4/6``, ``semantic_X``, ``metagpt_X``,
``mad_code_X`` and ``agentverse_code_X`` are P_m = 1.0, P_e = X (``_0``, ``_0.0`` and ``modify0``: no
errors, the vanilla run); ``syntax_0.2`` is the syntactic error type at P_e = 0.2, P_m = 1.0. Every
mapped file reproduces its printed cell, or differs by a documented misprint below."""

from __future__ import annotations

from pathlib import Path

from .cells import Cause, PrintedCell, Recomputed

SYSTEM = "MAS-Resilience"
DATASET = "MAS-Resilience-Experiments"
SYSTEMS = ("MetaGPT", "Self-collab", "Camel", "SPP", "MAD", "AgentVerse")
CITE_7_2 = "thesis Table 7.2 (000:3335-3343)"
CITE_7_3 = "thesis Table 7.3 (000:3351-3359)"
CITE_7_5 = "thesis Table 7.5 (000:3387-3399)"
CITE_7_6 = "thesis Table 7.6 (000:3401-3406)"
CITE_7_7 = "thesis Table 7.7 (000:3428-3436)"

#: The released run of each (setting, system): its path under ``MAS-Resilience-Experiments``.
RUNS: dict[str, dict[str, str]] = {
    "Vanilla": {
        "MetaGPT": "MetaGPT/metagpt_0.0.jsonl",
        "Self-collab": "Self-collab/collab_semantic_0.0.jsonl",
        "Camel": "Camel/camel_modify_0.jsonl",
        "SPP": "SPP/spp_semantic_0.0.jsonl",
        "MAD": "MAD/mad_code_semantic_0.0.jsonl",
        "AgentVerse": "AgentVerse/agentverse_modify0.jsonl",
    },
    "P_e=0.2, P_m=0.2": {
        "MetaGPT": "MetaGPT/metagpt_partial0.2_0.2.jsonl",
        "Self-collab": "Self-collab/collab_partial_0.2.jsonl",
        "Camel": "Camel/camel_partial0.2_0.2.jsonl",
        "SPP": "SPP/spp_partial0.2_0.2.jsonl",
        "MAD": "MAD/mad_code_0.2_0.2.jsonl",
        "AgentVerse": "AgentVerse/agentverse_code_0.2_0.2.jsonl",
    },
    "P_e=0.2, P_m=0.4": {},
    "P_e=0.2, P_m=0.6": {},
    "P_e=0.4, P_m=0.2": {
        "MetaGPT": "MetaGPT/metagpt_partial0.2_0.4.jsonl",
        "Self-collab": "Self-collab/collab_partial_0.4.jsonl",
        "Camel": "Camel/camel_partial0.2_0.4.jsonl",
        "SPP": "SPP/spp_partial0.2_0.4.jsonl",
        "MAD": "MAD/mad_code_0.2_0.4.jsonl",
        "AgentVerse": "AgentVerse/agentverse_code_0.2_0.4.jsonl",
    },
    "P_e=0.6, P_m=0.2": {
        "MetaGPT": "MetaGPT/metagpt_partial0.2_0.6.jsonl",
        "Self-collab": "Self-collab/collab_partial_0.6.jsonl",
        "Camel": "Camel/camel_partial0.2_0.6.jsonl",
        "SPP": "SPP/spp_partial0.2_0.6.jsonl",
        "MAD": "MAD/mad_code_0.2_0.6.jsonl",
        "AgentVerse": "AgentVerse/agentverse_code_0.2_0.6.jsonl",
    },
    "P_e=0.2, P_m=1.0": {
        "MetaGPT": "MetaGPT/metagpt_0.2.jsonl",
        "Self-collab": "Self-collab/collab_semantic_0.2.jsonl",
        "Camel": "Camel/camel_modify_2.jsonl",
        "SPP": "SPP/spp_semantic_0.2.jsonl",
        "MAD": "MAD/mad_code_semantic_0.2.jsonl",
        "AgentVerse": "AgentVerse/agentverse_semantic0.2.jsonl",
    },
    "P_e=0.4, P_m=1.0": {
        "MetaGPT": "MetaGPT/metagpt_0.4.jsonl",
        "Self-collab": "Self-collab/collab_semantic_0.4.jsonl",
        "Camel": "Camel/camel_modify_4.jsonl",
        "SPP": "SPP/spp_semantic_0.4.jsonl",
        "MAD": "MAD/mad_code_0.4.jsonl",
        "AgentVerse": "AgentVerse/agentverse_code_0.4.jsonl",
    },
    "P_e=0.6, P_m=1.0": {
        "MetaGPT": "MetaGPT/metagpt_0.6.jsonl",
        "Self-collab": "Self-collab/collab_semantic_0.6.jsonl",
        "Camel": "Camel/camel_modify_6.jsonl",
        "SPP": "SPP/spp_semantic_0.6.jsonl",
        "MAD": "MAD/mad_code_0.6.jsonl",
        "AgentVerse": "AgentVerse/agentverse_code_0.6.jsonl",
    },
    "Syntactic": {
        "MetaGPT": "MetaGPT/metagpt_syntax_0.2.jsonl",
        "Self-collab": "Self-collab/collab_syntax_0.2.jsonl",
        "Camel": "Camel/camel_syntax_0.2.jsonl",
        "SPP": "SPP/spp_syntax_0.2.jsonl",
        "MAD": "MAD/mad_code_syntax_0.2.jsonl",
        "AgentVerse": "AgentVerse/agentverse_syntax0.2.jsonl",
    },
}

#: Table 7.5 as printed: six systems then the average (the row "P_e=0.2, P_m=0.2" is printed twice,
#: 000:3389 and 000:3392, identically; it is compared once).
TABLE_7_5: dict[str, tuple[str, ...]] = {
    "Vanilla": ("50.00", "76.20", "62.20", "65.20", "62.20", "72.6", "64.73"),
    "P_e=0.2, P_m=0.2": ("52.44", "68.29", "57.32", "54.90", "60.98", "69.51", "60.57"),
    "P_e=0.2, P_m=0.4": ("38.41", "65.85", "50.00", "41.46", "58.53", "63.41", "52.94"),
    "P_e=0.2, P_m=0.6": ("36.02", "51.22", "47.56", "37.80", "49.76", "62.80", "47.53"),
    "P_e=0.4, P_m=0.2": ("46.34", "39.02", "57.90", "47.00", "59.15", "68.90", "53.05"),
    "P_e=0.6, P_m=0.2": ("50.60", "41.46", "56.10", "45.70", "61.59", "67.07", "53.75"),
    "P_e=0.2, P_m=1.0": ("26.80", "40.90", "29.27", "34.80", "53.70", "49.40", "48.44"),
    "P_e=0.4, P_m=1.0": ("15.90", "25.00", "18.90", "18.90", "52.27", "48.17", "29.86"),
    "P_e=0.6, P_m=1.0": ("6.70", "18.29", "10.40", "15.90", "47.39", "37.80", "22.75"),
}
#: Table 7.6 as printed (P_e = 0.2, P_m = 1.0; its Vanilla and Semantic rows are Table 7.5's runs).
TABLE_7_6: dict[str, tuple[str, ...]] = {
    "Vanilla": ("50.00", "76.20", "62.20", "65.2", "62.2", "72.6", "64.73"),
    "Semantic": ("26.80", "40.90", "29.27", "34.80", "53.70", "49.40", "39.15"),
    "Syntactic": ("29.30", "75.60", "42.70", "28.70", "67.10", "43.30", "47.78"),
}
#: Table 7.2 (by structure, mean over the four tasks) and 7.3 (by task, mean over the systems).
TABLE_7_2: dict[str, tuple[str, str, str]] = {
    "GPT-3.5": ("55.62", "54.37", "53.00"),
    "GPT-3.5 w/ AutoTransform": ("38.24", "43.93", "46.57"),
    "GPT-3.5 w/ AutoInject": ("38.27", "40.25", "48.12"),
    "GPT-4o": ("67.18", "67.52", "67.79"),
    "GPT-4o w/ AutoTransform": ("30.08", "56.92", "60.83"),
    "GPT-4o w/ AutoInject": ("44.14", "60.51", "64.01"),
}
TABLE_7_3: dict[str, tuple[str, str, str, str]] = {
    "GPT-3.5": ("64.70", "30.00", "69.10", "45.45"),
    "GPT-3.5 w/ AutoTransform": ("50.83", "22.67", "67.99", "43.68"),
    "GPT-3.5 w/ AutoInject": ("39.1", "25.00", "67.85", "46.50"),
    "GPT-4o": ("81.91", "60.00", "70.82", "54.17"),
    "GPT-4o w/ AutoTransform": ("73.78", "50.67", "65.12", "52.92"),
    "GPT-4o w/ AutoInject": ("72.22", "51.33", "71.36", "54.33"),
}
#: Table 7.7 (defences, code, GPT-3.5; one decimal): (system, fault) -> w/o Improve, Challenger,
#: Inspector, C+I. Camel's AutoInject row is lost from the thesis text (000:3434), so it is not compared.
TABLE_7_7: dict[tuple[str, str], tuple[str, str, str, str]] = {
    ("Self-collab", "w/o Errors"): ("76.2", "74.6", "76.4", "76.8"),
    ("Self-collab", "AutoTransform"): ("43.3", "70.7", "74.4", "75.0"),
    ("Self-collab", "AutoInject"): ("40.9", "72.0", "67.7", "73.8"),
    ("Camel", "w/o Errors"): ("62.2", "62.2", "61.0", "63.8"),
    ("Camel", "AutoTransform"): ("32.5", "43.5", "41.8", "48.7"),
}
DEFENCES = ("w/o Improve", "Challenger", "Inspector", "C+I")
#: Table 7.7's released runs: (system, fault, defence) -> path (Table 7.5's runs for the undefended
#: cells; ``collab_gpt`` is Self-collab's AutoTransform run, ``collab_defense_inner`` / ``_police`` its
#: AutoInject runs with the Challenger / the Inspector).
RUNS_7_7: dict[tuple[str, str, str], str] = {
    ("Self-collab", "w/o Errors", "w/o Improve"): "Self-collab/collab_semantic_0.0.jsonl",
    ("Self-collab", "AutoTransform", "w/o Improve"): "Self-collab/collab_gpt.jsonl",
    ("Self-collab", "AutoInject", "w/o Improve"): "Self-collab/collab_semantic_0.2.jsonl",
    ("Self-collab", "AutoInject", "Challenger"): "Self-collab/collab_defense_inner.jsonl",
    ("Self-collab", "AutoInject", "Inspector"): "Self-collab/collab_defense_police.jsonl",
    ("Camel", "w/o Errors", "w/o Improve"): "Camel/camel_modify_0.jsonl",
}
#: Why a cell without a mapped run has none.
UNMAPPED: dict[tuple[str, str], str] = {
    ("Camel", "AutoTransform"): (
        "the released Camel AutoTransform runs (camel_GPTmodified, camel_GPTunrestricted) give 48.17 and "
        "39.63, neither the printed 32.5"
    ),
}

#: Table 7.5's rows P_m = 0.4 and 0.6 at P_e = 0.2 have no released run; two files no name maps:
NO_RUN = {
    "MetaGPT": " (the unmapped metagpt_partial_0.2 gives 40.85, neither 38.41 nor 36.02)",
    "SPP": " (the unmapped spp_partial_0.2 gives 42.68, neither 41.46 nor 37.80)",
    "MAD": " (the printed 58.53 and 49.76 are no count of 164 either)",
}

#: Table 7.3's released code runs: the six systems' GPT-3.5 runs of Table 7.5 (the code column is their
#: plain mean; AutoInject is the P_e = 0.2, P_m = 1.0 setting, spec mas-resilience.md §8.3).
TABLE_7_3_CODE = {"GPT-3.5": "Vanilla", "GPT-3.5 w/ AutoInject": "P_e=0.2, P_m=1.0"}

#: Printed cells the released runs do not give, with the value llmpsych recomputes (the cause holds
#: only while it still does) and why: (table, row, column) -> (recomputed, note).
MISPRINTS: dict[tuple[str, str, str], tuple[float, str]] = {
    ("Table 7.5", "P_e=0.4, P_m=1.0", "MAD"): (
        54.268,
        "89 of 164 passed = 54.27, printed 2.00 lower",
    ),
    ("Table 7.5", "P_e=0.6, P_m=1.0", "MAD"): (
        49.390,
        "81 of 164 passed = 49.39, printed 2.00 lower",
    ),
    ("Table 7.5", "P_e=0.4, P_m=1.0", "Average"): (
        30.183,
        "the mean of the row as printed, with MAD's misprinted 52.27 (29.857); the runs give 30.18",
    ),
    ("Table 7.5", "P_e=0.6, P_m=1.0", "Average"): (
        23.069,
        "the mean of the row as printed, with MAD's misprinted 47.39 (22.747); the runs give 23.07",
    ),
    ("Table 7.5", "P_e=0.2, P_m=1.0", "Average"): (
        39.126,
        "the row's six runs average 39.13 (its printed cells 39.145, Table 7.6's 39.15 for the same runs)",
    ),
}


def _run(folder: Path, name: str) -> tuple[float, int]:
    """(pass@1, passed) of one released run; DataError naming a missing or malformed file."""
    from ..collab.released import read_verdicts
    from ..errors import DataError

    path = folder / f"{name}_results.jsonl"
    if not path.is_file():
        raise DataError(
            f"{path} not found",
            f"the {DATASET} folder is incomplete: it should hold CUHK-ARISE/MAS-Resilience@d88dbdc "
            "Experiments/ unchanged",
        )
    verdicts = read_verdicts(path)
    return verdicts.pass_at_1, verdicts.n_passed


def _runs(data_dir: Path | None) -> dict[tuple[str, str], tuple[float, int]]:
    """(setting, system) -> (pass@1, passed) for every mapped run of Tables 7.5-7.6."""
    from ..collab.released import experiments_dir

    folder = experiments_dir(data_dir)
    return {
        (setting, system): _run(folder, name)
        for setting, files in RUNS.items()
        for system, name in files.items()
    }


def _padded(cell: PrintedCell, value: float, passed: int) -> Cause | None:
    """A two-decimal print that is the one-decimal rounding padded with a zero (26.83 printed 26.80)."""
    if cell.decimals == 2 and cell.printed.endswith("0") and abs(round(value, 1) - cell.value) < 1e-9:
        return Cause(
            "misprint",
            f"{passed} of 164 passed = {value:.2f}; printed rounded to one decimal ({value:.1f}) and padded "
            "to two",
        )
    return None


def _average_cause(cell: PrintedCell, value: float, printed_row: tuple[str, ...]) -> Cause | None:
    """An average printed as the mean of the row's printed (rounded) cells."""
    of_printed = sum(float(v) for v in printed_row) / len(printed_row)
    if cell.equals(of_printed):
        return Cause(
            "misprint",
            f"the mean of the row's printed, rounded cells ({of_printed:.3f}); the runs' mean is {value:.3f}",
        )
    return None


def _system_rows(
    table: str,
    citation: str,
    printed_rows: dict[str, tuple[str, ...]],
    runs: dict[tuple[str, str], tuple[float, int]],
) -> list[Recomputed]:
    out = []
    for row, cells in printed_rows.items():
        setting = "P_e=0.2, P_m=1.0" if row == "Semantic" else row
        values: list[float] = []
        for system, text in zip(SYSTEMS, cells[:-1], strict=True):
            cell = PrintedCell(SYSTEM, table, row, system, text, citation)
            run = runs.get((setting, system))
            if run is None:
                why = f"no released run of {system} at {setting}" + NO_RUN.get(system, "")
                out.append(Recomputed(cell, None, Cause("not-released", why)))
                continue
            value, passed = run
            values.append(value)
            documented = MISPRINTS.get((table, row, system))
            if documented is not None and abs(value - documented[0]) < 1e-3:
                out.append(Recomputed(cell, value, Cause("misprint", documented[1])))
            else:
                out.append(Recomputed(cell, value, _padded(cell, value, passed)))
        cell = PrintedCell(SYSTEM, table, row, "Average", cells[-1], citation)
        if len(values) < len(SYSTEMS):
            missing = len(SYSTEMS) - len(values)
            why = (
                "none of the row's six runs is released"
                if not values
                else f"{missing} of its six runs are not released"
            )
            out.append(Recomputed(cell, None, Cause("not-released", why)))
            continue
        mean = sum(values) / len(values)
        documented = MISPRINTS.get((table, row, "Average"))
        if documented is not None and abs(mean - documented[0]) < 1e-3:
            out.append(Recomputed(cell, mean, Cause("misprint", documented[1])))
        else:
            out.append(Recomputed(cell, mean, _average_cause(cell, mean, cells[:-1])))
    return out


def table_7_5(data_dir: Path | None) -> list[Recomputed]:
    """Table 7.5: HumanEval pass@1 of the six systems under nine AutoInject error rates (GPT-3.5)."""
    return _system_rows("Table 7.5", CITE_7_5, TABLE_7_5, _runs(data_dir))


def table_7_6(data_dir: Path | None) -> list[Recomputed]:
    """Table 7.6: HumanEval pass@1 of the six systems with semantic and syntactic errors (GPT-3.5)."""
    return _system_rows("Table 7.6", CITE_7_6, TABLE_7_6, _runs(data_dir))


def tables_7_2_7_3(data_dir: Path | None) -> list[Recomputed]:
    """Tables 7.2-7.3: by structure and by task; only GPT-3.5's code runs are released."""
    runs = _runs(data_dir)
    out = []
    for row, structures in TABLE_7_2.items():
        for column, text in zip(("Linear", "Flat", "Hierarchical"), structures, strict=True):
            cell = PrintedCell(SYSTEM, "Table 7.2", row, column, text, CITE_7_2)
            why = "each cell averages the four tasks; only the code-generation runs are released"
            out.append(Recomputed(cell, None, Cause("not-released", why)))
    for row, cells in TABLE_7_3.items():
        for column, text in zip(("Code Gen", "Math", "Translation", "Text Eval"), cells, strict=True):
            cell = PrintedCell(SYSTEM, "Table 7.3", row, column, text, CITE_7_3)
            setting = TABLE_7_3_CODE.get(row) if column == "Code Gen" else None
            if setting is None:
                if column != "Code Gen":
                    why = f"the {column.lower()} runs are not released (only code generation is)"
                elif row.startswith("GPT-4o"):
                    why = "no GPT-4o run is released"
                else:
                    low, high = _autotransform_means(data_dir)
                    why = (
                        f"the six systems' released AutoTransform runs average {low:.2f} or {high:.2f} "
                        "(MetaGPT and Camel each have two), near the paper's Fig. 7.4 bar, not the thesis's "
                        "50.83"
                    )
                out.append(Recomputed(cell, None, Cause("not-released", why)))
                continue
            values = [runs[(setting, s)][0] for s in SYSTEMS]
            mean = sum(values) / len(values)
            cause = _padded_mean(cell, mean, setting)
            out.append(Recomputed(cell, mean, cause))
    return out


#: The released AutoTransform code runs (GPT-3.5), two for MetaGPT and Camel (specs/mas-resilience.md §9.3).
AUTOTRANSFORM: dict[str, tuple[str, ...]] = {
    "MetaGPT": ("MetaGPT/metagpt_GPTmodified.jsonl", "MetaGPT/metagpt_GPTunretricted.jsonl"),
    "Self-collab": ("Self-collab/collab_gpt.jsonl",),
    "Camel": ("Camel/camel_GPTmodified.jsonl", "Camel/camel_GPTunrestricted.jsonl"),
    "SPP": ("SPP/spp_gpt_0.0.jsonl",),
    "MAD": ("MAD/mad_code_gpt.jsonl",),
    "AgentVerse": ("AgentVerse/agentverse_code_gpt.jsonl",),
}


def _autotransform_means(data_dir: Path | None) -> tuple[float, float]:
    """The lowest and highest mean over the six systems of their released AutoTransform runs."""
    from ..collab.released import experiments_dir

    folder = experiments_dir(data_dir)
    runs = {system: [_run(folder, name)[0] for name in names] for system, names in AUTOTRANSFORM.items()}
    return (
        sum(min(v) for v in runs.values()) / len(runs),
        sum(max(v) for v in runs.values()) / len(runs),
    )


def _padded_mean(cell: PrintedCell, mean: float, setting: str) -> Cause | None:
    if cell.decimals == 2 and cell.printed.endswith("0") and abs(round(mean, 1) - cell.value) < 1e-9:
        return Cause(
            "misprint",
            f"the six runs of Table 7.5's {setting} row average {mean:.3f}; printed rounded to one decimal "
            f"({mean:.1f}) and padded to two",
        )
    return None


def table_7_7(data_dir: Path | None) -> list[Recomputed]:
    """Table 7.7: Self-collab and Camel with the Challenger, the Inspector and both (code, GPT-3.5)."""
    from ..collab.released import experiments_dir

    folder = experiments_dir(data_dir)
    out = []
    for (system, fault), cells in TABLE_7_7.items():
        for defence, text in zip(DEFENCES, cells, strict=True):
            cell = PrintedCell(SYSTEM, "Table 7.7", f"{system} {fault}", defence, text, CITE_7_7)
            name = RUNS_7_7.get((system, fault, defence))
            if name is None:
                why = UNMAPPED.get((system, fault), "") if defence == "w/o Improve" else ""
                why = why or f"no released run of {system} {fault} with {defence}"
                out.append(Recomputed(cell, None, Cause("not-released", why)))
                continue
            value, passed = _run(folder, name)
            out.append(Recomputed(cell, value, _padded(cell, value, passed)))
    return out

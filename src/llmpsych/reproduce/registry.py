"""Which published tables ``llmpsych reproduce`` recomputes, which need model calls, which it does not
cover yet (and why)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import emotionbench, gamabench, mas, psychobench, reliability
from .cells import Recomputed


@dataclass(frozen=True)
class Reproducer:
    """One published table recomputed from the released data of ``dataset``."""

    system: str
    table: str
    dataset: str
    run: Callable[[Path | None], list[Recomputed]]

    @property
    def title(self) -> str:
        return " ".join((self.run.__doc__ or self.table).split("\n\n", 1)[0].split())


@dataclass(frozen=True)
class Uncovered:
    """A published table this command does not recompute: why, and the command that would (model calls)."""

    system: str
    table: str
    why: str
    command: str | None = None


REPRODUCERS: tuple[Reproducer, ...] = (
    Reproducer(gamabench.SYSTEM, "Tables 6.8-6.9", gamabench.DATASET, gamabench.leaderboard_thesis),
    Reproducer(gamabench.SYSTEM, "arXiv v4 Table 1", gamabench.DATASET, gamabench.leaderboard_arxiv),
    Reproducer(gamabench.SYSTEM, "arXiv v4 Table 4", gamabench.DATASET, gamabench.arxiv_table_4),
    Reproducer(gamabench.SYSTEM, "Tables 6.2-6.18, §6.6.2", gamabench.DATASET, gamabench.variant_tables),
    Reproducer(reliability.SYSTEM, "Table 3.3", reliability.DATASET, reliability.table_3_3),
    Reproducer(reliability.SYSTEM, "Table 3.6", reliability.DATASET, reliability.table_3_6),
    Reproducer(reliability.SYSTEM, "Table 3.10", reliability.DATASET, reliability.table_3_10),
    Reproducer(reliability.SYSTEM, "Table 3.13", reliability.DATASET, reliability.table_3_13),
    Reproducer(reliability.SYSTEM, "Table 3.14", reliability.DATASET, reliability.table_3_14),
    Reproducer(reliability.SYSTEM, "Table 3.15", reliability.DATASET, reliability.table_3_15),
    Reproducer(emotionbench.SYSTEM, "Table 5.11 (GPT-3.5)", emotionbench.DATASET, emotionbench.table_5_11),
    Reproducer(emotionbench.SYSTEM, "Tables 5.7/5.15", emotionbench.DATASET, emotionbench.tables_5_7_5_15),
    Reproducer(emotionbench.SYSTEM, "Table 5.10 (humans)", emotionbench.DATASET, emotionbench.table_5_10),
    Reproducer(mas.SYSTEM, "Tables 7.2-7.3", mas.DATASET, mas.tables_7_2_7_3),
    Reproducer(mas.SYSTEM, "Table 7.5", mas.DATASET, mas.table_7_5),
    Reproducer(mas.SYSTEM, "Table 7.6", mas.DATASET, mas.table_7_6),
    Reproducer(mas.SYSTEM, "Table 7.7", mas.DATASET, mas.table_7_7),
    Reproducer(
        psychobench.SYSTEM, "Tables 4.2-4.8 (human norms)", psychobench.DATASET, psychobench.human_norms
    ),
)

#: Tables whose numbers need new model answers (the released data do not hold them): skipped, with the
#: command that recomputes them from a model you can call.
NEEDS_MODELS: tuple[Uncovered, ...] = (
    Uncovered(
        reliability.SYSTEM,
        "Table 3.6 (GPT-4-Turbo, Gemini-1.0-Pro, Llama-3.1-8B rows)",
        "only GPT-3.5-Turbo's 2,500-configuration grid is released",
        "llmpsych run --task reliability --model <model>",
    ),
    Uncovered(
        "PsychoBench",
        "thesis Tables 4.3-4.8, model columns",
        "the authors released the questionnaires, not the models' answers",
        "llmpsych psychobench run --model <model>",
    ),
    Uncovered(
        "MAS-Resilience",
        "thesis Tables 7.2-7.7 for a new model",
        "a cell is a multi-agent system's answers to a task, clean and with faulty agents",
        "llmpsych mas preset main --model <model>",
    ),
    Uncovered(
        emotionbench.SYSTEM,
        "Table 5.11 for a new model",
        "a column is a model's answers to every situation",
        "llmpsych run --task emotionbench --model <model>",
    ),
    Uncovered(
        gamabench.SYSTEM,
        "Tables 6.8-6.9 for a new model",
        "a leaderboard row is five runs of the eight games by that model",
        "llmpsych run --task gamabench --model <model>",
    ),
)

#: Published tables the released data could give but this command does not recompute yet: counted
#: apart, never as reproduced.
NOT_YET_COVERED: tuple[Uncovered, ...] = (
    Uncovered(
        reliability.SYSTEM,
        "Table 3.3 p-values",
        "only the differences and the outlier count are compared; the p-values move with the outlier map "
        "(fitted on unreleased data) by an amount no one has bounded",
    ),
    Uncovered(
        "MAS-Resilience",
        "thesis Fig. 7.4 (single-agent bars), §7.4.6 case-study numbers",
        "the figure prints no numbers; the case study's runs are partly released (camel_length_* cover "
        "HumanEval/0-49 only, specs/mas-resilience.md §8.10)",
    ),
)

SYSTEMS: tuple[str, ...] = tuple(dict.fromkeys(r.system for r in REPRODUCERS))


def system_named(name: str) -> str:
    """A system by its name, case and ``-`` ignored (``gamabench``, ``llmpersonality``)."""
    from ..errors import ConfigError

    wanted = name.lower().replace("-", "").replace("_", "")
    aliases = {"reliability": reliability.SYSTEM, "games": gamabench.SYSTEM, "mas": mas.SYSTEM}
    if wanted in aliases:
        return aliases[wanted]
    for system in SYSTEMS:
        if system.lower().replace("-", "") == wanted:
            return system
    known = {u.system for u in NOT_YET_COVERED} - set(SYSTEMS)
    if any(s.lower().replace("-", "") == wanted for s in known):
        raise ConfigError(f"{name}: not yet covered by `llmpsych reproduce`", "see docs/reproduce.md")
    raise ConfigError(f"unknown system {name!r}", f"use one of {', '.join(SYSTEMS)}")

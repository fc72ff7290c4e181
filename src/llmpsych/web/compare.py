"""The compare page's content: each benchmark's own comparison, written into a temporary folder.

Nothing is re-implemented here: the functions the CLI's compare / leaderboard commands call write their
Markdown (and charts) into a fresh temporary folder, which the page shows and then deletes. Only one
comparison is made at a time (matplotlib is not thread-safe).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import LlmpsychError
from .render import folder_fragment

_ONE_AT_A_TIME = threading.Lock()


def _psychobench(run_dirs: list[Path], out: Path) -> Path:
    from ..psychobench.compare import write_comparison

    write_comparison(run_dirs, out)
    return out / "comparison.md"


def _gamabench(run_dirs: list[Path], out: Path) -> Path:
    from ..games.leaderboard import leaderboard, write_leaderboard

    scores, infos = leaderboard(run_dirs)
    if not any(s.games for s in scores.values()):
        raise LlmpsychError("no finished, scorable game in the chosen runs")
    write_leaderboard(scores, infos, out)
    return out / "leaderboard.md"


def _emotionbench(run_dirs: list[Path], out: Path) -> Path:
    from ..emotion.compare import comparison_table, write_comparison

    out.mkdir(parents=True, exist_ok=True)
    target = out / "comparison.md"
    write_comparison(target, *comparison_table(run_dirs, humans=False))
    return target


def _mas(run_dirs: list[Path], out: Path) -> Path:
    from ..collab.experiments import compare_runs

    compare_runs(run_dirs, out)
    return out / "comparison.md"


@dataclass(frozen=True)
class Comparison:
    """A benchmark's comparison of several runs."""

    title: str
    write: Callable[[list[Path], Path], Path]


COMPARISONS: dict[str, Comparison] = {
    "psychobench": Comparison("PsychoBench comparison (Table 4.3 layout)", _psychobench),
    "gamabench": Comparison("GAMA-Bench leaderboard", _gamabench),
    "emotionbench": Comparison("EmotionBench, side by side", _emotionbench),
    "mas": Comparison("MAS-Resilience comparison", _mas),
}


def compare_html(task: str, run_dirs: list[Path], link_href: Callable[[Path], str | None]) -> str:
    """The comparison of ``run_dirs`` (all of ``task``) as an HTML fragment; errors as LlmpsychError.

    ``link_href`` maps a file a link of the comparison names (an absolute path) to a URL, or None."""
    comparison = COMPARISONS.get(task)
    if comparison is None:
        raise LlmpsychError(f"{task} runs have no comparison", f"compare {', '.join(COMPARISONS)} runs")
    with _ONE_AT_A_TIME, tempfile.TemporaryDirectory(prefix="llmpsych-web-") as tmp:
        out = Path(tmp) / "comparison"
        try:
            md = comparison.write(run_dirs, out)
        except LlmpsychError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LlmpsychError(f"the comparison failed: {type(exc).__name__}: {exc}") from None
        text = md.read_text(encoding="utf-8")
        folder = md.parent

        def href(target: str) -> str | None:
            if not target or "://" in target:
                return None
            return link_href(Path(os.path.normpath(folder / target)))

        return folder_fragment(text, folder, href)

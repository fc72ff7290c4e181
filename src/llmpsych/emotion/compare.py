"""EmotionBench runs (and released testing CSVs) side by side in the papers' layout: the table that
``llmpsych emotionbench compare`` prints and the web compare page shows, with its shift heatmap."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from ..errors import LlmpsychError


def scoring_label(published: bool, authors_code: bool = False) -> str:
    """How a column was scored, in words."""
    if authors_code:
        return "the authors' code's scoring (reverse keys, x2 for DASS-21, original F-test details)"
    return "published (the thesis's printed sums)" if published else "corrected"


def factor_names(data_dir: Path | None) -> dict[str, str]:
    """Factor id -> its name in the situations file (empty when the file cannot be read)."""
    from .situations import load_situations

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_situations(data_dir).names()
    except LlmpsychError:
        return {}


def missing_lines(result: dict[str, Any]) -> list[str]:
    """Under a released file's table: what of the released design it lacks, with the n it has."""
    gaps = result.get("missing") or []
    if not gaps:
        return []
    return [
        f"missing from the released design ({len(gaps)} part(s); the n shown are what the file has):",
        *(f"  {gap}" for gap in gaps),
    ]


def _summary_language(source: Path, summary: dict[str, Any] | None) -> str:
    """A compared source's language: a run's (its summary, else its stored config); released CSVs are the
    official English data."""
    from ..runs.languages import OFFICIAL_LANGUAGE, config_language
    from ..runs.store import STORE_FILE, RunStore

    if summary is None:
        return OFFICIAL_LANGUAGE
    language = summary.get("language")
    if isinstance(language, str) and language:
        return language
    if (source / STORE_FILE).is_file():  # analysed before runs recorded their language
        with RunStore.in_dir(source, readonly=True) as store:
            language = config_language(store.get_meta("config") or {})
    return language or OFFICIAL_LANGUAGE


def comparison_table(
    sources: list[Path],
    scale: str | None = None,
    *,
    humans: bool = True,
    data_dir: Path | None = None,
    published: bool | None = None,
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The Markdown table of ``sources`` (run directories and/or released CSVs) and its columns.

    Every column must be scored the same way (all published or all corrected), else LlmpsychError: a run
    directory keeps the scoring it was run with; released CSVs are re-scored like the run directories
    (published when there are none), or as ``published`` says."""
    from ..runs.settings import LANGUAGE, labels_by_settings, stored_config
    from .rescore import scale_for_file, score_released, summary_published
    from .scales import load_scales as load_emotionbench_scales
    from .tables import markdown, paper_table

    columns: dict[str, dict[str, Any]] = {}
    scorings: dict[str, bool] = {}
    scale_names: set[str] = set()
    summaries: dict[Path, dict[str, Any]] = {}
    for source in sources:
        if source.is_dir():
            summary_file = source / "summary.json"
            if not summary_file.is_file():
                raise LlmpsychError(f"{source}: no summary.json (run `llmpsych analyze {source}` first)")
            summaries[source] = json.loads(summary_file.read_text())
            if summaries[source].get("experiment") == "describe":
                raise LlmpsychError(
                    f"{source}: a describe run has refusal rates, no scale scores to compare",
                    "see its report.md and por.csv",
                )
    if published is None:  # released files follow the runs when they agree, else the authors' scoring
        run_scorings = {summary_published(s) for s in summaries.values()}
        published = run_scorings.pop() if len(run_scorings) == 1 else True
    languages = {source: _summary_language(source, summaries.get(source)) for source in sources}
    by_language = len(set(languages.values())) > 1  # columns say their language when the runs differ
    configs = {source: stored_config(source) for source in sources}
    results: list[tuple[Path, dict[str, Any], str, str]] = []
    for source in sources:
        if source in summaries:
            result = summaries[source]
            model = str(result.get("model", source.name))
            where = source.name
        else:
            scales = load_emotionbench_scales(data_dir)
            result = score_released(source, scale_for_file(source, scales, scale), published=published)
            model, where = str(result.get("model") or source.stem), ""
        results.append((source, result, model, where))
    named, _ = labels_by_settings(  # and every other setting the runs differ in (a column is one source)
        [f"{m} · {languages[s]}" if by_language else m for s, _, m, _ in results],
        [configs[s] for s, _, _, _ in results],
        ignore=[LANGUAGE],
    )
    for (source, result, _, where), name in zip(results, named, strict=True):
        label = f"{name} ({where})" if where else name
        if label in columns:  # two runs of one model in folders of one name: never merged or overwritten
            label = f"{name} ({source})"
        while label in columns:
            label += "'"
        scale_names.add(result.get("scale", "?"))
        scorings[label] = summary_published(result)
        columns[label] = result
    if len(scale_names) > 1:
        raise LlmpsychError(f"the sources use different scales ({', '.join(sorted(scale_names))})")
    if len(set(scorings.values())) > 1:
        listed = "; ".join(f"{label}: {scoring_label(p)}" for label, p in scorings.items())
        raise LlmpsychError(
            f"the columns mix published and corrected scoring ({listed})",
            "compare like with like: re-run with --published or --corrected to match the run directories",
        )
    if humans and scale_names == {"PANAS"}:
        from .crowd import crowd_path, human_table, load_crowd
        from .report import human_as_result

        panas = load_emotionbench_scales(data_dir)["PANAS"]
        columns["Crowd"] = human_as_result(human_table(load_crowd(crowd_path(data_dir), panas), panas))
    text = markdown(paper_table(columns, factor_names(data_dir), with_n=False))
    gaps = [f"{label}: {line.strip()}" for label, r in columns.items() for line in missing_lines(r)[1:]]
    if gaps:  # a released file with parts removed is never compared as if it were whole
        text += "\n\nMissing from the released design (these columns average fewer runs):\n\n" + "\n".join(
            f"- {gap}" for gap in gaps
        )
    return text, columns


def write_comparison(out: Path, text: str, columns: dict[str, dict[str, Any]]) -> Path | None:
    """Write the comparison ``text`` to ``out`` (Markdown) with the heatmap of the columns' changes from
    the default beside it; the heatmap's path (None: nothing to draw)."""
    from ..report.files import atomic_write_text
    from .report import heatmap

    shifts = {
        f"{label} {m[0].upper()}": {f: (c.get(m) or {}).get("change") for f, c in result["factors"].items()}
        for label, result in columns.items()
        for m in ("positive", "negative", "total")
        if any(m in c for c in result["factors"].values())
    }
    present = {k: {f: float(v) for f, v in col.items() if v is not None} for k, col in shifts.items()}
    png = heatmap(present, out.with_suffix(".png"), "Change from default")
    image = f"\n\n![shifts]({png.name})" if png is not None else ""
    atomic_write_text(out, f"# EmotionBench comparison\n\n{text}{image}\n")
    return png

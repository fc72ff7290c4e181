"""PsychoBench reports: BSRI classification, CABIN groupings, tidy tables, Markdown/HTML, transcripts, and
the multi-model comparison; on hand-made results, a scripted server, and one short embedded-model run."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.errors import DataError, LlmpsychError
from llmpsych.instruments.official import load_psychobench_scales
from llmpsych.psychobench import bsri, cabin
from llmpsych.psychobench.analysis import ReportSettings, load_settings, significance_mark
from llmpsych.psychobench.cli import parse_thresholds
from llmpsych.report import tables
from llmpsych.report.charts import grouped_bar_chart
from llmpsych.report.html import fenced, markdown_to_html, slug, write_html
from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer

HAS_PLOTS = importlib.util.find_spec("matplotlib") is not None
HAS_PARQUET = importlib.util.find_spec("pyarrow") is not None


def mixed_responder(body: dict) -> str:
    """Varies with the item, its position and the model ('low'/'high'), so runs and models differ."""
    low, high = (int(x) for x in re.findall(r"from (\d+) to (\d+)", body["messages"][0]["content"])[-1])
    listed = re.findall(r"^(\d+)\. ", body["messages"][-1]["content"], flags=re.MULTILINE)
    shift = 3 if body["model"] == "high" else 0
    span = high - low + 1
    return "Here are my scores:\n" + "\n".join(
        f"{item}: {low + (p + shift + int(item)) % span}" for p, item in enumerate(listed)
    )


@pytest.fixture(scope="module")
def app():
    cli._mount_subcommands()
    return cli.app


@pytest.fixture(scope="module")
def scales(seed_data: Path):
    return load_psychobench_scales(seed_data)


# -- BSRI ------------------------------------------------------------------------------------------------
def test_bsri_split_is_strictly_above_the_threshold() -> None:
    cut = bsri.Thresholds(4.5, 5.0, "given")
    assert bsri.classify(4.6, 5.1, cut) == "Androgynous"
    assert bsri.classify(4.6, 5.0, cut) == "Masculine"  # equal to the threshold is not high
    assert bsri.classify(4.5, 5.01, cut) == "Feminine"
    assert bsri.classify(1.0, 1.0, cut) == "Undifferentiated"
    assert bsri.classify(math.nan, 6.0, cut) is None


def test_bsri_default_thresholds_are_the_n_weighted_norm_means_and_say_so(scales) -> None:
    scale = scales["BSRI"]
    cut = bsri.thresholds(scale, bsri.BsriSettings())
    for name, value in (("Masculine", cut.masculine), ("Feminine", cut.feminine)):
        norms = scale.subscale(name).norms
        assert len(norms) == 4
        assert value == pytest.approx(sum(g.mean * g.n for g in norms) / sum(g.n for g in norms))
    assert "n-weighted mean" in cut.source and "unpublished median" in cut.source
    midpoint = bsri.thresholds(scale, bsri.BsriSettings(rule="midpoint", feminine_threshold=5.5))
    assert (midpoint.masculine, midpoint.feminine) == (4.0, 5.5) and "5.5 (given)" in midpoint.source


def test_bsri_label_order_accepts_names_or_letters_and_rejects_anything_else() -> None:
    assert bsri.BsriSettings().label_order == ["Undifferentiated", "Masculine", "Feminine", "Androgynous"]
    order = bsri.BsriSettings(label_order=["a", "feminine", "M", "U"]).label_order
    assert order == ["Androgynous", "Feminine", "Masculine", "Undifferentiated"]
    assert bsri.order_key(order) == "A:F:M:U"
    for bad in (["U", "M", "F"], ["U", "M", "F", "F"], ["U", "M", "F", "X"]):
        with pytest.raises(ValueError, match="label_order"):
            bsri.BsriSettings(label_order=bad)
    assert parse_thresholds("4.9, 4.76") == {"masculine_threshold": 4.9, "feminine_threshold": 4.76}
    with pytest.raises(LlmpsychError, match="two numbers"):
        parse_thresholds("4.9")


def test_bsri_runs_on_a_hand_made_score_table() -> None:
    scores = pd.DataFrame(
        [
            ("BSRI", run, sub, value)
            for run, (m, f) in enumerate([(5, 6), (5, 4), (4, 6), (4, 4), (5, math.nan), (6, 6)], start=1)
            for sub, value in (("Masculine", m), ("Feminine", f))
        ],
        columns=["scale", "run", "subscale", "score"],
    )
    runs = bsri.classify_runs(scores, "BSRI", bsri.Thresholds(4.5, 5.0, "given"))
    assert [None if pd.isna(label) else label for label in runs["label"]] == [
        "Androgynous", "Masculine", "Feminine", "Undifferentiated", None, "Androgynous",
    ]  # fmt: skip
    assert bsri.count_string(runs["label"], list(bsri.PAPER_ORDER)) == "1:1:1:2"  # U:M:F:A
    assert bsri.count_string(runs["label"], ["Androgynous", "Feminine", "Masculine", "Undifferentiated"]) == (
        "2:1:1:1"
    )


# -- CABIN -----------------------------------------------------------------------------------------------
def test_cabin_mapping_is_checked_and_names_resolve_case_and_source_typo_insensitively(scales) -> None:
    scale = scales["CABIN"]
    assert len(scale.subscale_names) == 41
    mapping = cabin.check_groupings(
        {"source": "test", "groupings": {"G": {"People": ["social service", "Business Iniatives"]}}}
    )
    assert cabin.resolve(scale, mapping) == {"G": {"People": ["Social Service", "Business Initiatives"]}}
    with pytest.raises(DataError, match="'Astronomy' is not one of CABIN's 41 interests"):
        cabin.resolve(scale, {"source": "t", "groupings": {"G": {"D": ["Astronomy"]}}})
    for bad, message in (
        ({"groupings": {"G": {"D": ["Law"]}}}, "'source' must say"),
        ({"source": "t", "groupings": {}}, "'groupings' must map"),
        ({"source": "t", "groupings": {"G": {"D": []}}}, "non-empty list"),
        ({"source": "t", "groupings": {"G": {"D": ["Law"]}}, "extra": 1}, "expected a mapping"),
    ):
        with pytest.raises(DataError, match=message):
            cabin.check_groupings(bad)


def test_cabin_dimension_is_the_mean_of_its_interests_per_run() -> None:
    scores = pd.DataFrame(
        [("CABIN", 1, "Law", 2.0), ("CABIN", 1, "Sales", 4.0), ("CABIN", 2, "Law", 3.0)]
        + [("CABIN", 2, "Sales", math.nan)],
        columns=["scale", "run", "subscale", "score"],
    )
    out = cabin.group_scores(scores, "CABIN", {"G": {"D": ["Law", "Sales"], "L": ["Law"]}})
    got = {(r["dimension"], r["run"]): r["score"] for _, r in out.iterrows()}
    assert got[("D", 1)] == 3.0 and math.isnan(got[("D", 2)]) and got[("L", 2)] == 3.0


# -- report helpers --------------------------------------------------------------------------------------
def test_significance_marks() -> None:
    row = {"significant": True, "significant_holm": True, "difference": 1.0}
    assert significance_mark(row) == "**↑"
    assert significance_mark({**row, "significant_holm": False, "difference": -1.0}) == "*↓"
    assert significance_mark({**row, "significant": False, "significant_holm": None}) == ""


def test_html_has_heading_anchors_rewritten_links_embedded_png_and_no_raw_html(tmp_path: Path) -> None:
    assert slug("EPQ-R run 10") == "epq-r-run-10" and slug("What n is?") == "what-n-is"
    png = tmp_path / "c.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    text = (
        "# R\n\n## BFI run 1\n\n[t](transcripts.md#bfi-run-1) [x](other.md)\n\n![c](c.png)\n\n"
        "<script>alert(1)</script>\n\n" + fenced("a ``` b")
    )
    page = markdown_to_html(text, title="R", base_dir=tmp_path, md_links=["transcripts.md"])
    assert '<h2 id="bfi-run-1">' in page and 'href="transcripts.html#bfi-run-1"' in page
    assert 'href="other.md"' in page and 'src="data:image/png;base64,' in page
    assert "<script>" not in page and "&lt;script&gt;" in page and "a ``` b" in page
    md = tmp_path / "r.md"
    md.write_text(text)
    assert write_html(md, embed_images=False).read_text().count('src="c.png"') == 1


def test_tables_write_csv_and_parquet_or_say_why_not(tmp_path: Path, monkeypatch) -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", None]})
    paths, note = tables.write_tables([("t", frame)], tmp_path)
    if HAS_PARQUET:
        assert note is None and {p.name for p in paths} == {"t.csv", "t.parquet"}
        assert pd.read_parquet(tmp_path / "t.parquet")["a"].tolist() == [1, 2]
    monkeypatch.setattr(tables, "parquet_available", lambda: False)
    paths, note = tables.write_tables([("u", frame)], tmp_path)
    assert [p.name for p in paths] == ["u.csv"] and "pyarrow is not installed" in note


@pytest.mark.skipif(not HAS_PLOTS, reason="needs the plots extra")
def test_grouped_bar_chart(tmp_path: Path) -> None:
    series = {"model": [(3.0, 0.5), (2.0, math.nan)], "humans": [(3.5, 0.7), None]}
    assert grouped_bar_chart(["A", "B"], series, tmp_path / "g.png", "t", (1, 5)) == tmp_path / "g.png"
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG")


# -- end to end on a scripted server ---------------------------------------------------------------------
def _anchors_resolve(run_dir: Path) -> list[str]:
    report = (run_dir / "report.md").read_text()
    anchors = re.findall(r"\(transcripts\.md#([^)]+)\)", report)
    transcripts_md = (run_dir / "transcripts.md").read_text()
    transcripts_html = (run_dir / "transcripts.html").read_text()
    headings = {slug(line[3:]) for line in transcripts_md.splitlines() if line.startswith("## ")}
    for anchor in anchors:
        assert anchor in headings and f'id="{anchor}"' in transcripts_html, anchor
    return anchors


def test_run_report_tables_bsri_cabin_transcripts_html_and_rebuild(app, tmp_path: Path, seed_data) -> None:
    run_dir = tmp_path / "r"
    cfg = {
        "task": "psychobench",
        "model": "openai-compatible/low",
        "cache": False,
        "data_dir": str(seed_data),
        "options": {"scale": ["BSRI", "CABIN", "DTDD"], "runs": 3},
    }
    with FaultServer(responder=mixed_responder) as server:
        start_run(parse_run_config({**cfg, "base_url": server.base_url}), run_dir, False)
    for name in ("answers", "scores", "valid", "summary", "comparisons", "norms", "bsri"):
        assert (run_dir / f"{name}.csv").is_file()
        assert (run_dir / f"{name}.parquet").is_file() == HAS_PARQUET
    assert len(pd.read_csv(run_dir / "answers.csv")) == 3 * (60 + 164 + 12)  # per item
    report = (run_dir / "report.md").read_text()
    for section in ("What n is", "Comparison with human norms", "BSRI sex-role classification"):
        assert f"## {section}" in report
    assert "sig.: `**` significant at alpha = 0.01 after Holm's correction" in report
    assert "are **not reported**: neither the PsychoBench paper/thesis nor its questionnaires.json" in report

    # BSRI: default thresholds, the paper's order, counts recomputed by hand from scores.csv
    scores = pd.read_csv(run_dir / "scores.csv")
    scale = load_psychobench_scales(seed_data)["BSRI"]
    cut = bsri.thresholds(scale, bsri.BsriSettings())
    expected = []
    for run in (1, 2, 3):
        sub = scores[(scores["scale"] == "BSRI") & (scores["run"] == run)].set_index("subscale")["score"]
        expected.append(bsri.classify(sub["Masculine"], sub["Feminine"], cut))
    assert pd.read_csv(run_dir / "bsri.csv")["label"].tolist() == expected
    counts = ":".join(str(expected.count(label)) for label in bsri.PAPER_ORDER)
    assert f"**Undifferentiated : Masculine : Feminine : Androgynous**: **{counts}**" in report

    # transcripts: every link of the report resolves, and holds the model's reply
    anchors = _anchors_resolve(run_dir)
    assert {"bsri-run-1", "cabin-run-3", "dtdd-run-2"} <= set(anchors)
    assert "Here are my scores:" in (run_dir / "transcripts.md").read_text()
    page = (run_dir / "report.html").read_text()
    assert 'href="transcripts.html#dtdd-run-2"' in page and "<table>" in page
    if HAS_PLOTS:
        assert page.count('src="data:image/png;base64,') == 3  # BSRI, CABIN (41 interests), DTDD

    # change the report settings: given thresholds, another order, a CABIN mapping (no model call)
    store = RunStore.in_dir(run_dir)
    calls = store.call_count()
    store.close()
    mapping = tmp_path / "groups.yaml"
    mapping.write_text(
        'source: "hand-made for this test"\ngroupings:\n  "8DM (test)":\n'
        "    Things: [Mechanics/Electronics, Construction/WoodWork]\n    People: [Social Service, Sales]\n"
    )
    changed = CliRunner().invoke(
        app,
        ["psychobench", "analyze", str(run_dir), "--bsri-thresholds", "1,7", "--bsri-order", "A,F,M,U"]
        + ["--cabin-groupings", str(mapping)],
    )
    assert changed.exit_code == 0, changed.output
    settings = load_settings(run_dir)
    assert settings.bsri.masculine_threshold == 1 and settings.bsri.label_order[0] == "Androgynous"
    groups = pd.read_csv(run_dir / "cabin_groups_summary.csv").set_index("dimension")
    cabin_scores = scores[scores["scale"] == "CABIN"].groupby("subscale")["score"].mean()
    things = (cabin_scores["Mechanics/Electronics"] + cabin_scores["Construction/WoodWork"]) / 2
    assert groups.loc["Things", "mean"] == pytest.approx(things) and groups.loc["People", "n"] == 3

    # `llmpsych analyze` rebuilds everything from the store with the stored settings
    for path in run_dir.glob("*.*"):
        if path.suffix in (".md", ".html", ".csv", ".parquet", ".png"):
            path.unlink()
    rebuilt = CliRunner().invoke(app, ["analyze", str(run_dir)])
    assert rebuilt.exit_code == 0, rebuilt.output
    report = (run_dir / "report.md").read_text()
    assert "masculine 1 (given); feminine 7 (given)" in report
    assert "**Androgynous : Feminine : Masculine : Undifferentiated**: **0:0:3:0**" in report
    assert "From the mapping you supplied (source: hand-made for this test)" in report
    assert (run_dir / "report.html").is_file() and (run_dir / "transcripts.html").is_file()
    _anchors_resolve(run_dir)
    store = RunStore.in_dir(run_dir)
    assert store.call_count() == calls
    store.close()

    bad = CliRunner().invoke(app, ["psychobench", "analyze", str(run_dir), "--bsri-order", "U,M"])
    assert bad.exit_code != 0 and "label_order must list each of" in str(bad.exception)
    assert ReportSettings.model_validate(load_settings(run_dir).model_dump()).bsri.label_order[0] == (
        "Androgynous"
    )  # a rejected change leaves the stored settings alone


def test_two_models_give_one_table_4_3_comparison_with_html_and_charts(
    app, tmp_path: Path, seed_data
) -> None:
    out = tmp_path / "pb"
    with FaultServer(responder=mixed_responder) as server:
        result = CliRunner().invoke(
            app,
            [
                "psychobench", "run", "--model", "openai-compatible/low", "--model", "openai-compatible/high",
                "--scale", "BSRI,DTDD", "--runs", "2", "--data-dir", str(seed_data), "--out", str(out),
                "--base-url", server.base_url, "--no-cache", "--no-progress", "--bsri-order", "U,M,F,A",
                "--bsri-thresholds", "4,4",
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = (out / "comparison.md").read_text()
    scores = text[text.index("## Scores") : text.index("## Between runs")]  # then the tests between runs
    rows = [line for line in scores.splitlines() if line.startswith("| BSRI")]
    assert [r.split("|")[2].strip() for r in rows] == ["Masculine", "Feminine", "Conclusion (runs, U:M:F:A)"]
    for model in ("low", "high"):
        labels = pd.read_csv(out / f"openai-compatible_{model}" / "bsri.csv")["label"]
        assert bsri.count_string(labels, list(bsri.PAPER_ORDER)) in rows[2]
    assert "Students (Women)" in rows[0]  # the crowd column lists every norm group
    page = (out / "comparison.html").read_text()
    assert 'href="openai-compatible_low/report.html"' in page
    tidy = pd.read_csv(out / "comparison.csv")
    assert set(tidy["model"]) == {"openai-compatible/low", "openai-compatible/high"}
    if HAS_PLOTS:
        assert (out / "comparison-BSRI.png").is_file() and "![comparison-DTDD](comparison-DTDD.png)" in text
        assert page.count("data:image/png;base64,") == 2
    if HAS_PARQUET:
        assert (out / "comparison.parquet").is_file()


# -- one short real run ----------------------------------------------------------------------------------
@pytest.mark.model
def test_report_of_a_short_embedded_model_run(tmp_path: Path, seed_data: Path) -> None:
    cfg = parse_run_config(
        {
            "task": "psychobench",
            "model": "local/qwen2.5-0.5b",
            "data_dir": str(seed_data),
            "params": {"max_tokens": 64},  # 8 statements; one request keeps the test short
            "options": {"scale": ["ICB"], "runs": 1, "max_reasks": 0},
        }
    )
    outcome = start_run(cfg, tmp_path / "r", False)
    assert outcome.summary.done == 1
    run_dir = tmp_path / "r"
    store = RunStore.in_dir(run_dir)
    replies = [call.response["text"] for call in store.calls()]
    store.close()
    assert len(replies) == 1
    transcripts = (run_dir / "transcripts.md").read_text()
    for reply in replies:  # the model's own words, one click from the report
        assert reply.strip() in transcripts
    assert set(_anchors_resolve(run_dir)) == {"icb-run-1"}
    report = (run_dir / "report.html").read_text()
    assert "local/qwen2.5-0.5b" in report and 'href="transcripts.html#icb-run-1"' in report
    assert (run_dir / "valid.csv").is_file() and (run_dir / "answers.parquet").is_file() == HAS_PARQUET

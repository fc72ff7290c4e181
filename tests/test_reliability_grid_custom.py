"""The perturbation grid for any instrument: our own scale and grid files against the scripted server."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from llmpsych.errors import ConfigError, DataError
from llmpsych.reliability.analysis import factor_f_tests
from llmpsych.reliability.custom_grid import CustomGridTask, point_value
from llmpsych.runs import parse_run_config, resume_run, start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import run_cli, unit_results

# Our own made-up instrument (not from any data set): two subscales, two reversed items, one paraphrase each.
SCALE_EN = """
name: GARDEN
language: en
response:
  min: 1
  max: 5
  labels: {1: not at all like me, 2: a little like me, 3: somewhat like me, 4: much like me, 5: exactly}
scoring: AVG
instructions: Think about your weekends.
items:
  - index: 1
    text: I wait calmly for seeds to sprout.
    versions: [Seeds can take their time with me.]
  - index: 2
    text: I dig up bulbs to check on them.
    reverse: true
    versions: [I cannot leave planted bulbs alone.]
  - index: 3
    text: I enjoy watching slow vines climb.
    versions: [Slow-growing climbers please me.]
  - index: 4
    text: My tools hang in a fixed order.
    versions: [Every tool of mine has its hook.]
  - index: 5
    text: I leave the hose wherever it falls.
    reverse: true
    versions: [My hose lies where I dropped it.]
  - index: 6
    text: I sweep the path after weeding.
    versions: [The path gets swept once I finish weeding.]
subscales:
  - {name: Patience, items: [1, 2, 3]}
  - {name: Tidiness, items: [4, 5, 6]}
"""

SCALE_DE = """
name: GARDEN
language: de
response: {min: 1, max: 5}
scoring: AVG
items:
  - index: 1
    text: Ich warte ruhig darauf dass Samen keimen.
    versions: [Samen dürfen sich bei mir Zeit lassen.]
  - index: 2
    text: Ich grabe Zwiebeln aus um nach ihnen zu sehen.
    reverse: true
    versions: [Gepflanzte Zwiebeln lasse ich nie in Ruhe.]
  - index: 3
    text: Ich sehe langsamen Ranken gern beim Klettern zu.
    versions: [Langsame Kletterpflanzen gefallen mir.]
  - index: 4
    text: Meine Werkzeuge hängen in fester Ordnung.
    versions: [Jedes meiner Werkzeuge hat seinen Haken.]
  - index: 5
    text: Ich lasse den Schlauch liegen wo er hinfällt.
    reverse: true
    versions: [Mein Schlauch liegt wo ich ihn fallen ließ.]
  - index: 6
    text: Nach dem Jäten fege ich den Weg.
    versions: [Nach dem Jäten wird der Weg gefegt.]
subscales:
  - {name: Patience, items: [1, 2, 3]}
  - {name: Tidiness, items: [4, 5, 6]}
"""

GRID = """
templates:
  plain: |
    $instructions
    Rate $framing, with a whole number from $low to $high:
    $levels

    $items

    Reply with one line per statement, 'number: score'.
  short:
    en: "Statements ($n), scores $low-$high ($framing):\\n$items\\nAnswer 'number: score' per line."
    de: "Aussagen ($n), Werte $low-$high ($framing):\\n$items\\nAntwort 'Nummer: Wert' je Zeile."
framings:
  own: {}
  seven:
    points: 7
    labels: [never, rarely, sometimes, half the time, often, usually, always]
    text: {en: how often each statement is true of you, de: wie oft jede Aussage auf Sie zutrifft}
personas:
  none: null
  keen: {en: You are a keen gardener., de: Sie gärtnern leidenschaftlich.}
versions: [0]
languages: [en]
"""

# every version and language of the scale files (their defaults), one template, framing and persona
GRID_LANGUAGES = """
templates:
  short:
    en: "Statements ($n), scores $low-$high:\\n$items\\nAnswer 'number: score' per line."
    de: "Aussagen ($n), Werte $low-$high:\\n$items\\nAntwort 'Nummer: Wert' je Zeile."
personas:
  keen: {en: You are a keen gardener., de: Sie gärtnern leidenschaftlich.}
"""

RANGE = re.compile(r"(?:from |scores |Werte )(\d+)(?: to |-)(\d+)")
STATEMENT = re.compile(r"^(\d+)\. (.+)$", re.MULTILINE)


def respondent(body: dict[str, Any]) -> str:
    """Answers high with the 'keen' persona and low without; ignores the template; small noise that
    depends on each statement's text and position (so on the unit's item order)."""
    messages = body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    prompt = messages[-1]["content"]
    low, high = map(int, RANGE.search(prompt).groups())  # type: ignore[union-attr]
    base = 0.8 if ("keen" in system or "leidenschaftlich" in system) else 0.3
    lines = []
    for number, text in STATEMENT.findall(prompt):
        noise = int(hashlib.sha256(f"{number}{text}".encode()).hexdigest(), 16) % 5 / 20 - 0.1
        lines.append(f"{number}: {round(low + (base + noise) * (high - low))}")
    return "\n".join(lines)


def write_files(tmp_path: Path, grid: str = GRID) -> tuple[Path, Path, Path]:
    en, de, g = tmp_path / "garden.yaml", tmp_path / "garden-de.yaml", tmp_path / "grid.yaml"
    en.write_text(SCALE_EN, encoding="utf-8")
    de.write_text(SCALE_DE, encoding="utf-8")
    g.write_text(grid, encoding="utf-8")
    return en, de, g


def config(server: FaultServer, options: dict[str, Any]):  # noqa: ANN201
    return parse_run_config(
        {
            "task": "reliability-grid",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "options": options,
        }
    )


def test_two_by_two_by_two_grid_finds_the_factor_the_respondent_follows(tmp_path: Path) -> None:
    en, _, grid = write_files(tmp_path)
    options = {"scale_file": [str(en)], "grid": str(grid), "runs": 4}
    with FaultServer(responder=respondent) as server:
        outcome = start_run(config(server, options), tmp_path / "run", False)
    assert outcome.summary.done == 32 and outcome.summary.failed == 0  # 2 x 2 x 2 configurations x 4
    run = tmp_path / "run"
    points = pd.read_csv(run / "data_points.csv")
    assert len(points) == 32 and set(points["persona"]) == {"none", "keen"}
    assert set(points["template"]) == {"plain", "short"} and set(points["framing"]) == {"own", "seven"}
    assert (points["valid_rate"] == 1).all()
    keen = points[points["persona"] == "keen"]
    none = points[points["persona"] == "none"]
    assert keen["Patience"].mean() > none["Patience"].mean() + 0.5
    f_tests = pd.read_csv(run / "factor_f_tests.csv").set_index(["factor", "dimension"])
    for dim in ("Patience", "Tidiness"):
        assert f_tests.loc[("persona", dim), "p_holm"] < 0.01
        assert f_tests.loc[("template", dim), "p_holm"] > 0.05
    comparisons = pd.read_csv(run / "factor_comparisons.csv")
    keen_rows = comparisons[(comparisons["factor"] == "persona") & (comparisons["level"] == "keen")]
    assert len(keen_rows) == 2 and (keen_rows["difference"] > 0).all() and (keen_rows["p_holm"] < 0.01).all()
    assert {"pc1", "pc2", "outlier"} <= set(points.columns)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["dimensions"] == ["Patience", "Tidiness"] and summary["n"] == 32
    report = (run / "report.md").read_text()
    assert "One-way ANOVA" in report and "GARDEN" in report


def test_subscale_norms_give_variance_tests(tmp_path: Path) -> None:
    normed = SCALE_EN.replace(
        "  - {name: Patience, items: [1, 2, 3]}",
        "  - {name: Patience, items: [1, 2, 3], norms: [{group: Pilot, mean: 3, sd: 0.9, n: 40}]}",
    )
    en, _, grid = write_files(tmp_path)
    en.write_text(normed, encoding="utf-8")
    with FaultServer(responder=respondent) as server:
        start_run(config(server, {"scale_file": [str(en)], "grid": str(grid)}), tmp_path / "run", False)
    variance = pd.read_csv(tmp_path / "run" / "variance_tests.csv")
    assert list(variance["dimension"]) == ["Patience"] and list(variance["norm"]) == ["Pilot"]
    row = variance.iloc[0]
    points = pd.read_csv(tmp_path / "run" / "data_points.csv")
    assert row["model_n"] == len(points) and row["human_sd"] == 0.9 and row["human_n"] == 40
    assert row["f"] == pytest.approx(0.81 / points["Patience"].var(ddof=1))
    assert "Variance against the norms" in (tmp_path / "run" / "report.md").read_text()


def test_seven_point_framing_maps_back_onto_the_scale_range(tmp_path: Path) -> None:
    assert point_value(1, 7, 1, 5) == 1 and point_value(7, 7, 1, 5) == 5 and point_value(4, 7, 1, 5) == 3
    en, _, grid = write_files(tmp_path)
    with FaultServer(responder=lambda body: "\n".join(f"{i}: 7" for i in range(1, 7))) as server:
        start_run(config(server, {"scale_file": [str(en)], "grid": str(grid)}), tmp_path / "run", False)
    points = pd.read_csv(tmp_path / "run" / "data_points.csv").set_index("unit_id")
    # all 7s: on the 1-7 framing every item is 5 (reversed item 1), Patience = (5 + 1 + 5) / 3
    assert points.loc["plain-v0-en-seven-none", "Patience"] == pytest.approx(11 / 3)
    # on the scale's own 1-5 range a 7 is out of range: no valid answer, the unit is left out
    assert "plain-v0-en-own-none" not in points.index


def test_languages_and_item_versions_come_from_the_scale_files(tmp_path: Path) -> None:
    en, de, grid = write_files(tmp_path, GRID_LANGUAGES)
    prompts: list[str] = []

    def answer(body: dict[str, Any]) -> str:
        prompts.append(body["messages"][-1]["content"])
        return respondent(body)

    options = {"scale_file": [str(en), str(de)], "grid": str(grid), "item_order": "original"}
    with FaultServer(responder=answer) as server:
        outcome = start_run(config(server, options), tmp_path / "run", False)
    assert outcome.summary.done == 4  # versions 0, 1 x languages en, de
    assert any("1. Ich warte ruhig" in p for p in prompts)
    assert any("1. Samen dürfen sich" in p for p in prompts)
    assert any("1. Seeds can take their time" in p for p in prompts)
    points = pd.read_csv(tmp_path / "run" / "data_points.csv")
    assert set(points["language"]) == {"en", "de"} and set(points["version"]) == {"v0", "v1"}


def test_resume_finishes_without_repeating_calls(tmp_path: Path) -> None:
    en, _, grid = write_files(tmp_path)
    options = {"scale_file": [str(en)], "grid": str(grid)}
    with FaultServer(responder=respondent) as server:
        first = start_run(config(server, options), tmp_path / "run", False)
        again = resume_run(tmp_path / "run", False)
    assert first.summary.done == 8 and again.summary.calls_sent == 0


def test_a_run_whose_stored_files_were_edited_is_refused(tmp_path: Path) -> None:
    """The run keeps each file's text and sha256: a store edited by hand (text changed, digest not) is
    refused in one line naming the file, for the grid file as for the scale files."""
    en, _, grid = write_files(tmp_path)
    options = {"scale_file": [str(en)], "grid": str(grid)}
    stored = parse_run_config({"task": "reliability-grid", "options": options}).stored()
    validated = CustomGridTask.validate_options(stored["options"]).model_dump(mode="json")
    for field in ("grid", "scale_file"):
        edited = json.loads(json.dumps(validated))
        target = edited[field][0] if field == "scale_file" else edited[field]
        target["content"] = target["content"].replace("a", "b", 1)
        with pytest.raises(
            ConfigError, match=f"the stored text of file {re.escape(target['path'])} does not"
        ):
            CustomGridTask.validate_options(edited)


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("templates: {a: 'no items here'}\n", "has no $items placeholder"),
        ("templates: {a: '$items $colour'}\n", "unknown placeholder $colour"),
        ("templates: {a: '$items'}\nframings: {f: {points: 3, labels: [a, b]}}\n", "2 labels for 3 points"),
        ("templates: {a: '$items'}\nversions: [4]\n", "grid version 4 is not in the scale files"),
        ("templates: {a: '$items'}\nlanguages: [fr]\n", "grid language 'fr' has no scale file"),
        ("templates: {a: '$items'}\ncolours: [red]\n", "colours"),
        ("templates: {a: {de: '$items'}}\n", "has no text for language 'en'"),
        ("- just a list\n", "a grid file is a mapping"),
        ("templates: [unclosed\n", "invalid YAML"),
    ],
)
def test_bad_grid_files_are_one_line_errors(tmp_path: Path, grid: str, message: str) -> None:
    en, _, path = write_files(tmp_path, grid)
    with pytest.raises((ConfigError, DataError), match=re.escape(message)):
        CustomGridTask(
            parse_run_config(
                {"task": "reliability-grid", "options": {"scale_file": [str(en)], "grid": str(path)}}
            )
        )


def test_scale_files_of_different_instruments_are_refused(tmp_path: Path) -> None:
    en, de, grid = write_files(tmp_path)
    de.write_text(SCALE_DE.replace("reverse: true\n    versions: [Mein", "versions: [Mein"), encoding="utf-8")
    with pytest.raises(ConfigError, match="reverse keys not as in"):
        CustomGridTask(
            parse_run_config(
                {
                    "task": "reliability-grid",
                    "options": {"scale_file": [str(en), str(de)], "grid": str(grid)},
                }
            )
        )
    de.write_text(SCALE_EN, encoding="utf-8")
    with pytest.raises(ConfigError, match="language 'en' is also"):
        CustomGridTask(
            parse_run_config(
                {
                    "task": "reliability-grid",
                    "options": {"scale_file": [str(en), str(de)], "grid": str(grid)},
                }
            )
        )


def test_f_test_on_known_values() -> None:
    frame = pd.DataFrame({"f": ["a", "a", "b", "b"], "x": [1.0, 2.0, 3.0, 4.0]})
    row = factor_f_tests(frame, ["f"], ["x"]).iloc[0]
    # between = 2 * 1 + 2 * 1 = 4 (df 1), within = 0.5 + 0.5 = 1 (df 2): F = 8, eta^2 = 0.8
    assert row["f"] == pytest.approx(8.0) and row["eta_squared"] == pytest.approx(0.8)
    from scipy.stats import f_oneway

    assert row["p"] == pytest.approx(f_oneway([1.0, 2.0], [3.0, 4.0]).pvalue)


def test_cli_runs_the_grid_and_refuses_a_missing_grid(tmp_path: Path) -> None:
    en, _, grid = write_files(tmp_path)
    missing = run_cli("reliability", "grid", "--scale-file", en, "-m", "openai-compatible/x")
    assert missing.returncode == 2 and "--grid" in missing.stderr
    with FaultServer(responder=respondent) as server:
        done = run_cli(
            "reliability",
            "grid",
            "--scale-file",
            en,
            "--grid",
            grid,
            "-m",
            "openai-compatible/scripted",
            "--base-url",
            server.base_url,
            "--no-cache",
            "--no-progress",
            "--out",
            tmp_path / "run",
        )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / "report.md").is_file()
    assert len(pd.read_csv(tmp_path / "run" / "data_points.csv")) == 8


GRID_EMBEDDED = """
templates:
  plain: |
    Rate each statement from $low to $high.
    $levels

    $items

    Reply with one line per statement: number: score
  brief: "$items\\n\\nScore each statement $low-$high, one 'number: score' line each."
personas:
  none: null
  keen: You are a keen gardener.
versions: [0]
languages: [en]
"""


@pytest.mark.model
def test_a_small_grid_on_the_embedded_model(tmp_path: Path) -> None:
    """2 templates x 2 personas on the embedded 0.5B model, one call each: the prompt is answerable."""
    en, _, grid = write_files(tmp_path, GRID_EMBEDDED)
    options = {"scale_file": [str(en)], "grid": str(grid), "max_attempts": 1, "max_tokens": 64}
    config = parse_run_config({"task": "reliability-grid", "options": options})
    outcome = start_run(config, tmp_path / "run", False)
    assert outcome.summary.done == 4 and outcome.summary.calls_sent == 4
    rates = [result["valid_rate"] for result in unit_results(tmp_path / "run").values()]
    assert max(rates) > 0.5  # the 0.5B model gives 'number: score' lines for most statements


def test_a_json_scale_file_gives_the_same_grid_and_versions(tmp_path: Path) -> None:
    en, _, grid = write_files(tmp_path, GRID.replace("versions: [0]\n", ""))
    as_json = tmp_path / "garden.json"
    as_json.write_text(json.dumps(yaml.safe_load(SCALE_EN)), encoding="utf-8")
    tasks = [
        CustomGridTask(
            parse_run_config(
                {"task": "reliability-grid", "options": {"scale_file": [str(f)], "grid": str(grid)}}
            )
        )
        for f in (en, as_json)
    ]
    assert [c.config_id for c in tasks[0].grid] == [c.config_id for c in tasks[1].grid]
    assert len(tasks[0].grid) == 16  # 2 templates x versions v0, v1 x 2 framings x 2 personas
    assert tasks[0].forms["en"].versions == tasks[1].forms["en"].versions
    assert tasks[1].forms["en"].versions[1][4] == "Every tool of mine has its hook."

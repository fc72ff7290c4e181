"""Psychometric quality in the EmotionBench and reliability-grid reports: real runs against the scripted
loopback server, alpha checked against pingouin on the answers read back from the run store."""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pingouin
import pytest
import yaml

from llmpsych.errors import DataError
from llmpsych.instruments.quality import NOT_MEANINGFUL
from llmpsych.reliability.official import load_bfi
from llmpsych.runs import analyze_run, start_run
from llmpsych.runs.store import STORE_FILE
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import unit_results
from test_reliability_grid_custom import GRID_LANGUAGES, RANGE, SCALE_DE, SCALE_EN, STATEMENT, write_files
from test_reliability_grid_custom import config as grid_config
from test_reliability_grid_custom_emotion import SCALE as CALM
from test_reliability_grid_custom_emotion import config as emotion_config
from test_reliability_task import STATEMENT as BFI_STATEMENT
from test_reliability_task import Respondent
from test_reliability_task import config as bfi_config


def _items(text: str) -> dict[str, tuple[int, bool]]:
    """Every wording of a scale file's items (text and versions) -> (index, reverse)."""
    out = {}
    for item in yaml.safe_load(text)["items"]:
        for wording in [item["text"], *item.get("versions", [])]:
            out[wording] = (item["index"], item.get("reverse", False))
    return out


CALM_ITEMS, GARDEN_EN, GARDEN_DE = _items(CALM), _items(SCALE_EN), _items(SCALE_DE)


def latent_answers(
    prompt: str, items: list[tuple[str, int, bool]], low: int, high: int, *, consistent: bool = True
) -> str:
    """One latent value per administration drives every item, plus noise; reversed items answer the
    other way. The generator is seeded by the prompt (item order differs per run), so a run's answers
    do not depend on the order in which requests arrive. ``consistent=False``: every item on its own."""
    rng = random.Random(hashlib.sha256(prompt.encode()).hexdigest())
    middle, latent = (low + high) / 2, rng.gauss(0, 1)
    lines = []
    for number, _item, reverse in items:
        if consistent:
            value = min(high, max(low, round(middle + latent + rng.gauss(0, 0.5))))
        else:
            value = rng.randint(low, high)
        lines.append(f"{number}: {low + high - value if reverse else value}")
    return "\n".join(lines)


def keyed(answers: dict[str, Any], reverse: set[int], low: int, high: int) -> dict[int, float]:
    return {int(k): (low + high - v if int(k) in reverse else v) for k, v in answers.items()}


def pingouin_alpha(rows: list[dict[int, float]], items: list[int]) -> float:
    frame = pd.DataFrame(rows)[items]
    alpha, _ = pingouin.cronbach_alpha(data=frame, nan_policy="listwise")
    return float(alpha)


# -- EmotionBench -------------------------------------------------------------------------------------
def calm_respondent(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    found = re.findall(r"^(\d+)\. (.+)$", last, re.MULTILINE)
    items = [(int(n), *CALM_ITEMS[text.strip()]) for n, text in found]
    prompt = "\n".join(m["content"] for m in body["messages"])
    return latent_answers(prompt, items, 1, 5)


def test_emotionbench_report_has_quality_per_condition(tmp_path: Path, seed_data: Path) -> None:
    scale_file = tmp_path / "calm.yaml"
    scale_file.write_text(CALM, encoding="utf-8")
    options = {"situations_per_factor": 1, "runs": 2, "default_runs": 12}
    with FaultServer(responder=calm_respondent) as server:
        outcome = start_run(emotion_config(server, seed_data, scale_file, **options), tmp_path / "run", False)
    assert outcome.summary.failed == 0
    run = tmp_path / "run"
    quality = pd.read_csv(run / "quality.csv", keep_default_na=False, na_values=[""])
    assert list(quality["condition"])[:2] == ["default", "default"]
    default = quality[quality["condition"] == "default"].set_index("subscale")
    # the default runs, read back from the store, keyed; alpha against pingouin on the same answers
    results = [r for r in unit_results(run).values() if r["kind"] == "default"]
    rows = [keyed(r["answers"], {2}, 1, 5) for r in results]
    assert default.loc["Ease", "n"] == len(rows) == 12
    assert default.loc["Ease", "alpha"] == pytest.approx(pingouin_alpha(rows, [1, 2, 3]), abs=1e-9)
    assert default.loc["Alertness", "alpha"] == pytest.approx(pingouin_alpha(rows, [4, 5]), abs=1e-9)
    assert default.loc["Ease", "alpha"] > 0.5 and default.loc["Ease", "omega"] > 0.5  # the latent shows
    # two items: omega is not identified; each factor has 2 runs: nothing is meaningful there
    assert default.loc["Alertness", "omega_note"].startswith(NOT_MEANINGFUL)
    factors = quality[quality["condition"] != "default"]
    assert len(factors) >= 2 and factors["condition"].str.startswith("evoked: ").all()
    assert (factors["n"] == 2).all() and factors["alpha"].isna().all()
    assert (factors["alpha_note"] == f"{NOT_MEANINGFUL}: n = 2 complete run(s), need 3").all()
    scales = pd.read_csv(run / "quality_scales.csv").set_index("condition")
    assert scales.loc["default", "runs"] == 12 and scales.loc["default", "valid_rate"] == 1
    items = pd.read_csv(run / "quality_items.csv")
    assert set(items["condition"]) == set(quality["condition"])
    assert len(items) == 5 * quality["condition"].nunique()
    report = (run / "report.md").read_text(encoding="utf-8")
    section = report[report.index("## Psychometric quality") :]
    assert "**default** is the runs without a situation" in section
    assert f"{NOT_MEANINGFUL}: n = 2 complete run(s), need 3" in section
    assert "| default" in section and "| evoked: " in section


# -- the reliability grid -----------------------------------------------------------------------------
def garden_respondent(body: dict[str, Any]) -> str:
    """Consistent in English; every item on its own in German (a translation whose alpha drops)."""
    prompt = body["messages"][-1]["content"]
    low, high = map(int, RANGE.search(prompt).groups())  # type: ignore[union-attr]
    german = "Aussagen" in prompt
    wordings = GARDEN_DE if german else GARDEN_EN
    items = [(int(n), *wordings[text.strip()]) for n, text in STATEMENT.findall(prompt)]
    full = "\n".join(m["content"] for m in body["messages"])
    return latent_answers(full, items, low, high, consistent=not german)


def test_grid_report_has_quality_overall_and_per_language(tmp_path: Path) -> None:
    en, de, grid = write_files(tmp_path, GRID_LANGUAGES)
    options = {"scale_file": [str(en), str(de)], "grid": str(grid), "runs": 8}
    with FaultServer(responder=garden_respondent) as server:
        outcome = start_run(grid_config(server, options), tmp_path / "run", False)
    assert outcome.summary.done == 32 and outcome.summary.failed == 0  # versions 2 x languages 2 x 8
    run = tmp_path / "run"
    results = list(unit_results(run).values())
    rows = [keyed(r["answers"], {2, 5}, 1, 5) for r in results]
    quality = pd.read_csv(run / "quality.csv").set_index("subscale")
    assert quality.loc["Patience", "n"] == 32
    assert quality.loc["Patience", "alpha"] == pytest.approx(pingouin_alpha(rows, [1, 2, 3]), abs=1e-9)
    assert quality.loc["Tidiness", "alpha"] == pytest.approx(pingouin_alpha(rows, [4, 5, 6]), abs=1e-9)
    levels = pd.read_csv(run / "quality_levels.csv")
    assert set(levels["factor"]) == {"language", "version"}
    by_language = levels[levels["factor"] == "language"].set_index(["level", "subscale"])
    for language in ("en", "de"):
        part = [keyed(r["answers"], {2, 5}, 1, 5) for r in results if r["config"]["language"] == language]
        assert by_language.loc[(language, "Patience"), "n"] == len(part) == 16
        expected = pingouin_alpha(part, [1, 2, 3])
        assert by_language.loc[(language, "Patience"), "alpha"] == pytest.approx(expected, abs=1e-9)
    # the English items move together, the German ones do not
    assert by_language.loc[("en", "Patience"), "alpha"] > 0.8
    assert by_language.loc[("de", "Patience"), "alpha"] < by_language.loc[("en", "Patience"), "alpha"] - 0.4
    report = (run / "report.md").read_text(encoding="utf-8")
    section = report[report.index("## Psychometric quality") :]
    assert "the data points are the respondents" in section and "Per level of each factor" in section
    assert "| language | en" in section and re.search(r"\| +32 \|", section)


def test_grid_levels_with_two_points_are_not_meaningful(tmp_path: Path) -> None:
    en, de, grid = write_files(tmp_path, GRID_LANGUAGES)
    options = {"scale_files": [str(en), str(de)], "grid": str(grid)}
    with FaultServer(responder=garden_respondent) as server:
        start_run(grid_config(server, options), tmp_path / "run", False)
    levels = pd.read_csv(tmp_path / "run" / "quality_levels.csv")
    assert (levels["n"] == 2).all() and levels["alpha"].isna().all()
    note = f"{NOT_MEANINGFUL}: n = 2 complete data point(s), need 3"
    assert (levels["alpha_note"] == note).all()
    quality = pd.read_csv(tmp_path / "run" / "quality.csv")
    assert (quality["n"] == 4).all() and quality["alpha"].notna().all()
    assert note in (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    # a store edited by hand: an answer out of the scale's range, then an item the scale does not have
    unit_id, result = next(iter(unit_results(tmp_path / "run").items()))
    for answers, message in (
        ({"1": 9.0}, "item 1 answer '9.0' is not a number from 1 to 5"),
        ({"x": 2.0}, "answer to an unknown item 'x'"),
    ):
        with sqlite3.connect(tmp_path / "run" / STORE_FILE) as db:
            stored = json.dumps({**result, "answers": answers})
            db.execute("UPDATE units SET result = ? WHERE unit_id = ?", (stored, unit_id))
        with pytest.raises(DataError, match=f"run store, unit {unit_id}: {re.escape(message)}"):
            analyze_run(tmp_path / "run")


# -- the BFI grid (reliability run) -------------------------------------------------------------------
class LatentBFI(Respondent):
    """The BFI respondent of test_reliability_task, answering from one latent value per configuration
    (seeded by the configuration's first prompt, so both chunks share it) plus per-item noise."""

    def __init__(self, seed_data: Path) -> None:
        super().__init__(seed_data)
        self.reverse = set(load_bfi(seed_data).scale("En", "v1").reverse_indices)

    def __call__(self, body: dict[str, Any]) -> str:
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        latent = random.Random(hashlib.sha256(first.encode()).hexdigest()).gauss(0, 1)

        def level(item: int) -> int:
            noise = random.Random(f"{first}:{item}").gauss(0, 0.5)
            value = min(5, max(1, round(3 + latent + noise)))
            return 6 - value if item in self.reverse else value

        prompt = body["messages"][-1]["content"]
        label_for = {}
        texts = sorted(self.level_of_text, key=len, reverse=True)
        for match in re.finditer(rf"(\S+) {self.denotes} ", prompt):
            text = next(t for t in texts if prompt[match.end() :].startswith(t))
            label_for[self.level_of_text[text]] = match.group(1)
        answers = {
            n: label_for[level(self.item_of_text[t.strip()])] for n, t in BFI_STATEMENT.findall(prompt)
        }
        return json.dumps(answers)


def test_bfi_grid_report_has_quality_per_dimension(tmp_path: Path, seed_data: Path) -> None:
    options = {"languages": ["En"], "templates": ["t1", "t3"], "versions": ["v1", "v4"]}
    with FaultServer(responder=LatentBFI(seed_data)) as server:
        outcome = start_run(bfi_config(server, seed_data, **options), tmp_path / "r", False)
    assert outcome.summary.done == 40 and outcome.summary.failed == 0
    scale = load_bfi(seed_data).scale("En", "v1")
    reverse = set(scale.reverse_indices)
    rows = [keyed(r["answers"], reverse, 1, 5) for r in unit_results(tmp_path / "r").values()]
    quality = pd.read_csv(tmp_path / "r" / "quality.csv").set_index("subscale")
    assert list(quality.index) == [s.name for s in scale.subscales] and (quality["n"] == 40).all()
    for sub in scale.subscales:
        expected = pingouin_alpha(rows, list(sub.item_indices))
        assert quality.loc[sub.name, "alpha"] == pytest.approx(expected, abs=1e-9)
    assert (quality["alpha"] > 0.8).all()
    levels = pd.read_csv(tmp_path / "r" / "quality_levels.csv")
    assert set(levels["factor"]) == {"template", "version", "label", "order"}  # one language: not a factor
    report = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "## Psychometric quality" in report and "quality_levels.csv" in report

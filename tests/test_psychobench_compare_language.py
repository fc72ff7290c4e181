"""``psychobench compare`` of runs whose scales differ in language: each column says its language (a scale
and its translation, run separately by one model, are two columns), and the settings table lists it;
runs in one language are labelled as before."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import llmpsych
from llmpsych import cli
from llmpsych.psychobench.compare import run_labels
from llmpsych.runs.languages import config_language
from llmpsych.testing.fault_server import FaultServer
from test_own_instruments import TIDY_YAML, scripted

#: TIDY in German, our own translation of the test scale (same items, keys and subscales).
TIDY_DE = (
    TIDY_YAML.replace("language: en", "language: de\ntranslated_from: en")
    .replace("My desk is clear at the end of the day.", "Abends ist mein Schreibtisch leer.")
    .replace("I often hunt for a pen I just had.", '"Oft suche ich einen Stift, den ich eben noch hatte."')
    .replace("Every folder I own has a label.", "Jeder meiner Ordner ist beschriftet.")
    .replace(
        "I write the week's errands down on Monday.", "Am Montag schreibe ich die Besorgungen der Woche auf."
    )
    .replace("A calendar reminder rarely surprises me.", "Eine Kalendererinnerung überrascht mich selten.")
    .replace(
        "I decide what to do next only once I am done.",
        '"Was ich als Nächstes tue, entscheide ich erst danach."',
    )
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pb-lang")
    (root / "tidy.yaml").write_text(TIDY_YAML, encoding="utf-8")
    (root / "tidy.de.yaml").write_text(TIDY_DE, encoding="utf-8")
    cli._mount_subcommands()
    made = {}
    with FaultServer(responder=scripted) as server:
        for name, scale in (("en", "tidy.yaml"), ("en2", "tidy.yaml"), ("de", "tidy.de.yaml")):
            result = CliRunner().invoke(
                cli.app,
                ["psychobench", "run", "-m", "openai-compatible/a", "--scale-file", str(root / scale),
                 "--runs", "3", "--base-url", server.base_url, "--out", str(root / name), "--no-cache",
                 "--no-progress"],
            )  # fmt: skip
            assert result.exit_code == 0, result.output
            made[name] = root / name / "openai-compatible_a"  # a run per model in the sweep folder
    return made


def test_columns_say_the_language_when_the_runs_differ_in_it(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = CliRunner().invoke(
        cli.app, ["psychobench", "compare", str(runs["de"]), str(runs["en"]), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    tidy = pd.read_csv(out / "comparison.csv")
    assert list(dict.fromkeys(tidy["model"])) == ["openai-compatible/a · de", "openai-compatible/a · en"]
    report = (out / "comparison.md").read_text(encoding="utf-8")
    assert "| openai-compatible/a · de " in report and "| openai-compatible/a · en " in report
    settings = report.split("## Settings", 1)[1]
    assert "language" in settings.splitlines()[4] and "| de " in settings  # the settings table's column
    assert llmpsych.load_runs([runs["de"], runs["en"]]).runs["language"].tolist() == ["de", "en"]


def test_runs_in_one_language_are_labelled_as_before(runs: dict[str, Path]) -> None:
    labels = run_labels([runs["en"], runs["en2"]])  # the second gets its folder's name, as before
    assert labels == ["openai-compatible/a", "openai-compatible/a (openai-compatible_a)"]
    result = CliRunner().invoke(cli.app, ["psychobench", "compare", str(runs["en"]), str(runs["en2"])])
    assert result.exit_code == 0, result.output
    assert "·" not in result.output


def test_a_psychobench_runs_language_is_that_of_its_scales(tmp_path: Path) -> None:
    german = tmp_path / "tidy.de.yaml"
    german.write_text(TIDY_DE, encoding="utf-8")
    unnamed = tmp_path / "tidy.none.yaml"
    unnamed.write_text(TIDY_YAML.replace("language: en\n", ""), encoding="utf-8")

    def language(**options: object) -> str | None:
        return config_language({"task": "psychobench", "options": options})

    assert language(scale=["BFI"]) == "en"  # official scales are English
    assert language() == "en"
    assert language(scale_file=[str(german)]) == "de"
    assert language(scale=["BFI", "TIDY"], scale_file=[str(german)]) == "de, en"
    assert language(scale_file=[str(unnamed)]) is None  # the file names none
    assert language(runs="many") is None  # options the task refuses: not known
    assert config_language({"task": "echo", "options": {}}) is None

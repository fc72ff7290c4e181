"""The translation kit (``llmpsych.instruments.translate``) takes the texts a package registers with it: a
source defined here, in a test module, is translated end to end (``llmpsych run --task translate -O ...``)
against a scripted loopback server, with its own kinds, reply check, placeholders and translated file; a
half-written source is refused where it is registered."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel, ConfigDict, model_validator
from typer.testing import CliRunner

import llmpsych.translate  # noqa: F401 - the task as runs find it: every benchmark's texts registered
from llmpsych import cli
from llmpsych.clikit import check_options
from llmpsych.errors import ConfigError
from llmpsych.instruments.translate import (
    Finished,
    SourceText,
    TranslatableSource,
    TranslateTask,
    register_source,
    unregister_source,
)
from llmpsych.runs import read_run
from llmpsych.testing.fault_server import FaultServer

RIDDLES = {
    "language": "en",
    "riddles": {
        "keys": "What has keys but opens no lock?",
        "river": "What runs but never walks, [[name]]?",
        "echo": "What answers without a mouth?",
    },
}


class RiddleBook(BaseModel):
    """A riddle book as the run config stores it (given as a path, read once)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    sha256: str
    language: str | None = None
    riddles: dict[str, str]

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if isinstance(value, str):
            raw = Path(value).read_bytes()
            return {"path": value, "sha256": hashlib.sha256(raw).hexdigest(), **json.loads(raw)}
        return value


class RiddleTexts(TranslatableSource[RiddleBook]):
    """Riddles: each a text; a translation must still end with a question mark and keep its
    ``[[name]]`` fill-ins; the translated book is ``riddles.json``."""

    option = "riddle_book"
    value_type = RiddleBook
    what = "a riddle book"
    description = "a riddle book (JSON) to translate"
    kinds = {"riddle": "riddle (a question with a trick answer)"}
    placeholders = re.compile(r"\[\[\w+\]\]")

    def texts(self, value: RiddleBook, *, paraphrase: bool) -> list[SourceText]:
        return [SourceText("riddles", key, "riddle", text) for key, text in value.riddles.items()]

    def language(self, value: RiddleBook, group: str | None) -> str | None:
        return value.language

    def check(self, original: str, candidate: str) -> str | None:
        return None if candidate.endswith("?") else "a riddle ends with a question mark"

    def write(self, value: RiddleBook, done: Finished) -> Path:
        out = done.run_dir / "riddles.json"
        book = {
            "language": done.options.to,
            "translated_from": done.task.source_language(None),
            "model": done.record.model,
            "riddles": {key: r.text for (_, key), r in done.results.items()},
        }
        out.write_text(json.dumps(book), encoding="utf-8")
        return out


@pytest.fixture
def riddles() -> Iterator[RiddleTexts]:
    source = RiddleTexts()
    register_source(source)
    yield source
    unregister_source(source.option)


def riddler(body: dict[str, Any]) -> str:
    """Into German: ``DE`` + the riddle, except that the first answer for "keys" drops its question mark
    and the first for "river" fills in its placeholder; a re-ask gets the right reply. Back: the riddle."""
    messages = body["messages"]
    first = messages[1]["content"]
    riddle = first.split("\n\n", 1)[1]
    if "into German" not in first:
        return riddle.removeprefix("DE ")
    if not messages[-1]["content"].startswith("That reply cannot be used"):
        if "keys" in riddle:
            return "DE " + riddle.rstrip("?")
        if "[[name]]" in riddle:
            return "DE " + riddle.replace("[[name]]", "Anna")
    return "DE " + riddle


def test_a_source_registered_from_a_test_module_is_translated_end_to_end(
    riddles: RiddleTexts, tmp_path: Path
) -> None:
    book = tmp_path / "book.json"
    book.write_text(json.dumps(RIDDLES), encoding="utf-8")
    out = tmp_path / "run"
    assert "riddle_book" in TranslateTask.Options.model_fields  # its option joined the task's options
    cli._mount_subcommands()
    with FaultServer(responder=riddler) as server:
        result = CliRunner().invoke(
            cli.app,
            ["run", "--task", "translate", "-O", f"riddle_book={book}", "-O", "to=de"]
            + ["-m", "openai-compatible/t", "--base-url", server.base_url, "--out", str(out)]
            + ["--no-progress", "--no-cache"],
        )
    assert result.exit_code == 0, (result.output, result.exception)

    written = json.loads((out / "riddles.json").read_text(encoding="utf-8"))
    assert written == {
        "language": "de",
        "translated_from": "en",
        "model": "openai-compatible/t",
        "riddles": {key: f"DE {text}" for key, text in RIDDLES["riddles"].items()},
    }
    run = read_run(out)
    assert sorted(u.unit_id for u in run.units) == ["riddles/echo", "riddles/keys", "riddles/river"]
    assert run.config.options == {"riddle_book": str(book), "to": "de"}
    first = sorted(run.calls.of_unit("riddles/echo"), key=lambda c: c.seq)[0].request["messages"]
    assert first[1]["content"].startswith(
        "Translate this questionnaire riddle (a question with a trick answer) from English into German."
    )
    reasks = {
        unit: sorted(run.calls.of_unit(f"riddles/{unit}"), key=lambda c: c.seq)[1].request["messages"][-1]
        for unit in ("keys", "river")
    }
    assert "a riddle ends with a question mark" in reasks["keys"]["content"]  # the source's check
    assert "placeholders changed ([[name]])" in reasks["river"]["content"]  # the source's placeholders
    table = pd.read_csv(out / "agreement.csv")
    assert table.set_index("text")["asks"].to_dict() == {"keys": 3, "river": 3, "echo": 2}
    assert set(table["scale"]) == {"riddles"} and set(table["agreement"]) == {1.0}
    summary = json.loads((out / "translation.json").read_text(encoding="utf-8"))
    assert summary["failed"] == [] and summary["file"] == str(out / "riddles.json")
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "llmpsych translation report" in report and "`riddles.json` (in the run folder)" in report


def test_a_source_is_refused_where_it_is_registered_and_gone_when_unregistered(tmp_path: Path) -> None:
    """A half-written source is one error line where it is registered, and leaves nothing behind."""

    class Clash(RiddleTexts):
        option = "to"  # an option of every translation

    class Taken(RiddleTexts):
        option = "situations_file"  # EmotionBench's

    before = list(TranslateTask.Options.model_fields)
    with pytest.raises(ConfigError, match="'to' is an option of every translation"):
        register_source(Clash())
    with pytest.raises(ConfigError, match="is not a TranslatableSource"):
        register_source(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'situations_file' is already registered by .*SituationTexts"):
        register_source(Taken())
    assert list(TranslateTask.Options.model_fields) == before  # nothing half-registered
    book = tmp_path / "book.json"
    book.write_text(json.dumps(RIDDLES), encoding="utf-8")
    register_source(RiddleTexts())
    try:
        check_options("translate", {"riddle_book": str(book), "to": "de"})
    finally:
        unregister_source("riddle_book")
    with pytest.raises(ConfigError, match="unknown option 'riddle_book' for task 'translate'"):
        check_options("translate", {"riddle_book": str(book), "to": "de"})
    # the built-in sources are still there, in their order, each once
    assert list(TranslateTask.Options.model_fields)[:3] == ["scale_file", "situations_file", "game_templates"]


def test_a_new_process_reads_every_benchmark_translation_without_its_command(tmp_path: Path) -> None:
    """A resume (``llmpsych run --resume``, ``resume_run``, a Ray actor) validates a stored translate config
    in a process that imported no benchmark command: the task as runs find it registers every benchmark's
    texts itself, so a stored situations or template translation is read as it was written."""
    import subprocess
    import sys

    situations = tmp_path / "s.json"
    situations.write_text(
        json.dumps({"emotions": [{"name": "Anger", "factors": [{"name": "Q", "scenarios": ["A queue."]}]}]}),
        encoding="utf-8",
    )
    code = (
        "import sys\n"
        "from llmpsych.runs.task import task_class\n"
        "task = task_class('translate')\n"
        f"a = task.validate_options({{'situations_file': {str(situations)!r}, 'to': 'de',"
        " 'source_language': 'en'})\n"
        "b = task.validate_options({'game_templates': ['guessing'], 'to': 'de'})\n"
        "print(a.given()[1].situations(), sorted(b.given()[1].templates))\n"
        "print(sorted(m for m in sys.modules if m.endswith('.cli')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[('Anger-1/s01', 'A queue.')] ['guessing']", "[]"]


def test_the_situations_report_names_a_flag_emotionbench_run_takes(tmp_path: Path) -> None:
    """The report of a situations translation says how to use the new file: the flag it names must be one
    ``emotionbench run`` takes (it named ``--situations``, which that command refuses)."""
    source = tmp_path / "s.json"
    source.write_text(
        json.dumps(
            {"emotions": [{"name": "Fear", "factors": [{"name": "N", "scenarios": ["A dark hall."]}]}]}
        ),
        encoding="utf-8",
    )
    cli._mount_subcommands()
    with FaultServer(responder=lambda body: body["messages"][1]["content"].split("\n\n", 1)[1]) as server:
        result = CliRunner().invoke(
            cli.app,
            ["emotionbench", "translate", str(source), "--to", "de", "--source-language", "en"]
            + ["-m", "openai-compatible/t", "--base-url", server.base_url, "--out", str(tmp_path / "run")]
            + ["--no-progress", "--no-cache"],
        )
    assert result.exit_code == 0, (result.output, result.exception)
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    [named] = re.findall(r"`llmpsych emotionbench run (--[\w-]+)`", report)
    help_text = CliRunner().invoke(cli.app, ["emotionbench", "run", "--help"], env={"COLUMNS": "200"}).output
    assert re.search(rf"{named}\s", help_text), named

"""``llmpsych scales translate``: translation, back-translation, paraphrases and hostile replies.

The scale (DESK) is written here, in our own words. Runs go through the real CLI against the loopback
scripted server, whose responder "translates" into German by prefixing ``DE`` and back by removing it,
and answers some texts with the kinds of replies small models give.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.instruments import load_scale_file
from llmpsych.instruments.translate import agreement, clean_reply
from llmpsych.runs import resume_run
from llmpsych.testing.fault_server import FaultServer

DESK_YAML = """\
llmpsych_scale: 1
name: DESK
title: Desk habits
language: en
response:
  min: 1
  max: 5
  labels: {1: not like me, 5: very like me}
scoring: AVG
instructions: Rate each statement from 1 to 5.
items:
  - {index: 1, text: My desk is clear at the end of the day.}
  - {index: 2, text: I often hunt for a pen I just had., reverse: true}
  - {index: 3, text: Every folder I own has a label.}
  - {index: 4, text: I sort my mail the day it comes.}
subscales:
  - name: Order
    items: [1, 2, 3]
    norms:
      - {group: Pilot, mean: 3.1, sd: 0.8, n: 40, citation: invented for llmpsych's tests}
  - name: Mail
    items: [4]
"""


def _source(message: str) -> str:
    return message.split("\n\n", 1)[1].split("\n\nIt must also differ", 1)[0]


def scripted(body: dict) -> str:
    """A translator with habits: item 2 comes with a preface, numbering, quotes and a note; item 3 is
    first an empty reply, then fine when re-asked; "mail" is always ten times too long; the back-
    translation of the title loses a word (low agreement). Paraphrases add "Truly," then "Really,"."""
    messages = body["messages"]
    last = messages[-1]["content"]
    if "cannot be used" in last:
        first = messages[1]["content"]
        if "mail" in first:
            return "Brief " * 60
        return "DE " + _source(first) if "into German" in first else _source(first).removeprefix("DE ")
    text = _source(last)
    if last.startswith("Write one new wording"):
        return ("Truly, " if "differ from" not in last else "Really, ") + text
    if "into German" in last:
        if "hunt" in text:
            return f'Here is the translation:\n1. "DE {text}"\nNote: an informal register.'
        if "folder" in text:
            return "   "
        if "mail" in text:
            return "Brief " * 60
        return f"DE {text}"
    back = text.removeprefix("DE ")
    return "Habits" if back == "Desk habits" else back


@pytest.fixture(scope="module")
def app():
    cli._mount_subcommands()
    return cli.app


@pytest.fixture(scope="module")
def server():
    with FaultServer(responder=scripted) as s:
        yield s


def desk_file(folder: Path, text: str = DESK_YAML) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "desk.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def translate(app, server, *args: str):
    return CliRunner().invoke(
        app,
        ["scales", "translate", *args, "-m", "openai-compatible/scripted", "--base-url", server.base_url]
        + ["--no-progress", "--no-cache"],
    )


# -- pure cores ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Mein Tisch ist leer.", "Mein Tisch ist leer."),
        ('  "Mein Tisch ist leer."  ', "Mein Tisch ist leer."),
        ("Here is the translation:\n1. «Mein Tisch ist leer.»\n(Note: formal)", "Mein Tisch ist leer."),
        ("```\n- Mein Tisch ist leer.\n```", "Mein Tisch ist leer."),
        ("2) „Mein Tisch ist leer.“", "Mein Tisch ist leer."),
    ],
)
def test_clean_reply_keeps_the_text(reply: str, expected: str) -> None:
    assert clean_reply(reply, "My desk is empty.") == (expected, None)


def test_clean_reply_marks_empty_and_overlong_replies_invalid() -> None:
    source = "My desk is empty."  # 17 characters: the limit is 4 x 17 + 40 = 108
    assert clean_reply("", source) == (None, "empty reply")
    assert clean_reply('""\n', source) == (None, "empty reply")
    assert clean_reply("Translation:", source)[0] == "Translation:"  # a lone line is the text
    assert clean_reply("x" * 108, source)[0] == "x" * 108
    text, reason = clean_reply("x" * 109, source)
    assert text is None and reason is not None and "109 characters" in reason
    # a source that is itself numbered or quoted keeps its marker and quotes
    assert clean_reply('1. "Yes"', '1. "Yes"') == ('1. "Yes"', None)


def test_clean_reply_keeps_placeholders() -> None:
    source = "You are player !<INPUT 0>! of {n}. Say {}."
    assert clean_reply("Du bist Spieler !<INPUT 0>! von {n}. Sag {}.", source)[1] is None
    text, reason = clean_reply("Du bist Spieler 0 von {n}. Sag {}.", source)
    assert text is None and reason is not None and "placeholders changed (!<INPUT 0>!)" in reason
    assert clean_reply("Sag {} {} {n} !<INPUT 0>!.", source)[1] == (
        "placeholders changed ({}): keep them exactly as in the source"
    )


def test_agreement_is_a_character_trigram_dice() -> None:
    assert agreement("My desk is clear.", "my DESK is clear") == 1.0  # case and punctuation ignored
    assert agreement("abc", "xyz") == 0.0
    assert agreement("", "") == 1.0
    # " ab", "ab ", by hand: " abc " has {" ab","abc","bc "}, " abd " has {" ab","abd","bd "}: 2*1/6
    assert agreement("abc", "abd") == pytest.approx(1 / 3)
    assert agreement("Straße", "STRASSE") == 1.0  # casefolding


# -- the command ----------------------------------------------------------------------------------------
def test_translation_writes_a_valid_file_with_back_translations(app, server, tmp_path: Path) -> None:
    text = DESK_YAML.replace("  - {index: 4, text: I sort my mail the day it comes.}\n", "").replace(
        "  - name: Mail\n    items: [4]\n", ""
    )
    source = desk_file(tmp_path / "mine", text)
    out, copy = tmp_path / "run", tmp_path / "desk.de.yaml"
    result = translate(app, server, str(source), "--to", "de", "--out", str(out), "--out-file", str(copy))
    assert result.exit_code == 0, result.output
    written = out / "desk.de.yaml"
    assert written.read_bytes() == copy.read_bytes()
    [scale] = load_scale_file(written)
    [original] = load_scale_file(source)
    # the hostile replies were cleaned (item 2) or re-asked (item 3)
    assert [i.text for i in scale.items] == [f"DE {i.text}" for i in original.items]
    assert [i.back_translation for i in scale.items] == [i.text for i in original.items]
    assert scale.item_indices == original.item_indices and scale.reverse_indices == (2,)
    assert scale.title == "DE Desk habits" and scale.instructions == "DE Rate each statement from 1 to 5."
    assert dict(scale.level_labels) == {1: "DE not like me", 5: "DE very like me"}
    assert scale.language == "de" and scale.translated_from == "en"
    [norm] = scale.subscales[0].norms
    assert (norm.mean, norm.sd, norm.n, norm.language) == (3.1, 0.8, 40, "en")
    record = scale.translation
    assert record is not None and record.mode == "translate" and record.model == "openai-compatible/scripted"
    assert record.back_model is None and record.source_file == "desk.yaml"
    assert record.back_translations["title"] == "Habits"
    assert CliRunner().invoke(app, ["scales", "validate", str(written)]).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["data"] == {str(source.resolve()): record.source_sha256}  # the source's checksum

    frame = pd.read_csv(out / "agreement.csv").set_index("text")
    assert frame.loc["item 2", "asks"] == 2 and frame.loc["item 3", "asks"] == 3  # item 3 was re-asked
    assert frame.loc["item 3", "rejected"] == "empty reply"
    assert frame.loc["title", "agreement"] == pytest.approx(agreement("Desk habits", "Habits"))
    report = (out / "report.md").read_text()
    lowest = report.split("review these first")[1]
    assert lowest.index("| title") < lowest.index("| item 1")  # the lowest agreement is listed first
    assert (out / "report.html").is_file()
    assert "Translated file:" in result.output and "review first: title" in result.output


def test_a_text_without_usable_reply_fails_the_command_naming_it(app, server, tmp_path: Path) -> None:
    source = desk_file(tmp_path)
    out = tmp_path / "run"
    result = translate(app, server, str(source), "--to", "de", "--out", str(out))
    assert result.exit_code == 1
    assert "DESK/item-4" in result.output and "no usable reply after 3 asks" in result.output
    assert not (out / "desk.de.yaml").exists()  # no partial scale file
    summary = json.loads((out / "translation.json").read_text())
    assert summary["failed"] == ["DESK/item-4"] and summary["file"] is None
    assert "Failed texts" in (out / "report.md").read_text()
    # a resume asks the failed text again (the scripted reply is still too long)
    assert resume_run(out, False).summary.failed == 1


def test_back_model_is_its_own_role(app, server, tmp_path: Path) -> None:
    from llmpsych.runs import read_run

    source = desk_file(tmp_path, DESK_YAML.replace("language: en\n", ""))
    out = tmp_path / "run"
    # --from: the old spelling of --source-language, accepted for one release with one line naming the new
    result = translate(app, server, str(source), "--to", "de", "--from", "en", "--out", str(out))
    assert result.exit_code == 1  # item 4 again; the rest translated
    assert "note: `--from` is now `--source-language`" in result.stderr
    assert read_run(out).config.options["source_language"] == "en"
    back = tmp_path / "back"
    result = translate(
        app, server, str(source), "--to", "de", "--source-language", "en",
        "--back-model", "openai-compatible/other", "--out", str(back), "-O", "max_reasks=0",
    )  # fmt: skip
    assert "is now" not in result.stderr
    assert result.exit_code == 1
    summary = json.loads((back / "translation.json").read_text())
    assert summary["failed"] == ["DESK/item-3", "DESK/item-4"]  # no re-ask: the empty reply fails too
    record = read_run(back)
    assert {c["role"] for c in record.calls.frame().to_dict("records")} == {"subject", "back"}


def test_paraphrase_adds_item_versions(app, server, tmp_path: Path) -> None:
    source = desk_file(tmp_path)
    out = tmp_path / "run"
    result = translate(app, server, str(source), "--paraphrase", "2", "--out", str(out))
    assert result.exit_code == 0, result.output
    [scale] = load_scale_file(out / "desk.paraphrased.yaml")
    first = scale.items[0]
    assert first.text == "My desk is clear at the end of the day."
    assert first.versions == (f"Truly, {first.text}", f"Really, {first.text}")
    assert scale.language == "en" and scale.translation is not None and scale.translation.mode == "paraphrase"
    assert len(pd.read_csv(out / "agreement.csv")) == 4  # items only


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give either --to LANGUAGE or --paraphrase N"),
        (["--to", "de", "--paraphrase", "2"], "give either --to LANGUAGE or --paraphrase N"),
        (["--to", "de", "--source-language", "en", "-O", "max_reasks=-1"], "max_reasks"),
    ],
)
def test_bad_invocations_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    source = desk_file(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "llmpsych",
            "scales",
            "translate",
            str(source),
            *args,
            "--out",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()


def test_a_file_without_language_needs_from(tmp_path: Path) -> None:
    source = desk_file(tmp_path, DESK_YAML.replace("language: en\n", ""))
    done = subprocess.run(
        [sys.executable, "-m", "llmpsych", "scales", "translate", str(source), "--to", "de"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "names no language" in done.stderr and "--source-language" in done.stderr


# -- the optional native fields ---------------------------------------------------------------------------
VERSIONED = DESK_YAML.replace(
    "  - {index: 1, text: My desk is clear at the end of the day.}",
    "  - {index: 1, text: My desk is clear at the end of the day., versions: [At night my desk is bare.]}",
)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_new_fields_round_trip(tmp_path: Path, suffix: str) -> None:
    from llmpsych.instruments import write_scale_file

    text = VERSIONED.replace("n: 40, citation", "n: 40, language: en, citation").replace(
        "language: en\nresponse", "language: de\ntranslated_from: en\nresponse"
    )
    text += (
        "translation: {mode: translate, model: m, back_model: b, date: '2026-01-02',\n"
        "  source_file: desk.yaml, source_sha256: abc, measure: dice,\n"
        "  back_translations: {title: Desk habits}}\n"
    )
    [scale] = load_scale_file(desk_file(tmp_path, text))
    assert scale.items[0].versions == ("At night my desk is bare.",) and scale.items[1].versions == ()
    assert scale.translated_from == "en" and scale.subscales[0].norms[0].language == "en"
    assert scale.translation is not None and scale.translation.back_translations == {"title": "Desk habits"}
    again = write_scale_file([scale], tmp_path / f"copy{suffix}")
    [copy] = load_scale_file(again)
    assert copy == scale.__class__(**{**scale.__dict__, "origin": str(again)})


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("versions: [At night my desk is bare.]", "versions: At night", "'versions' must be a list of texts"),
        ("versions: [At night my desk is bare.]", "versions: ['', x]", "version #1 must be non-empty text"),
        ("versions: [At night my desk is bare.]", "back_translation: 3", "'back_translation' must be text"),
        ("n: 40, citation", "n: 40, language: 7, citation", "'language' must be text"),
        ("scoring: AVG", "scoring: AVG\ntranslation: {mode: guess}", "translation: missing field 'model'"),
        (
            "scoring: AVG",
            "scoring: AVG\ntranslation: {mode: guess, model: m, date: d, source_file: f, source_sha256: s,"
            " measure: x}",
            "'mode' must be translate or paraphrase",
        ),
    ],
)
def test_new_fields_are_checked(tmp_path: Path, old: str, new: str, message: str) -> None:
    from llmpsych.errors import DataError

    path = desk_file(tmp_path, VERSIONED.replace(old, new))
    with pytest.raises(DataError, match=re.escape(message)):
        load_scale_file(path)


def _answers(body: dict) -> str:
    """PsychoBench's side of the scripted server: every listed statement answered 3; translation requests
    go to :func:`scripted`."""
    last = body["messages"][-1]["content"]
    if last.startswith(("Translate this", "Write one new wording")) or "cannot be used" in last:
        return scripted(body)
    return "\n".join(f"{n}: 3" for n in re.findall(r"^(\d+)\. ", last, re.MULTILINE))


def test_a_run_with_a_scale_and_its_translation_groups_by_language(app, tmp_path: Path) -> None:
    source = desk_file(
        tmp_path, DESK_YAML.replace("I sort my mail the day it comes.", "I answer letters at once.")
    )
    out = tmp_path / "tr"
    with FaultServer(responder=_answers) as server:
        result = translate(app, server, str(source), "--to", "de", "--name-suffix", "-de", "--out", str(out))
        assert result.exit_code == 0, result.output
        [german] = load_scale_file(out / "desk.de.yaml")
        assert german.name == "DESK-de" and german.language == "de"
        run = tmp_path / "run"
        result = CliRunner().invoke(
            app,
            ["psychobench", "run", "--scale-file", str(source), "--scale-file", str(out / "desk.de.yaml")]
            + ["-m", "openai-compatible/scripted", "--base-url", server.base_url, "--runs", "2"]
            + ["--out", str(run), "--no-cache", "--no-progress"],
        )
    assert result.exit_code == 0, result.output
    [run_dir] = [d for d in run.iterdir() if d.is_dir()]
    summary = pd.read_csv(run_dir / "summary.csv")
    assert summary[["scale", "language"]].drop_duplicates().values.tolist() == [
        ["DESK", "en"],
        ["DESK-de", "de"],
    ]
    assert (summary["mean"] == 3).all()
    report = (run_dir / "report.md").read_text()
    by_language = report.split("## Scores by language")[1].split("\n## ")[0]
    assert by_language.index("| de ") < by_language.index("| en ")
    # one language only: no such section
    assert "Scores by language" not in _single_language_report(app, tmp_path, source)


def _single_language_report(app, tmp_path: Path, source: Path) -> str:
    run = tmp_path / "single"
    with FaultServer(responder=_answers) as server:
        result = CliRunner().invoke(
            app,
            ["psychobench", "run", "--scale-file", str(source), "-m", "openai-compatible/scripted"]
            + [
                "--base-url",
                server.base_url,
                "--runs",
                "2",
                "--out",
                str(run),
                "--no-cache",
                "--no-progress",
            ],
        )
    assert result.exit_code == 0, result.output
    [run_dir] = [d for d in run.iterdir() if d.is_dir()]
    assert pd.read_csv(run_dir / "summary.csv")["language"].unique().tolist() == ["en"]
    return (run_dir / "report.md").read_text()


# -- EmotionBench situations ------------------------------------------------------------------------------
SITUATIONS = {
    "emotions": [
        {
            "name": "Anger",
            "factors": [
                {
                    "name": "Queues",
                    "scenarios": ["Someone cuts in line ahead of you.", "  ", "Your bus leaves early."],
                }
            ],
        },
        {"name": "Fear", "factors": [{"name": "Night", "scenarios": ["A door creaks in an empty house."]}]},
    ]
}


def test_situations_translate_into_a_file_emotionbench_reads(app, server, tmp_path: Path) -> None:
    from llmpsych.emotion.situations import load_situations_file

    source = tmp_path / "mine.json"
    source.write_text(json.dumps(SITUATIONS), encoding="utf-8")
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "emotionbench",
            "translate",
            str(source),
            "--to",
            "de",
            "--source-language",
            "en",
            "-m",
            "openai-compatible/s",
        ]
        + ["--base-url", server.base_url, "--out", str(out), "--no-progress", "--no-cache"],
    )
    assert result.exit_code == 0, result.output
    written = out / "mine.de.json"
    data = json.loads(written.read_text())
    assert data["language"] == "de" and data["translated_from"] == "en"
    assert (
        data["translation"]["model"] == "openai-compatible/s" and data["translation"]["mode"] == "translate"
    )
    queues = data["emotions"][0]["factors"][0]
    assert queues["scenarios"] == ["DE Someone cuts in line ahead of you.", "  ", "DE Your bus leaves early."]
    assert queues["back_translations"] == ["Someone cuts in line ahead of you.", "", "Your bus leaves early."]
    loaded = load_situations_file(written, check_counts=False)
    assert [s.key for f in loaded.factors for s in f.situations] == [
        "Anger-1/s01",
        "Anger-1/s03",
        "Fear-1/s01",
    ]
    assert pd.read_csv(out / "agreement.csv")["text"].tolist() == ["Anger-1/s01", "Anger-1/s03", "Fear-1/s01"]
    assert "situations" in (out / "report.md").read_text()


def test_situations_need_a_source_language_and_json(tmp_path: Path) -> None:
    source = tmp_path / "mine.json"
    source.write_text(json.dumps(SITUATIONS), encoding="utf-8")
    csv_file = tmp_path / "mine.csv"
    csv_file.write_text("Anger-1\nQueues\nx\n", encoding="utf-8")
    for path, message in ((source, "names no language"), (csv_file, "only the JSON form")):
        done = subprocess.run(
            [sys.executable, "-m", "llmpsych", "emotionbench", "translate", str(path), "--to", "de"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr


def test_the_own_instruments_page_example_translates_as_written(app, server, tmp_path: Path) -> None:
    """docs/own-instruments.md writes tidy.yaml (no ``language:``) and translates it: the page's own
    command, with the model pointed at the scripted server, must work as it stands."""
    page = (Path(__file__).parents[1] / "docs" / "own-instruments.md").read_text(encoding="utf-8")
    scale = page.split("cat > tidy.yaml <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    assert "language:" not in scale
    (tmp_path / "tidy.yaml").write_text(scale + "\n", encoding="utf-8")
    command = next(line for line in page.splitlines() if line.startswith("llmpsych scales translate tidy"))
    args = command.split()[3:]  # after "llmpsych scales translate"
    model = args.index("-m")
    del args[model : model + 2]  # the page's model; translate() names the scripted one
    args = [str(tmp_path / a) if a.startswith("tidy") else a for a in args]
    result = translate(app, server, *args, "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, (result.output, result.exception)
    written = load_scale_file(tmp_path / "tidy.de.yaml")
    assert written[0].language == "de"

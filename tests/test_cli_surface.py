"""One declared surface: each concept has one spelling on the command line, and docs/cli.md lists every
command as the CLI defines it.

Before, ``llmpsych --help`` listed ``analyze`` and ``report`` (one verb), every GAMA-Bench command twice
(``games`` and ``gamabench``), and flags spelled repetitions, the scale(s), the output and the scoring
method in eleven ways. An old spelling still works for one release, hidden, with one line on stderr.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.cli_docs import cli_root
from llmpsych.clinames import (
    CONCEPTS,
    RETIRED_COMMANDS,
    RETIRED_FLAGS,
    RETIRED_FLAGS_OF,
    TABLE_END,
    TABLE_START,
    command_table,
    documented_table,
    visible_commands,
)
from llmpsych.errors import LlmpsychError

ROOT = Path(__file__).resolve().parents[1]

#: Every other spelling each concept had (measured on the CLI before this change).
OTHER_SPELLINGS: dict[str, set[str]] = {
    "repetitions": {"--repeats"},
    "the scale(s)": {"--scales"},
    "the output folder": {"--dest"},
    "the scoring method": {"--scoring", "--mode", "--logprobs"},
    "a scale file": {"--file"},
}


def visible_flags(command: Any) -> set[str]:
    return {d for p in command.params if p.param_type_name == "option" and not p.hidden for d in p.opts}


@pytest.fixture(scope="module")
def root() -> Any:
    return cli_root()


def test_docs_table_equals_the_cli(root: Any) -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert documented_table(page) == command_table(root), "run `python -m llmpsych.cli_docs docs/cli.md`"


def test_no_visible_command_or_flag_uses_an_old_spelling(root: Any) -> None:
    visible = dict(visible_commands(root))
    assert not set(visible) & set(RETIRED_COMMANDS)
    assert {"report", "games"}.isdisjoint(root.commands[name].name for name in visible if " " not in name)
    groups = {name for name, c in root.commands.items() if getattr(c, "commands", None) and not c.hidden}
    for new in RETIRED_COMMANDS.values():
        assert new in visible or new in groups, new
    stale = {
        (path, flag)
        for path, command in visible.items()
        for flag in visible_flags(command) & set(RETIRED_FLAGS)
    }
    assert not stale, sorted(stale)
    for path, flags in RETIRED_FLAGS_OF.items():
        for old in (flag for flag in flags if " " not in flag):
            assert old not in visible_flags(visible[path]), (path, old)


def test_each_concept_has_one_spelling(root: Any) -> None:
    for concept, one in CONCEPTS.items():
        spelled = {
            (path, flag)
            for path, command in visible_commands(root)
            for flag in visible_flags(command) & OTHER_SPELLINGS[concept]
        }
        assert not spelled, (concept, one, sorted(spelled))


def test_every_old_command_is_still_there_hidden(root: Any) -> None:
    for old in RETIRED_COMMANDS:
        group = root
        for word in old.split():
            group = group.commands[word]
        assert group.hidden, old


def test_no_group_is_listed_twice_in_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "llmpsych", "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")},
        check=True,
    )
    names = [
        line.split()[1]
        for line in result.stdout.splitlines()
        if line.startswith("│ ") and len(line.split()) > 2
    ]
    assert "gamabench" in names and "analyze" in names
    assert "games" not in names and "report" not in names
    assert len(names) == len(set(names)), names
    groups = [c for c in cli_root().commands.values() if getattr(c, "commands", None) and not c.hidden]
    listings = [tuple(sorted(c.commands)) for c in groups]
    assert len(listings) == len(set(listings))  # no group is another's alias


# -- old spellings: accepted for one release, with one line on stderr -------------------------------------
runner = CliRunner()


def invoke(*args: str | Path) -> Any:
    cli._mount_subcommands()
    return runner.invoke(cli.app, [str(a) for a in args], env={"COLUMNS": "200"})


def notices(result: Any) -> list[str]:
    return [line for line in result.stderr.splitlines() if " is now " in line]


@pytest.mark.parametrize(
    ("old", "new"),
    [(["games", "presets"], ["gamabench", "presets"])],
)
def test_an_old_group_name_does_what_the_new_one_does_and_says_so(old: list[str], new: list[str]) -> None:
    before, after = invoke(*old), invoke(*new)
    assert before.exit_code == after.exit_code == 0, before.output
    assert before.stdout == after.stdout
    assert notices(before) == [
        "note: `llmpsych games` is now `llmpsych gamabench` (the old spelling goes in the next release)"
    ]
    assert notices(after) == []


def test_report_is_analyze_with_a_notice(tmp_path: Path) -> None:
    missing = tmp_path / "no-run"
    old, new = invoke("report", missing), invoke("analyze", missing)
    assert isinstance(old.exception, LlmpsychError) and str(old.exception) == str(new.exception)
    assert notices(old) == [
        "note: `llmpsych report` is now `llmpsych analyze` (the old spelling goes in the next release)"
    ]
    assert notices(new) == [] and not missing.exists()


def test_old_flag_spellings_work_with_one_line_each(tmp_path: Path, seed_data: Path) -> None:
    folder = (
        seed_data / "GAMABench" / "raw_results" / "guessing_game" / "gemini-1.5-pro_guessing_game_v1_1.json"
    )
    old = invoke("gamabench", "rescore", folder, "--scoring", "arxiv_v4", "--json")
    new = invoke("gamabench", "rescore", folder, "--method", "arxiv_v4", "--json")
    assert old.exit_code == new.exit_code == 0, old.output
    assert old.stdout == new.stdout
    assert notices(old) == ["note: `--scoring` is now `--method` (the old spelling goes in the next release)"]
    # a bad value is named by its new spelling; both spellings at odds is one line naming the one to keep
    bad = invoke("gamabench", "leaderboard", tmp_path, "--scoring", "v9")
    assert isinstance(bad.exception, LlmpsychError) and "unknown --method 'v9'" in str(bad.exception)
    both = invoke("gamabench", "rescore", folder, "--method", "arxiv_v4", "--scoring", "thesis")
    assert isinstance(both.exception, LlmpsychError) and "give --method only" in str(both.exception)
    # --dest is --data-dir; --scales is --scale; --repeats is --runs (each says so before its own error)
    fetched = invoke("data", "fetch", "NoSuchBench", "--dest", tmp_path)
    assert fetched.exit_code != 0 and notices(fetched)[0].startswith("note: `--dest` is now `--data-dir`")
    answers = tmp_path / "none.csv"
    imported = invoke(
        "psychobench",
        "import-answers",
        answers,
        "--scales",
        "BFI",
        "--data-dir",
        seed_data,
        "--out",
        tmp_path / "r",
    )
    assert notices(imported)[0].startswith("note: `--scales` is now `--scale`")
    assert imported.exit_code != 0 and "none.csv" in str(imported.exception)
    grid = invoke("reliability", "grid", "--repeats", "2")
    assert notices(grid)[0].startswith("note: `--repeats` is now `--runs`")
    assert isinstance(grid.exception, LlmpsychError) and "--scale-file" in str(grid.exception)


def test_scale_is_repeatable_and_takes_the_old_comma_list(tmp_path: Path, seed_data: Path) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_text("scale,run,item,answer\nNOPE,1,1,3\n")
    for flags in (["--scale", "BFI", "--scale", "EPQ-R"], ["--scales", "BFI,EPQ-R"]):
        result = invoke(
            "psychobench", "import-answers", answers, *flags, "--data-dir", seed_data, "--out", tmp_path / "r"
        )
        # the answers name a scale that is not among the two given: the error lists exactly those two
        assert isinstance(result.exception, LlmpsychError), result.output
        assert "BFI" in str(result.exception) and "EPQ-R" in str(result.exception), str(result.exception)
        assert not (tmp_path / "r").exists()


def test_reliability_method_is_the_scoring_method_and_the_t_test_is_test(tmp_path: Path) -> None:
    """``--method`` named the t-test of ``reliability rescore``; a t-test given there is taken as ``--test``
    (checked before any file is read), and any other value must be a scoring method."""
    missing = tmp_path / "no-save.json"
    old = invoke("reliability", "rescore", missing, "--method", "welch")
    assert notices(old) == [
        "note: `--method welch` is now `--test welch` (the old spelling goes in the next release)"
    ]
    assert isinstance(old.exception, LlmpsychError) and "no-save.json" in str(old.exception)
    clash = invoke("reliability", "rescore", missing, "--method", "welch", "--test", "student")
    assert isinstance(clash.exception, LlmpsychError) and "give --test only" in str(clash.exception)
    scoring = invoke("reliability", "rescore", missing, "--method", "nonsense")
    assert isinstance(scoring.exception, LlmpsychError)
    assert "--method must be text or expected" in str(scoring.exception)
    compared = invoke("reliability", "compare", missing, missing, "--method", "welch")
    assert notices(compared)[0].startswith("note: `--method` is now `--test`")


def test_emotionbench_compare_out_named_a_markdown_file(tmp_path: Path, seed_data: Path) -> None:
    """``--out`` is the folder of comparison.md now (tests/test_emotion_task.py); a path ending in .md
    is still that file for one release, with a notice."""
    released = seed_data / "EmotionBench/results/PANAS_Test/gpt-3.5-turbo-PANAS-testing.csv"
    args = ["emotionbench", "compare", released, "--data-dir", seed_data, "--no-humans"]
    old = invoke(*args, "--out", tmp_path / "table.md")
    assert old.exit_code == 0, old.output
    assert (tmp_path / "table.md").read_text().startswith("# EmotionBench comparison")
    assert notices(old)[0].startswith("note: `--out FILE.md` is now `--out FOLDER")


# -- the docs show the spellings the CLI shows ------------------------------------------------------------
#: Words of a sentence that names an old spelling on purpose ("formerly `score-logs`, still accepted").
OLD_CONTEXT = re.compile(r"\b(old|older|formerly|still|is now|retired)\b", re.IGNORECASE)


def documented_commands(text: str) -> Iterator[tuple[int, str, str]]:
    """Each ``llmpsych ...`` command line of a Markdown page (in a code block, or an inline code span that
    may wrap), as (line, command, the text around it)."""
    for block in re.finditer(r"```[^\n]*\n(.*?)```", text, re.S):
        first = text.count("\n", 0, block.start()) + 2
        for k, line in enumerate(block.group(1).replace("\\\n", " ").splitlines()):
            line = line.strip().removeprefix("$ ")
            if line.startswith("llmpsych "):
                yield first + k, line, ""
    prose = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for span in re.finditer(r"`(llmpsych [^`]+)`", prose):
        around = prose[max(0, span.start() - 150) : span.end() + 150]
        yield prose.count("\n", 0, span.start()) + 1, " ".join(span.group(1).split()), around


def stale_spellings(root: Any, command: str, around: str) -> list[str]:
    """What a documented command line says that ``--help`` does not show: a hidden (old) command, a flag
    its command does not have, or an old flag kept hidden (unless the sentence says it is old)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    command_obj, path = root, []
    for word in words[1:]:
        subs = getattr(command_obj, "commands", None)
        if not subs or word not in subs:
            break
        command_obj = subs[word]
        path.append(word)
        if command_obj.hidden and not OLD_CONTEXT.search(around):
            return [f"`llmpsych {' '.join(path)}` is an old spelling"]
    flags = {
        flag: param
        for param in command_obj.params
        if param.param_type_name == "option"
        for flag in [*param.opts, *param.secondary_opts]
    }
    found = []
    for word in words[1 + len(path) :]:
        if word == "--":
            break
        flag = word.split("=", 1)[0]
        if not flag.startswith("--") or flag == "--help":
            continue
        if flag not in flags:
            found.append(f"`llmpsych {' '.join(path)}` has no {flag}")
        elif flags[flag].hidden and not OLD_CONTEXT.search(around):
            found.append(f"{flag} is an old spelling on `llmpsych {' '.join(path)}`")
    return found


def test_the_docs_use_the_spellings_the_cli_shows(root: Any) -> None:
    """Every ``llmpsych`` command line in README.md and docs/ uses commands and flags ``--help`` shows
    (docs/scales.md told readers to run ``emotionbench run --situations FILE``, refused since the flag is
    ``--situations-file``); an old spelling appears only in a sentence that says it is old."""
    assert stale_spellings(root, "llmpsych emotionbench run --situations s.json", "") == [
        "`llmpsych emotionbench run` has no --situations"
    ]
    assert stale_spellings(root, "llmpsych report RUN", "") == ["`llmpsych report` is an old spelling"]
    assert stale_spellings(root, "llmpsych report RUN", "its old name") == []
    found = []
    for page in sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md"]):
        text = page.read_text(encoding="utf-8")
        if TABLE_START in text:  # the generated table lists the old spellings on purpose
            start, end = text.index(TABLE_START), text.index(TABLE_END)
            text = text[:start] + "\n" * text[start:end].count("\n") + text[end:]
        for line, command, around in documented_commands(text):
            found += [f"{page.relative_to(ROOT)}:{line}: {s}" for s in stale_spellings(root, command, around)]
    assert not found, "\n".join(found)


def test_scales_show_takes_the_scale_file_as_scale_file(tmp_path: Path) -> None:
    """A scale file is ``--scale-file`` on every command that reads one (``scales show`` alone said
    ``--file``); ``--file`` still works for one release, with one line naming the new spelling."""
    from test_instruments_native import EXAMPLE

    path = tmp_path / "scale.yaml"
    path.write_text(EXAMPLE, encoding="utf-8")
    new = invoke("scales", "show", "SUNNY2", "--scale-file", path)
    old = invoke("scales", "show", "SUNNY2", "--file", path)
    assert new.exit_code == old.exit_code == 0, new.output
    assert new.stdout == old.stdout and "Sunshine" not in new.stdout and "Weather mood" in new.stdout
    assert notices(new) == []
    assert notices(old) == [
        "note: `--file` is now `--scale-file` (the old spelling goes in the next release)"
    ]

"""Every shell command the documentation shows works as written.

Each fenced ``bash`` block of README.md and docs/*.md is read. Every ``llmpsych`` command in it must name
an existing command path with options that command has (checked on the CLI's own definition). A block
preceded by the marker ``<!-- ci -->`` is cheap (no model call, or one against a scripted server) and is
run as written from a scratch folder, with ``../shared/seed-data`` pointing at the seed data and
``llmpsych`` at this checkout; each of its commands must exit 0.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import typer.main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SEED_DATA = ROOT.parent / "shared" / "seed-data"
CI_MARKER = "<!-- ci -->"
FENCE = re.compile(r"^(`{3,})(bash|sh|shell)\s*$")
#: Where the documentation points at the seed data (relative to the repository root, as the pages say).
DOC_SEED_DATA = "../shared/seed-data"


@dataclass(frozen=True)
class Block:
    """One fenced shell block: its page, first line number and text; ``ci``: run it in CI."""

    page: Path
    line: int
    text: str
    ci: bool

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def shell_blocks(page: Path) -> list[Block]:
    """The fenced bash blocks of a page."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i].strip())
        if not match:
            i += 1
            continue
        fence, start = match.group(1), i + 1
        end = next(j for j in range(start, len(lines)) if lines[j].strip() == fence)
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        blocks.append(Block(page, start, "\n".join(lines[start:end]), before == CI_MARKER))
        i = end + 1
    return blocks


def commands(text: str) -> list[list[str]]:
    """The simple commands of a block: continuations joined, comments dropped, split at ``&&``, ``||``,
    ``|``, ``;`` and ``&``; leading ``VAR=value`` assignments removed."""
    joined = re.sub(r"<<-?\s*'?(\w+)'?\n.*?\n\1$", "", text, flags=re.S | re.M)  # heredoc bodies
    joined = re.sub(r"\\\n", " ", joined)
    out: list[list[str]] = []
    pending = ""
    for line in joined.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        lexer = shlex.shlex(pending, posix=True, punctuation_chars="|&;")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError:  # a quotation that goes on over the next line
            continue
        pending = ""
        current: list[str] = []
        for token in tokens:
            if token and set(token) <= set("|&;"):
                out.append(current)
                current = []
            else:
                current.append(token)
        out.append(current)
    assert not pending, f"unclosed quotation in {text!r}"
    cleaned = []
    for words in out:
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        if words:
            cleaned.append(words)
    return cleaned


ALL_BLOCKS = [block for page in PAGES for block in shell_blocks(page)]


@lru_cache(maxsize=1)
def _cli() -> Any:  # noqa: ANN401 - the click group typer builds (typer may bring its own click)
    from llmpsych import cli

    cli._mount_subcommands()
    return typer.main.get_command(cli.app)


def _is_group(command: Any) -> bool:  # noqa: ANN401
    return hasattr(command, "get_command") and hasattr(command, "list_commands")


def check_llmpsych_command(root: Any, words: list[str]) -> None:  # noqa: ANN401
    """Raise AssertionError unless ``llmpsych WORDS`` names a command with these options."""
    command = root
    path = ["llmpsych"]
    rest = words[1:]
    while _is_group(command) and rest and not rest[0].startswith("-"):
        sub = command.get_command(None, rest[0])
        if sub is None:
            break  # an argument of a group that runs by itself, e.g. `llmpsych web RUNS_DIR`
        command, path, rest = sub, [*path, rest[0]], rest[1:]
    if _is_group(command) and not command.invoke_without_command and rest and not rest[0].startswith("-"):
        raise AssertionError(f"`{' '.join(path)}` has no sub-command {rest[0]!r}")
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    options |= {"--help"}
    if path == ["llmpsych"]:
        options |= {"--debug", "--version"}
    for word in rest:
        if word.startswith("-") and word != "-":
            name = word.split("=", 1)[0]
            assert name in options, f"`{' '.join(path)}` has no option {name} (it has {sorted(options)})"


def test_the_documentation_has_shell_commands_and_ci_blocks() -> None:
    assert len(ALL_BLOCKS) > 40
    assert sum(b.ci for b in ALL_BLOCKS) >= 5


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: b.name)
def test_every_documented_command_exists_with_its_options(block: Block) -> None:
    root = _cli()
    for words in commands(block.text):
        if words[0] == "llmpsych":
            check_llmpsych_command(root, words)


def test_a_wrong_option_or_command_is_caught() -> None:
    """The check itself can fail."""
    root = _cli()
    check_llmpsych_command(root, ["llmpsych", "run", "--task", "echo", "-O", "units=1"])
    with pytest.raises(AssertionError, match="no option --tsk"):
        check_llmpsych_command(root, ["llmpsych", "run", "--tsk", "echo"])
    with pytest.raises(AssertionError, match="no sub-command"):
        check_llmpsych_command(root, ["llmpsych", "models", "lst"])


CI_BLOCKS = [block for block in ALL_BLOCKS if block.ci]


@pytest.mark.parametrize("block", CI_BLOCKS, ids=lambda b: b.name)
def test_ci_blocks_run_as_written(block: Block, tmp_path: Path) -> None:
    """The block runs from a scratch folder; the seed data stands where the pages say it is."""
    assert SEED_DATA.is_dir(), f"the seed data is missing: {SEED_DATA}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = shlex.quote(sys.executable)
    for name, command in (("llmpsych", f"{python} -m llmpsych"), ("python", python)):
        shim = bin_dir / name  # this checkout's interpreter, whatever is first on PATH
        shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        shim.chmod(0o755)
    work = tmp_path / "repo"
    work.mkdir()
    (tmp_path / "shared").symlink_to(SEED_DATA.parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
        "COLUMNS": "200",
        "LLMPSYCH_CACHE_DIR": str(tmp_path / "cache"),  # no block marked ci uses an embedded model
        "LLMPSYCH_DATA_DIR": str(SEED_DATA),
    }
    script = f"set -e\n{block.text}\n"
    log = tmp_path / "output.txt"
    with log.open("w") as out:  # a file, not a pipe: a server the block starts with `&` keeps it open
        process = subprocess.Popen(
            ["bash", "-c", script], cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            code = process.wait(timeout=600)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)  # the block's background servers
    assert code == 0, f"{block.name}\n{block.text}\n---\n{log.read_text()}"


#: References to documents users do not have: the project's internal specs and the line numbers of its
#: seed texts (``000:1819``).
PRIVATE_REFERENCE = re.compile(
    r"spec §|\bspecs/|\b00\d:\d{2,5}\b|\bthe spec (notes|predicts|leaves|recommends)|where the spec\b"
)


@pytest.mark.parametrize(
    "page",
    PAGES,
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_page_cites_documents_users_do_not_have(page: Path) -> None:
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE_REFERENCE.search(line)
    ]
    assert not found, "\n".join(found)

"""The package stays typed: ``mypy --strict`` (configured in ``pyproject.toml``) finds no error in any of
``llmpsych``, and the contexts code receives conform to :class:`llmpsych.models.ChatContext`."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFORMING = """
from llmpsych.games.engine import OfflineContext, TableContext
from llmpsych.models import ChatContext
from llmpsych.psychobench.cipher import CipherContext
from llmpsych.runs.context import UnitContext


def unit(ctx: UnitContext) -> ChatContext:
    return ctx


def cipher(ctx: CipherContext) -> ChatContext:
    return ctx


def offline(ctx: OfflineContext) -> ChatContext:
    return ctx


def unit_table(ctx: UnitContext) -> TableContext:
    return ctx


def offline_table(ctx: OfflineContext) -> TableContext:
    return ctx
"""

NOT_A_CONTEXT = """
import random
from typing import Any

from llmpsych.models import ChatContext


class RandomOnly:
    unit_id = "u"
    clients: dict[str, Any] = {}

    def rng(self, *labels: Any) -> random.Random:
        return random.Random(0)


def only_random(ctx: RandomOnly) -> ChatContext:
    return ctx
"""


def _mypy(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_mypy_is_clean_on_the_whole_package() -> None:
    """``python -m mypy`` with the ``[tool.mypy]`` settings: strict, on every module of ``llmpsych``.

    One uncached run over the ~210 modules takes 11 s on an idle core (8 s for the six lower layers alone),
    ~30 s on a busy machine, so it runs once."""
    result = _mypy("--config-file", str(ROOT / "pyproject.toml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def _check_snippet(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\nfollow_imports = silent\nignore_missing_imports = True\n")
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}  # this tree, not an installed llmpsych
    return _mypy("--config-file", str(config), "-c", code, cwd=tmp_path, env=env)


def test_the_run_context_and_its_wrappers_are_chat_contexts(tmp_path: Path) -> None:
    result = _check_snippet(CONFORMING, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_object_without_chat_is_not_a_chat_context(tmp_path: Path) -> None:
    result = _check_snippet(NOT_A_CONTEXT, tmp_path)
    assert result.returncode == 1 and '"RandomOnly", expected "ChatContext"' in result.stdout, result.stdout


def test_the_package_ships_its_type_marker() -> None:
    """``py.typed`` exists and is package data, so checkers use llmpsych's own annotations."""
    assert (ROOT / "src" / "llmpsych" / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_pandas_is_checked_against_its_stubs(tmp_path: Path) -> None:
    """pandas ships no annotations; with ``pandas-stubs`` (the dev extra) a frame is a ``DataFrame`` to the
    checker, not ``Any``, and the package config exempts no pandas module (it hid 44 errors in 13 files)."""
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n")
    result = _mypy(
        "--config-file", str(config), "-c", "import pandas as pd\nrow: str = pd.DataFrame()\n", cwd=tmp_path
    )
    assert 'Incompatible types in assignment (expression has type "DataFrame"' in result.stdout, result.stdout
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    exempt = [m for o in settings["tool"]["mypy"]["overrides"] for m in o["module"] if m.startswith("pandas")]
    assert exempt == []
    assert any(d.startswith("pandas-stubs==") for d in settings["project"]["optional-dependencies"]["dev"])

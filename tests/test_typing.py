"""The typed lower layers stay typed: ``mypy`` (configured in ``pyproject.toml``) finds no error in them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean_on_the_typed_packages() -> None:
    """``python -m mypy`` with the ``[tool.mypy]`` settings (strict, the ``packages`` listed there)."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_the_package_ships_its_type_marker() -> None:
    """``py.typed`` exists and is package data, so checkers use llmpsych's own annotations."""
    assert (ROOT / "src" / "llmpsych" / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")

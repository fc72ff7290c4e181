"""Shared fixtures: an isolated cache per session, the official seed data, a fault server."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# One cache per test session: the embedded model is assembled and verified once, no user state is touched.
_SESSION_CACHE = Path(
    os.environ.get("LLMPSYCH_TEST_CACHE_DIR") or tempfile.mkdtemp(prefix="llmpsych-test-cache-")
)
os.environ["LLMPSYCH_CACHE_DIR"] = str(_SESSION_CACHE)
os.environ["LLMPSYCH_CONFIG"] = str(_SESSION_CACHE / "no-user-config.toml")
os.environ.pop("LLMPSYCH_DATA_DIR", None)

REPO = Path(__file__).resolve().parents[1]
SEED_DATA = (REPO.parent / "shared" / "seed-data").resolve()


@pytest.fixture(scope="session")
def seed_data() -> Path:
    """The authors' released data; CI always has it, so its absence is a failure."""
    if not SEED_DATA.is_dir():
        pytest.fail(f"official seed data not found at {SEED_DATA} (../shared/seed-data beside the repo)")
    return SEED_DATA


@pytest.fixture(scope="session")
def bubblewrap() -> None:
    """The sandbox's backend; CI installs it (.ci/run), so its absence is a failure, not a skip."""
    from llmpsych.sandbox import INSTALL_HINT, available

    if not available():
        pytest.fail(f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")


@pytest.fixture
def fault_server() -> Iterator[object]:
    """A clean fault-injecting server (set ``.rates`` to inject faults)."""
    from llmpsych.testing.fault_server import FaultServer

    with FaultServer() as server:
        yield server


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private user config file; write TOML into it before use."""
    from llmpsych import config

    path = tmp_path / "config.toml"
    monkeypatch.setenv("LLMPSYCH_CONFIG", str(path))
    config.user_config.cache_clear()
    yield path
    config.user_config.cache_clear()

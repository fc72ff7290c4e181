"""Shared fixtures: an isolated cache per session, the official seed data, a fault server."""

from __future__ import annotations

import os
import signal
import sys
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


def _mount_subcommands_once() -> None:
    """Make ``llmpsych.cli._mount_subcommands`` keep one entry per group name when tests call it again.

    Each call appends every sub-command group to ``cli.app`` again (a CLI process calls it once; tests
    call it in fixtures and helpers, ~100 times in one suite run), and typer rebuilds every appended copy
    on each ``CliRunner().invoke``: by the end of the suite an invoke built thousands of identical groups
    (0.07 s per copy of all groups). Typer keys a group's commands by name, the first position with the
    last value, so keeping exactly that entry per name builds the same click command."""
    from llmpsych import cli

    mount = cli._mount_subcommands
    if getattr(mount, "keeps_one_per_name", False):
        return

    def mount_once(argv: list[str] | None = None) -> None:
        mount(argv)
        groups: dict[str | None, object] = {}
        for info in cli.app.registered_groups:
            groups[info.name] = info  # a name's first position, its last entry (as typer builds it)
        cli.app.registered_groups[:] = list(groups.values())  # type: ignore[arg-type]

    mount_once.keeps_one_per_name = True  # type: ignore[attr-defined]
    cli._mount_subcommands = mount_once  # type: ignore[assignment]


_mount_subcommands_once()


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


#: The browser the web pages' tests drive (playwright never downloads one); .ci/run installs it.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_INSTALL = "sudo apt-get install chromium"


def in_ci() -> bool:
    """True in CI (``CI=true``, as .ci/run and the common CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def need_chromium(path: Path = CHROMIUM) -> str:
    """``path`` when it is there; otherwise a failure in CI (which installs it, so its absence is a
    broken CI) and, on a researcher's machine, a skip that says why and how to install it."""
    if path.is_file():
        return str(path)
    reason = (
        f"{path} is missing: the browser tests drive a real Chromium there (playwright never downloads "
        f"one); install it with `{CHROMIUM_INSTALL}`"
    )
    if in_ci():
        pytest.fail(f"{reason} (CI=true: .ci/run installs it, so this is a failure, not a skip)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of the Chromium the browser tests launch (:func:`need_chromium`)."""
    return need_chromium()


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


# -- the nightly set ----------------------------------------------------------------------------------
# Tests marked ``nightly`` are the slowest end-to-end checks whose logic is also covered, more cheaply, by
# tests that run on every push (README: "Tests"). They are deselected unless ``--nightly`` is given, so the
# push suite stays inside CI's 40 minutes on 2 cores; ``python -m pytest -q --nightly`` runs everything.
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--nightly",
        action="store_true",
        default=False,
        help="Also run the slow nightly set (tests marked nightly); without it they are deselected.",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--nightly"):
        return
    nightly = [item for item in items if item.get_closest_marker("nightly") is not None]
    if nightly:
        config.hook.pytest_deselected(items=nightly)
        items[:] = [item for item in items if item.get_closest_marker("nightly") is None]


from ray_cluster import ray_cluster  # noqa: E402, F401 - one real multi-node Ray cluster per session


@pytest.fixture(autouse=True)
def _no_host_outlives_its_test() -> Iterator[None]:
    """End every ``gamabench host`` process a test started and left running (a failed assertion between
    start and stop), so none outlives the test run."""
    yield
    hosts = sys.modules.get("web_host")
    if hosts is not None:
        for host in hosts.Host.started:
            host.close()
        hosts.Host.started.clear()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Ctrl-C reaches the processes the tests start, however the suite itself was started.

    A shell without job control starts a background command (``pytest ... &``) with SIGINT ignored, and
    an ignored signal stays ignored in every child, across exec: the tests that press Ctrl-C at a run, a
    sweep or a hosted game then see it do nothing (found when the suite was started in the background).
    llmpsych leaves an inherited SIG_IGN alone, as Unix programs do; the suite restores the default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

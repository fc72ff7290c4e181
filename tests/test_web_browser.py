"""`llmpsych web` in a real browser (Debian's Chromium driven by playwright) against real runs: the runs
page, a run's report and transcripts, the compare page of PsychoBench and GAMA-Bench runs, and a run
executing in a second process while its page shows the progress changing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultRates, FaultServer
from llmpsych.web.catalog import _run_id
from test_games_engine_runs import scripted
from test_web_security import HOSTILE, WebServer

pytestmark = pytest.mark.usefixtures("chromium")  # a missing browser: skipped before any setup (CI: fails)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def scores_responder(body: dict) -> str:
    """Every listed item answered (varies with item and model), after a line of hostile markup."""
    low, high = (int(x) for x in re.findall(r"from (\d+) to (\d+)", body["messages"][0]["content"])[-1])
    listed = re.findall(r"^(\d+)\. ", body["messages"][-1]["content"], flags=re.MULTILINE)
    shift = 3 if body["model"] == "high" else 0
    span = high - low + 1
    lines = [f"{item}: {low + (p + shift + int(item)) % span}" for p, item in enumerate(listed)]
    return HOSTILE + "\nHere are my scores:\n" + "\n".join(lines)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, seed_data: Path) -> Path:
    root = tmp_path_factory.mktemp("runs")
    with FaultServer(responder=scores_responder) as server:
        for model in ("low", "high"):
            config = {
                "task": "psychobench",
                "model": f"openai-compatible/{model}",
                "base_url": server.base_url,
                "cache": False,
                "data_dir": str(seed_data),
                "options": {"scale": ["DTDD"], "runs": 2},
            }
            start_run(parse_run_config(config), root / f"pb-{model}", False)
    with FaultServer(responder=scripted) as server:
        for model in ("a", "b"):
            config = {
                "task": "gamabench",
                "model": f"openai-compatible/{model}",
                "base_url": server.base_url,
                "cache": False,
                "options": {"players": 3, "rounds": 2, "game": ["guessing"], "runs": 2},
            }
            start_run(parse_run_config(config), root / f"games-{model}", False)
    return root


@pytest.fixture(scope="module")
def web(runs: Path) -> Iterator[WebServer]:
    server = WebServer(runs)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: ``$LLMPSYCH_SCREENSHOTS`` or a temporary folder (never the repository)."""
    folder = os.environ.get("LLMPSYCH_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def page(web: WebServer, browser, tmp_path: Path) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(web.url)  # the printed URL: the token becomes a cookie and leaves the address bar
    assert page.url == web.base + "/"
    yield page
    assert dialogs == []  # no model-written script ever ran
    context.close()


def test_runs_page_lists_every_run_with_its_state_and_filters(page, web: WebServer, shots: Path) -> None:
    page.screenshot(path=str(shots / "runs.png"))
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == 4
    text = page.locator("table.runs").inner_text()
    for expected in (
        "pb-low",
        "pb-high",
        "games-a",
        "games-b",
        "psychobench",
        "openai-compatible/high",
        "done",
    ):
        assert expected in text
    assert "100.0% (24/24)" in text  # DTDD: 12 items x 2 runs, every answer valid
    page.select_option("select[name=task]", "gamabench")
    page.click("form.filters button")
    assert page.locator("table.runs tbody tr").count() == 2
    assert "task=gamabench" in page.url
    page.goto(web.base + "/?sort=run&order=asc")
    labels = page.locator("table.runs tbody tr td:nth-child(2) a").all_inner_texts()
    assert labels == sorted(labels)


def test_run_page_shows_report_config_manifest_files_and_units(page, web: WebServer, shots: Path) -> None:
    page.goto(f"{web.base}/run/{_run_id(0, 'games-a')}")
    page.screenshot(path=str(shots / "run.png"))
    page.goto(f"{web.base}/run/{_run_id(0, 'pb-low')}")
    report = page.locator("#report .report")
    assert "PsychoBench report" in report.inner_text() and "Machiavellianism" in report.inner_text()
    images = report.locator("img")
    assert images.count() >= 1
    assert images.first.evaluate("img => img.naturalWidth") > 100  # the chart PNG loaded from the run
    assert '"task": "psychobench"' in page.locator("#config pre").first.inner_text()
    page.click("#config summary:text-is('Manifest')")
    assert "llmpsych_version" in page.locator("#config pre").nth(1).inner_text()
    assert "DTDD-run001" in page.locator("table.units").inner_text()


def test_unit_page_is_a_readable_chat_with_per_call_figures(page, web: WebServer, shots: Path) -> None:
    page.goto(f"{web.base}/run/{_run_id(0, 'pb-low')}")
    page.click("text=DTDD-run001")
    thread = page.locator(".thread").first
    assert thread.locator(".msg-user").count() >= 1 and thread.locator(".msg-assistant").count() >= 1
    reply = thread.locator(".msg-assistant .text").first.inner_text()
    assert reply.startswith('<script>alert("x")</script>')  # shown as the text the model wrote
    meta = thread.locator(".msg-assistant .meta").first.inner_text()
    assert re.search(r"\d+ ms", meta) and "prompt" in meta and "completion tokens" in meta
    assert '"answers"' in page.locator("pre.result").inner_text()
    assert page.locator("a[href^='javascript']").count() == 0
    page.screenshot(path=str(shots / "transcript.png"))


def test_compare_page_gives_each_benchmarks_comparison(page, web: WebServer) -> None:
    page.goto(web.base + "/compare")
    forms = page.locator("form.choose")
    assert forms.count() == 2
    psychobench = forms.filter(has_text="PsychoBench")
    psychobench.locator("input[type=checkbox]").nth(0).check()
    psychobench.locator("input[type=checkbox]").nth(1).check()
    psychobench.locator("button").click()
    result = page.locator(".report").inner_text()
    assert "PsychoBench comparison" in result
    assert "openai-compatible/low" in result and "openai-compatible/high" in result and "Crowd" in result
    page.goto(web.base + "/")
    for label in ("games-a", "games-b"):
        page.locator(f"tr:has(a:text-is('{label}')) input[type=checkbox]").check()
    page.click("text=Compare the ticked runs")
    result = page.locator(".report").inner_text()
    assert "GAMA-Bench leaderboard" in result and "Guess 2/3 of the Average" in result
    page.goto(f"{web.base}/compare?run={_run_id(0, 'pb-low')}&run={_run_id(0, 'games-a')}")
    assert "choose runs of one benchmark" in page.locator("p.error").inner_text()


def test_a_running_run_updates_live(browser, tmp_path: Path) -> None:
    root = tmp_path / "live"
    root.mkdir()
    with FaultServer(FaultRates(latency_s=0.15)) as server:
        command = [
            sys.executable,
            "-m",
            "llmpsych",
            "run",
            "--task",
            "echo",
            "--model",
            "openai-compatible/m",
        ]
        command += ["--base-url", server.base_url, "--no-cache", "--concurrency", "1", "--no-progress"]
        command += ["-O", "units=40", "--out", str(root / "echo")]
        web = WebServer(root)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            context = browser.new_context()
            page = context.new_page()
            page.goto(web.url)
            # the run appears by itself once its store exists (the page reloads for a new run)
            page.wait_for_selector("table.runs tbody tr[data-run]", timeout=60_000)
            page.wait_for_function(
                "() => document.querySelector('[data-field=status]').textContent === 'running'",
                timeout=60_000,
            )
            first = page.locator("[data-field=progress]").inner_text()
            # the page changes by itself (no reload): the progress text moves on, then the run finishes
            page.wait_for_function(
                "t => document.querySelector('[data-field=progress]').textContent !== t",
                arg=first,
                timeout=60_000,
            )
            page.wait_for_function(
                "() => document.querySelector('[data-field=status]').textContent === 'done'", timeout=120_000
            )
            assert page.locator("[data-field=progress]").inner_text() == "40/40"
            context.close()
            assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            web.stop()

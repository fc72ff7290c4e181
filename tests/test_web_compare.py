"""The compare page for EmotionBench and MAS-Resilience runs (PsychoBench and GAMA-Bench are in the browser
tests), made by the benchmarks' own compare code, and two served folders at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmpsych.collab.cli import app as mas_app
from llmpsych.collab.scripted import ScriptedCollaborator
from llmpsych.runs import start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.web.catalog import _run_id
from test_emotion_task import config as emotion_config
from test_emotion_task import make_responder
from test_web_security import WebServer


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, seed_data: Path) -> tuple[Path, Path]:
    emotion, mas = tmp_path_factory.mktemp("emotion"), tmp_path_factory.mktemp("mas")
    with FaultServer(responder=make_responder(seed_data, [])) as server:
        for name in ("e1", "e2"):
            options = {"emotions": ["Anger"], "situations_per_factor": 1, "runs": 1, "default_runs": 2}
            start_run(emotion_config(server, seed_data, **options), emotion / name, False)
    with FaultServer(responder=ScriptedCollaborator({}, answers={"Alice": "1.5"})) as server:
        for fault in ("none", "autoinject"):
            args = ["run", "--system", "mad", "--dataset", "ciar", "--items", "2", "--fault", fault]
            args += ["--model", "openai-compatible/scripted", "--base-url", server.base_url]
            args += ["--data-dir", str(seed_data), "--no-cache", "--no-progress", "--out", str(mas / fault)]
            result = CliRunner().invoke(mas_app, args)
            assert result.exit_code == 0, result.output
    return emotion, mas


@pytest.fixture(scope="module")
def web(folders: tuple[Path, Path]) -> Iterator[WebServer]:
    server = WebServer(*folders)
    yield server
    server.stop()


def test_both_folders_are_served_with_their_runs_labelled(web: WebServer, folders: tuple[Path, Path]) -> None:
    status, _, body = web.request("/")
    page = body.decode()
    assert status == 200 and "4 runs under" in page
    for folder, name in (
        (folders[0], "e1"),
        (folders[0], "e2"),
        (folders[1], "none"),
        (folders[1], "autoinject"),
    ):
        assert f"{folder.name}/{name}" in page
    assert page.count("<td>emotionbench</td>") == 2 and page.count("<td>mas</td>") == 2


def test_emotionbench_runs_side_by_side(web: WebServer) -> None:
    ids = [_run_id(0, "e1"), _run_id(0, "e2")]
    status, _, body = web.request(f"/compare?run={ids[0]}&run={ids[1]}")
    page = body.decode()
    assert status == 200 and "EmotionBench, side by side" in page and 'class="error"' not in page
    assert "EmotionBench comparison" in page and "Anger" in page
    assert "openai-compatible/scripted (e1)" in page and "openai-compatible/scripted (e2)" in page


def test_mas_runs_compared(web: WebServer) -> None:
    ids = [_run_id(1, "none"), _run_id(1, "autoinject")]
    status, _, body = web.request(f"/compare?run={ids[0]}&run={ids[1]}")
    page = body.decode()
    assert status == 200 and "MAS-Resilience comparison" in page and 'class="error"' not in page
    assert "Table 7.3 layout" in page or "Table 7.4 layout" in page


def test_unknown_or_mixed_choices_are_one_line(web: WebServer) -> None:
    status, _, body = web.request("/compare?run=000000000000")
    assert status == 200 and b"some chosen runs no longer exist" in body
    status, _, body = web.request(f"/compare?run={_run_id(0, 'e1')}&run={_run_id(1, 'none')}")
    assert status == 200 and b"choose runs of one benchmark (chosen: emotionbench, mas)" in body

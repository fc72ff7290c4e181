"""`llmpsych web` as the lead mounts it (`app.add_typer(llmpsych.web.cli.app, name="web")`): help, a
missing folder and a port in use are one clear error each; a real serve prints the URL and answers."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from llmpsych.errors import ConfigError
from llmpsych.serving.listen import bind, is_loopback
from llmpsych.web import cli as web_cli
from test_web_security import WebServer


def _mounted() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """llmpsych."""

    app.add_typer(web_cli.app, name="web")
    return app


def test_help_names_the_folder_host_and_port() -> None:
    result = CliRunner().invoke(_mounted(), ["web", "--help"])
    assert result.exit_code == 0
    for word in ("RUNS", "--host", "--port", "loopback"):
        assert word in result.output


def test_a_missing_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a folder"):
        web_cli.serve_runs([tmp_path / "nope"])
    result = CliRunner().invoke(_mounted(), ["web", str(tmp_path / "nope")])
    assert result.exit_code != 0 and isinstance(result.exception, ConfigError)


def test_a_port_in_use_is_one_clear_error() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        with pytest.raises(ConfigError, match="cannot listen on 127.0.0.1"):
            bind("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()


def test_loopback_addresses() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")


def test_serving_an_empty_folder_says_there_is_no_run(tmp_path: Path) -> None:
    server = WebServer(tmp_path)
    try:
        status, _, body = server.request("/")
        assert status == 200 and b"No run matches." in body and b"0 runs under" in body
        assert server.request("/compare")[0] == 200
        assert server.request("/run/000000000000")[0] == 404
    finally:
        server.stop()


def test_options_may_follow_the_folders_on_the_real_command_line(tmp_path: Path) -> None:
    """`llmpsych web RUNS --port N`, as people type it: the options are options, not more folders."""
    from llmpsych.testing.runs import run_cli

    done = run_cli("web", tmp_path / "nope", "--port", "1", "--host", "127.0.0.1")
    assert done.returncode == 2, done.stderr
    assert "nope is not a folder" in done.stderr and "--port" not in done.stderr

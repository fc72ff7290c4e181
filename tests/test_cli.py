"""The command line: one clear line and a non-zero exit for bad input; keys never leak."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych.testing.fault_server import FaultServer


def llmpsych(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llmpsych", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode != 0
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:") and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_unknown_model_spec(tmp_path: Path) -> None:
    assert_one_line_error(
        llmpsych("run", "--task", "echo", "--model", "gpt4", "--out", str(tmp_path / "r")),
        "unknown model spec",
        "local/<name>",
    )


def test_unreachable_endpoint(tmp_path: Path) -> None:
    result = llmpsych(
        "models", "test", "openai-compatible/m", "--base-url", f"http://127.0.0.1:{_free_port()}/v1"
    )
    assert_one_line_error(result, "connection refused", "is the server running?")


def test_missing_key(tmp_path: Path) -> None:
    env = {k: "" for k in ("OPENAI_API_KEY",)}
    result = llmpsych(
        "run", "--task", "echo", "--model", "openai/gpt-4o-mini", "--out", str(tmp_path / "r"), env=env
    )
    assert_one_line_error(result, "no API key", "OPENAI_API_KEY")


def test_malformed_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('task = "echo"\nparams = { temperature = 9 }\n')
    assert_one_line_error(llmpsych("run", str(bad)), "params.temperature")
    bad.write_text("task = [unclosed")
    assert_one_line_error(llmpsych("run", str(bad)), "not valid TOML")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("task: echo\noptions: {units: -1}\n")
    result = llmpsych(
        "run", str(bad_yaml), "--base-url", "http://127.0.0.1:9/v1", "--model", "openai-compatible/m"
    )
    assert_one_line_error(result, "options for task 'echo'", "units")


def test_missing_data_folder(tmp_path: Path) -> None:
    result = llmpsych("data", "list", env={"LLMPSYCH_DATA_DIR": str(tmp_path / "nowhere")})
    assert_one_line_error(result, "nowhere")


def test_unknown_task(tmp_path: Path) -> None:
    assert_one_line_error(llmpsych("run", "--task", "nosuch"), "unknown task", "echo")


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = llmpsych("--debug", "run", "--task", "echo", "--model", "gpt4")
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_api_key_never_reaches_logs_stores_or_reports(tmp_path: Path) -> None:
    secret = "sk-llmpsych-test-SECRET-0123456789"
    cache_dir = tmp_path / "cache"
    with FaultServer(api_key=secret) as server:
        env = {"LLMPSYCH_API_KEY": secret, "LLMPSYCH_CACHE_DIR": str(cache_dir)}
        run_dir = tmp_path / "run"
        result = llmpsych(
            "--debug",
            "run",
            "--task",
            "echo",
            "--model",
            "openai-compatible/m",
            "--base-url",
            server.base_url,
            "-O",
            "units=5",
            "--out",
            str(run_dir),
            env=env,
        )
        assert result.returncode == 0, result.stderr
        assert all(h == f"Bearer {secret}" for h in server.authorization_headers)  # the key was used
        exported = llmpsych("export", str(run_dir), env=env)
        assert exported.returncode == 0, exported.stderr
        # A failing run (wrong key) must not echo the key in its error either.
        failing = llmpsych(
            "run",
            "--task",
            "echo",
            "--model",
            "openai-compatible/m",
            "--base-url",
            server.base_url,
            "-O",
            "units=1",
            "--out",
            str(tmp_path / "bad"),
            env={**env, "LLMPSYCH_API_KEY": secret + "x"},
        )
    everything = (
        result.stdout + result.stderr + exported.stdout + exported.stderr + failing.stdout + failing.stderr
    )
    for folder in (run_dir, tmp_path / "bad", cache_dir):
        for path in folder.rglob("*"):
            if path.is_file():
                everything += path.read_bytes().decode("utf-8", errors="replace")
    assert (cache_dir / "responses.sqlite").exists() and (run_dir / "export" / "transcripts.jsonl").exists()
    assert secret not in everything


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["models", "list"], ["--version"]])
def test_help_and_listing_commands(args: list[str]) -> None:
    result = llmpsych(*args)
    assert result.returncode == 0, result.stderr


def test_bad_model_files(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_text("not a model")
    assert_one_line_error(llmpsych("models", "test", f"gguf:{bogus}"), "llama.cpp could not load")
    assert_one_line_error(
        llmpsych("models", "test", f"gguf:{tmp_path / 'absent.gguf'}"), "GGUF file not found"
    )
    assert_one_line_error(llmpsych("models", "test", "local/nope"), "unknown embedded model", "qwen2.5-0.5b")


def test_cache_commands(tmp_path: Path) -> None:
    env = {"LLMPSYCH_CACHE_DIR": str(tmp_path / "cache")}
    with FaultServer() as server:
        common = [
            "run",
            "--task",
            "echo",
            "--model",
            "openai-compatible/m",
            "--base-url",
            server.base_url,
            "-O",
            "units=3",
            "--no-progress",
        ]
        assert llmpsych(*common, "--out", str(tmp_path / "a"), env=env).returncode == 0
        second = llmpsych(*common, "--out", str(tmp_path / "b"), env=env)
        uncached = llmpsych(*common, "--out", str(tmp_path / "c"), "--no-cache", env=env)
        assert sum(server.hits.values()) == 6  # the second run came from the cache, --no-cache did not
    assert "0 requests sent, 3 answered from the cache" in second.stdout
    assert "3 requests sent, 0 answered from the cache" in uncached.stdout
    stats = llmpsych("cache", "stats", env=env)
    assert stats.returncode == 0 and "3 responses" in stats.stdout and "m: 3" in stats.stdout
    cleared = llmpsych("cache", "clear", env=env)
    assert "removed 3 cached responses" in cleared.stdout
    assert "0 responses" in llmpsych("cache", "stats", env=env).stdout


def test_a_run_with_failed_units_exits_1_and_resume_finishes_it(tmp_path: Path) -> None:
    secret = "sk-llmpsych-test-exit-code"
    with FaultServer(api_key=secret) as server:
        args = ["--model", "openai-compatible/m", "--base-url", server.base_url, "-O", "units=2"]
        run_dir = tmp_path / "run"
        env = {"LLMPSYCH_CACHE_DIR": str(tmp_path / "cache")}
        failed = llmpsych(
            "run", "--task", "echo", *args, "--out", str(run_dir), env={**env, "LLMPSYCH_API_KEY": "wrong"}
        )
        assert failed.returncode == 1, failed.stderr
        assert "2 units failed" in failed.stderr and "--resume" in failed.stderr
        resumed = llmpsych("run", "--resume", str(run_dir), env={**env, "LLMPSYCH_API_KEY": secret})
        assert resumed.returncode == 0, resumed.stderr
        assert "2/2 units done" in resumed.stdout

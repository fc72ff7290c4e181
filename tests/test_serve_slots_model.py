"""`llmpsych serve` says its parallel slots, and a client pointed at it without a concurrency uses them
(the real llama.cpp server answering ``GET /props`` behind its bearer token)."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmpsych.models import GenerationParams, open_client

pytestmark = pytest.mark.model


def test_serve_reports_its_slots_and_a_client_keeps_to_them(tmp_path: Path, monkeypatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token_file = tmp_path / "serve.token"
    command = ["serve", "--port", str(port), "--n-parallel", "2", "--token-file", str(token_file)]
    command += ["--model", "local/qwen2.5-0.5b?ctx=4096"]  # the context size from the spec reaches serve
    process = subprocess.Popen(
        [sys.executable, "-m", "llmpsych", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    printed: list[str] = []
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not any("use it with" in line for line in printed):
            line = process.stdout.readline()
            assert line or process.poll() is None, "serve exited early: " + "".join(printed)
            printed.append(line)
        assert any(line.startswith("parallel slots: 2 (--n-parallel") for line in printed), printed
        assert any(line.startswith("context: 4096 tokens per slot") for line in printed), printed
        monkeypatch.setenv("LLMPSYCH_API_KEY", token_file.read_text().strip())

        async def ask():
            client = open_client("openai-compatible/qwen", base_url=f"http://127.0.0.1:{port}/v1")
            try:
                results = await asyncio.gather(
                    *(
                        client.complete(
                            [{"role": "user", "content": f"Say {i}."}], GenerationParams(max_tokens=2)
                        )
                        for i in range(3)
                    )
                )
                return client, results
            finally:
                await client.aclose()

        client, results = asyncio.run(ask())
        assert client.concurrency == 2 and client.describe()["concurrency_from"] == "server slots"
        assert client.stats.retries == 0 and all(r.attempts == 1 for r in results)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)

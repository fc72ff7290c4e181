"""The embedded llama.cpp model: in-process, and the same evaluation through its loopback HTTP server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from llmpsych.errors import ChecksumError
from llmpsych.models import GenerationParams, catalog, open_client
from llmpsych.models.embedded import EmbeddedSettings, load_embedded
from llmpsych.runs import RunStore, parse_run_config, start_run

pytestmark = pytest.mark.model
QUESTION = [{"role": "user", "content": "Answer with one number from 1 to 5: how much do you enjoy puzzles?"}]


def test_default_model_is_assembled_and_verified() -> None:
    path = catalog.model_file("qwen2.5-0.5b")
    assert path.stat().st_size == 491_400_064
    assert catalog.sha256_file(path) == catalog.CATALOG["qwen2.5-0.5b"].sha256


def test_checksum_mismatch_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LLMPSYCH_CACHE_DIR", str(tmp_path))
    entry = catalog.CATALOG["smollm2-135m"]
    tampered = catalog.CatalogEntry(**{**entry.__dict__, "sha256": "0" * 64})
    monkeypatch.setitem(catalog.CATALOG, "smollm2-135m", tampered)
    if not catalog.is_installed("smollm2-135m"):
        tampered = catalog.CatalogEntry(**{**catalog.CATALOG["qwen2.5-0.5b"].__dict__, "sha256": "0" * 64})
        monkeypatch.setitem(catalog.CATALOG, "qwen2.5-0.5b", tampered)
    name = tampered.name
    with pytest.raises(ChecksumError, match="does not match"):
        catalog.model_file(name)
    assert not list((tmp_path / "models").glob("*.gguf"))  # nothing unverified left behind


def test_in_process_answer_with_logprobs_and_usage() -> None:
    async def go():
        client = open_client("local/qwen2.5-0.5b")
        return await client.complete(QUESTION, GenerationParams(max_tokens=4, logprobs=True, top_logprobs=5))

    result = asyncio.run(go())
    assert result.text.strip()
    assert result.usage.prompt_tokens > 10 and result.usage.completion_tokens >= 1
    top = result.logprobs[0]["top_logprobs"]
    assert len(top) == 5 and all(t["logprob"] <= 0 for t in top)


def test_loopback_server_answers_the_official_openai_client_identically(tmp_path: Path) -> None:
    model = load_embedded(catalog.model_file("qwen2.5-0.5b"), EmbeddedSettings())
    http = openai.OpenAI(base_url=model.base_url, api_key=model.api_key.get_secret_value(), max_retries=0)
    via_http = http.chat.completions.create(
        model="qwen2.5-0.5b", messages=QUESTION, max_tokens=8, temperature=0
    )
    direct = model.complete({"messages": QUESTION, "max_tokens": 8, "temperature": 0})
    assert via_http.choices[0].message.content == direct["choices"][0]["message"]["content"]

    # The same evaluation through llmpsych, in-process and over HTTP, gives the same results. llama.cpp
    # reuses the cached prefix of the previous prompt, so a temperature-0 answer can depend on which
    # request came before it: both runs start after the same request and send theirs one at a time.
    common = {
        "task": "echo",
        "cache": False,
        "concurrency": 1,
        "options": {"units": 3, "turns": 2, "max_tokens": 12},
    }
    model.complete({"messages": QUESTION, "max_tokens": 8, "temperature": 0})
    start_run(parse_run_config({**common, "model": "local/qwen2.5-0.5b"}), tmp_path / "inproc", False)
    model.complete({"messages": QUESTION, "max_tokens": 8, "temperature": 0})
    start_run(
        parse_run_config({**common, "model": "openai-compatible/qwen", "base_url": model.base_url}),
        tmp_path / "http",
        False,
    )
    results = []
    for name in ("inproc", "http"):
        store = RunStore.in_dir(tmp_path / name)
        results.append({u.unit_id: u.result for u in store.units()})
        store.close()
    assert results[0] == results[1] and len(results[0]) == 3


def test_serve_command_exposes_an_openai_endpoint(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = tmp_path / "token"
    process = subprocess.Popen(
        [sys.executable, "-m", "llmpsych", "serve", "--port", str(port), "--token-file", str(token)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 60
        line = ""
        while time.time() < deadline and "serving" not in line:
            line = process.stdout.readline()
            assert line or process.poll() is None, "serve exited early"
        assert f"127.0.0.1:{port}" in line
        key = token.read_text().strip()
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0)
        answer = client.chat.completions.create(model="x", messages=QUESTION, max_tokens=4, temperature=0)
        assert answer.choices[0].message.content.strip()
    finally:
        process.terminate()
        process.wait(timeout=20)

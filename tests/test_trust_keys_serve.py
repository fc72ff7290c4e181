"""The embedded endpoint is not open to the world (docs/security.md section 9), against the real
xllamacpp server: a bearer token made per process, written to a 0600 file and never printed; 401 without
it; no CORS header that lets a web page in the user's browser read from or drive the model."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from llmpsych.models import GenerationParams, catalog, open_client
from llmpsych.models.embedded import EmbeddedSettings, load_embedded

pytestmark = pytest.mark.model
QUESTION = [{"role": "user", "content": "Reply with one word."}]
EVIL = "http://evil.example"


def request(url: str, method: str = "GET", headers: dict[str, str] | None = None, body: bytes | None = None):
    """(status, headers) of one raw HTTP request, whatever the status."""
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=body)
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, resp.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


def assert_closed_to_browsers(base: str, token: str) -> None:
    chat = f"{base}/chat/completions"
    body = json.dumps({"model": "x", "messages": QUESTION, "max_tokens": 2}).encode()
    json_type = {"Content-Type": "application/json"}
    status, headers = request(chat, "POST", {**json_type, "Origin": EVIL}, body)
    assert status == 401
    assert headers.get("Access-Control-Allow-Origin", "") in ("", None)  # never the origin, never "*"
    status, _ = request(chat, "POST", {**json_type, "Authorization": "Bearer wrong"}, body)
    assert status == 401
    status, headers = request(
        chat, "POST", {**json_type, "Authorization": f"Bearer {token}", "Origin": EVIL}, body
    )
    assert status == 200 and headers.get("Access-Control-Allow-Origin", "") == ""
    preflight = {
        "Origin": EVIL,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }
    _, headers = request(chat, "OPTIONS", preflight)
    assert headers.get("Access-Control-Allow-Origin", "") == ""
    assert headers.get("Access-Control-Allow-Credentials", "false") != "true"
    assert "authorization" not in headers.get("Access-Control-Allow-Headers", "").lower()
    assert headers.get("Access-Control-Allow-Headers", "") != "*"
    for path in ("/v1/models", "/slots", "/props"):
        assert request(base.removesuffix("/v1") + path, headers={"Origin": EVIL})[0] in (401, 404, 501)


def test_serve_needs_the_token_from_a_private_file(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token_file = tmp_path / "serve.token"
    process = subprocess.Popen(
        [sys.executable, "-m", "llmpsych", "serve", "--port", str(port), "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    printed = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not any("use it with" in line for line in printed):
            line = process.stdout.readline()
            assert line or process.poll() is None, "serve exited early: " + "".join(printed)
            printed.append(line)
        token = token_file.read_text().strip()
        assert len(token) >= 40
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert token not in "".join(printed)  # written to the file, never printed
        assert_closed_to_browsers(f"http://127.0.0.1:{port}/v1", token)
        # The model id a client lists is the name it is served as, not the GGUF file's path on this disk.
        listing = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/models", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(listing, timeout=60) as resp:
            ids = [entry["id"] for entry in json.loads(resp.read())["data"]]
        assert ids == ["qwen2.5-0.5b"], ids
    finally:
        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=60)[0]
    assert token not in rest
    assert not token_file.exists()  # removed when the server stops, by Ctrl-C or `kill`


def test_serve_on_a_port_another_socket_holds_names_the_port_not_the_model() -> None:
    """Before: "llama.cpp could not load .../qwen2.5-coder-0.5b-instruct-q4_k_m.gguf: Failed to init server,
    please check the input params", which sends the user to the model file."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "llmpsych", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {port} on 127.0.0.1 is already in use" in lines[0], done.stderr
    assert "--port" in lines[0] and "load" not in lines[0] and "Traceback" not in done.stderr


def test_the_in_run_loopback_server_is_closed_and_our_client_finds_its_token() -> None:
    model = load_embedded(catalog.model_file("qwen2.5-0.5b"), EmbeddedSettings())
    token = model.api_key.get_secret_value()
    assert_closed_to_browsers(model.base_url, token)

    async def ask():
        client = open_client("openai-compatible/qwen", base_url=model.base_url)
        try:
            return client, await client.complete(QUESTION, GenerationParams(max_tokens=2))
        finally:
            await client.aclose()

    client, result = asyncio.run(ask())
    assert (
        result.text.strip()
        and client.endpoint_info["key_from"] == "token of the embedded server in this process"
    )
    assert token not in json.dumps(client.describe())
    assert os.environ.get("LLMPSYCH_API_KEY") != token

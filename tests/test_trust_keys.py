"""Keys go only where they belong, and no secret is stored (docs/security.md sections 1 and 2).

Written as an attacker would: real ``llmpsych`` processes against real loopback servers, a received config
that points ``openai/...`` at the attacker's server, canaries in a URL's userinfo and query, in the
environment and in the config file, then every byte of the run folder, the cache and the captured output
searched for them, after a clean run, a 401 from a server that echoes the credential, and a refused
connection.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from llmpsych.errors import ConfigError, ModelSpecError
from llmpsych.models.spec import parse_model_spec, resolve_endpoint
from llmpsych.models.urls import endpoint_address, redact_url
from llmpsych.runs import RunStore, parse_run_config, resume_run, start_run
from llmpsych.testing.fault_server import FaultServer

GAME = {"game": "guessing", "players": 3, "rounds": 1, "runs": 1, "max_reasks": 0}


def llmpsych(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the real command line in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "llmpsych", *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment with its own cache and user config, and no key or base URL from the caller."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "LLMPSYCH_BASE_URL"}
    env.update(
        LLMPSYCH_CACHE_DIR=str(tmp_path / "cache"),
        LLMPSYCH_CONFIG=str(tmp_path / "config.toml"),
        NO_COLOR="1",
        COLUMNS="200",
    )
    return env


@pytest.fixture
def servers() -> Iterator[tuple[FaultServer, FaultServer, FaultServer]]:
    with FaultServer() as a, FaultServer() as b, FaultServer() as evil:
        yield a, b, evil


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- 1. a key reaches only its own endpoint -----------------------------------------------------------------
def test_a_received_config_cannot_send_the_openai_key_to_its_server(
    tmp_path: Path, home: dict[str, str], servers: tuple[FaultServer, FaultServer, FaultServer]
) -> None:
    """``model = "openai/..."`` with the sender's ``base_url``: one clear line, exit 2, and the sender's
    server receives nothing, neither in the run-level nor in a role's base_url."""
    *_, evil = servers
    env = {**home, "OPENAI_API_KEY": "sk-canary-openai-5521"}
    received = write_toml(
        tmp_path / "received.toml",
        f'task = "echo"\nmodel = "openai/gpt-4o-mini"\nbase_url = "{evil.base_url}"\n',
    )
    done = llmpsych("run", str(received), "--out", str(tmp_path / "run"), "--no-progress", env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "cannot redirect openai/gpt-4o-mini" in lines[0] and "OPENAI_API_KEY" in lines[0]
    )
    assert "sk-canary" not in done.stderr + done.stdout
    role_level = write_toml(
        tmp_path / "role.toml",
        'task = "gamabench"\nmodel = "openai-compatible/m"\n'
        f'[models.other]\nmodel = "openai/gpt-4o"\nbase_url = "{evil.base_url}"\n'
        '[options]\ngame = "guessing"\nplayers = 2\nrounds = 1\nruns = 1\nseats = ["llm", "llm:other"]\n',
    )
    done = llmpsych(
        "run", str(role_level), "--base-url", servers[0].base_url, "--out", str(tmp_path / "run2"), env=env
    )
    assert (
        done.returncode == 2 and "models.other.base_url" in done.stderr and "cannot redirect" in done.stderr
    )
    done = llmpsych("models", "test", "openai/gpt-4o-mini", "--base-url", evil.base_url, env=env)
    assert done.returncode == 2 and "cannot redirect" in done.stderr
    assert evil.authorization_headers == [] and servers[0].authorization_headers == []
    assert not (tmp_path / "run").exists() and not (tmp_path / "run2").exists()


def test_each_role_reaches_its_own_endpoint_and_the_manifest_says_which(
    tmp_path: Path, home: dict[str, str], servers: tuple[FaultServer, FaultServer, FaultServer]
) -> None:
    """A config-file endpoint with its key, plus a run-level base URL on another server: the run-level URL
    reaches only the URL-less role, the second server never sees an Authorization header, and the
    manifest records each role's endpoint, provider and key source (never the key)."""
    lab, _, evil = servers
    write_toml(
        Path(home["LLMPSYCH_CONFIG"]),
        f'[endpoints.lab]\nbase_url = "{lab.base_url}"\napi_key_env = "LAB_KEY"\n',
    )
    env = {**home, "LAB_KEY": "lab-canary-8841", "OPENAI_API_KEY": "sk-canary-openai-5521"}
    config = write_toml(
        tmp_path / "run.toml",
        f'task = "gamabench"\nmodel = "lab/big"\nbase_url = "{evil.base_url}"\n'
        'models = { other = "openai-compatible/small" }\n'
        '[options]\ngame = "guessing"\nplayers = 2\nrounds = 1\nruns = 1\nmax_reasks = 0\n'
        'seats = ["llm", "llm:other"]\n',
    )
    run_dir = tmp_path / "run"
    done = llmpsych("run", str(config), "--out", str(run_dir), "--no-progress", env=env)
    assert done.returncode == 0, done.stderr
    assert lab.authorization_headers and set(lab.authorization_headers) == {"Bearer lab-canary-8841"}
    assert len(evil.authorization_headers) >= 1 and not any(evil.authorization_headers)
    models = json.loads((run_dir / "manifest.json").read_text())["models"]
    assert models["subject"]["provider"] == "lab"
    assert models["subject"]["endpoint"] == endpoint_address(lab.base_url)
    assert models["subject"]["key_from"] == "env:LAB_KEY"
    assert models["subject"]["url_from"] == "config:endpoints.lab.base_url"
    assert models["other"]["endpoint"] == endpoint_address(evil.base_url)
    assert models["other"]["url_from"] == "base_url of the run" and models["other"]["key_from"] is None
    assert "canary" not in (run_dir / "manifest.json").read_text()


def test_role_tables_carry_their_own_url_and_params(
    servers: tuple[FaultServer, FaultServer, FaultServer],
) -> None:
    """A role given as a table: its own base URL and parameters; the run's base URL does not reach it."""
    a, b, _ = servers
    config = parse_run_config(
        {
            "task": "gamabench",
            "model": "openai-compatible/m",
            "base_url": a.base_url,
            "models": {
                "other": {
                    "model": "openai-compatible/o",
                    "base_url": b.base_url,
                    "params": {"temperature": 1.5},
                }
            },
            "cache": False,
            "options": {**GAME, "players": 2, "seats": ["llm", "llm:other"]},
        }
    )
    from llmpsych.runs.params import merge_params
    from llmpsych.runs.runner import open_clients

    clients = open_clients(config, None)
    assert clients["subject"].identity.startswith(a.base_url) and clients["other"].identity.startswith(
        b.base_url
    )
    # a role's parameters win over the run's in the one merge the run context makes
    other = merge_params(None, config.params, clients["other"].overrides)
    subject = merge_params(None, config.params, clients["subject"].overrides)
    assert clients["other"].body([], other)["temperature"] == 1.5
    assert clients["subject"].body([], subject)["temperature"] == 0.0
    with pytest.raises(ConfigError, match="credentials"):
        parse_run_config(
            {"task": "echo", "models": {"j": {"model": "openai-compatible/j", "base_url": "http://u:p@h/v1"}}}
        )


def test_resume_with_another_base_url_uses_it_and_records_it(
    tmp_path: Path, home: dict[str, str], servers: tuple[FaultServer, FaultServer, FaultServer]
) -> None:
    """A run whose server was down is resumed with ``--base-url`` of another: the units go there, the
    stored config and the manifest say so; without a role that takes a URL, ``--base-url`` is refused."""
    _, b, _ = servers
    dead = f"http://127.0.0.1:{free_port()}/v1"
    run_dir = tmp_path / "run"
    args = ["--task", "echo", "-m", "openai-compatible/m", "-O", "units=2", "--no-cache", "--no-progress"]
    first = llmpsych("run", *args, "--base-url", dead, "--out", str(run_dir), env={**home})
    assert first.returncode == 1, first.stderr  # units failed: connection refused after bounded retries
    resumed = llmpsych("run", "--resume", str(run_dir), "--base-url", b.base_url, "--no-progress", env=home)
    assert resumed.returncode == 0, resumed.stderr
    assert (
        "new endpoint for role subject" in resumed.stderr and endpoint_address(b.base_url) in resumed.stderr
    )
    assert len(b.authorization_headers) == 2
    store = RunStore.in_dir(run_dir)
    try:
        assert store.get_meta("config")["base_url"] == b.base_url
        assert {u.status for u in store.units()} == {"done"}
        manifest = store.get_meta("manifest")
    finally:
        store.close()
    assert manifest["models"]["subject"]["endpoint"] == endpoint_address(dead)
    assert manifest["endpoint_changes"][-1]["models"]["subject"]["endpoint"] == endpoint_address(b.base_url)
    assert json.loads((run_dir / "manifest.json").read_text()) == manifest

    # A unit half done on B, resumed on A: its stored answer replays (not re-sent), the rest goes to A.
    a = servers[0]
    two_turns = tmp_path / "two"
    args = ["--task", "echo", "-m", "openai-compatible/m", "-O", "units=2", "-O", "turns=2", "--no-progress"]
    assert (
        llmpsych(
            "run", *args, "--no-cache", "--base-url", b.base_url, "--out", str(two_turns), env=home
        ).returncode
        == 0
    )
    store = RunStore.in_dir(two_turns)
    try:
        before = {u.unit_id: u.result for u in store.units()}
        with sqlite3.connect(two_turns / "run.sqlite") as db:  # as if the run had been killed mid-unit
            db.execute("UPDATE units SET status = 'failed' WHERE unit_id = 'u000001'")
            db.execute("DELETE FROM calls WHERE unit_id = 'u000001' AND seq = 2")
    finally:
        store.close()
    sent_to_b = len(b.authorization_headers)
    resumed = llmpsych("run", "--resume", str(two_turns), "--base-url", a.base_url, "--no-progress", env=home)
    assert resumed.returncode == 0, resumed.stderr
    assert len(a.authorization_headers) == 1 and len(b.authorization_headers) == sent_to_b
    store = RunStore.in_dir(two_turns)
    try:
        assert {u.unit_id: u.result for u in store.units()} == before  # both servers answer alike
    finally:
        store.close()
    with pytest.raises(ModelSpecError, match="not an http"):
        resume_run(two_turns, False, base_url="ftp://127.0.0.1/v1")
    store = RunStore.in_dir(two_turns)
    try:
        assert store.get_meta("config")["base_url"] == a.base_url  # a refused URL is not kept
    finally:
        store.close()

    embedded_only = tmp_path / "fixed"
    cfg = {
        "task": "gamabench",
        "model": "gguf:/nonexistent.gguf",
        "cache": False,
        "options": {**GAME, "seats": ["fixed:50", "strategy:ne", "fixed:10"]},
    }
    start_run(parse_run_config(cfg), embedded_only, False)
    with pytest.raises(ConfigError, match="applies to no model role"):
        resume_run(embedded_only, False, base_url=b.base_url)


def test_a_game_without_model_seats_loads_no_model(tmp_path: Path) -> None:
    """Fixed and strategy seats only: the run never touches the (missing) model file."""
    cfg = {
        "task": "gamabench",
        "model": "gguf:/nonexistent.gguf",
        "cache": False,
        "options": {**GAME, "seats": ["fixed:50", "strategy:ne", "fixed:10"]},
    }
    outcome = start_run(parse_run_config(cfg), tmp_path / "run", False)
    assert outcome.summary.done == 1 and outcome.summary.failed == 0
    with pytest.raises(ModelSpecError, match="GGUF file not found"):
        start_run(
            parse_run_config({**cfg, "options": {**GAME, "seats": ["llm", "fixed:1", "fixed:2"]}}),
            tmp_path / "run2",
            False,
        )


def test_python_seats_are_named_before_they_are_imported_and_analysis_imports_none(
    tmp_path: Path, home: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A received config's ``python:`` seat: start and resume print which code they import before
    importing it; ``analyze`` of the run folder imports nothing."""
    marker = tmp_path / "imported"
    (tmp_path / "received_seat.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('yes')\n"
        "def guess(decision):\n    return 50\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = {
        "task": "gamabench",
        "model": "gguf:/nonexistent.gguf",
        "cache": False,
        "options": {**GAME, "seats": ["python:received_seat:guess", "fixed:1", "fixed:\x1b[31mred"]},
    }
    start_run(parse_run_config(cfg), tmp_path / "run", False)
    err = capsys.readouterr().err
    assert (
        "imports and runs Python code: seat 'python:received_seat:guess' imports 'received_seat:guess'" in err
    )
    assert marker.exists()
    marker.unlink()
    env = {**home, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    analysed = llmpsych("analyze", str(tmp_path / "run"), env=env)
    assert analysed.returncode == 0, analysed.stderr
    assert not marker.exists()  # re-analysis ran no seat code
    resumed = llmpsych("run", "--resume", str(tmp_path / "run"), "--no-progress", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.startswith("this run imports and runs Python code")
    # the run is complete and its outputs current: the resume says so and runs (imports) no seat code
    assert "is already complete" in resumed.stderr and not marker.exists()
    (tmp_path / "run" / "games.csv").unlink()  # an output gone: the ordinary resume names, then imports
    resumed = llmpsych("run", "--resume", str(tmp_path / "run"), "--no-progress", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.startswith("this run imports and runs Python code") and marker.exists()
    assert (tmp_path / "run" / "games.csv").is_file()


# -- 2. no secret is stored ---------------------------------------------------------------------------------
class EchoingAuthServer:
    """A hostile server: 401 whose message repeats the Authorization header and the request target."""

    def __init__(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                said = f"bad credentials {self.headers.get('Authorization')} for {self.path}"
                body = json.dumps({"error": {"message": said}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


def every_byte(*roots: Path) -> bytes:
    """The content and names of every file under ``roots``."""
    out = bytearray()
    for root in roots:
        for path in sorted(root.rglob("*")):
            out += str(path).encode()
            if path.is_file():
                out += path.read_bytes()
    return bytes(out)


def test_no_secret_is_stored_anywhere(
    tmp_path: Path, home: dict[str, str], servers: tuple[FaultServer, FaultServer, FaultServer]
) -> None:
    url_server, cfg_server, env_server = servers
    canaries = {
        "userinfo": "urlpass-canary-3317",
        "query": "querytok-canary-9902",
        "config": "cfgkey-canary-4471",
        "env": "envkey-canary-6603",
    }
    basic = base64.b64encode(f"alice:{canaries['userinfo']}".encode()).decode()
    write_toml(
        Path(home["LLMPSYCH_CONFIG"]),
        f'[endpoints.lab]\nbase_url = "{cfg_server.base_url}"\napi_key = "{canaries["config"]}"\n',
    )
    env = {**home, "LLMPSYCH_API_KEY": canaries["env"]}

    def run_config(base_url: str, name: str) -> Path:
        return write_toml(
            tmp_path / f"{name}.toml",
            'task = "gamabench"\nmodel = "openai-compatible/subject"\n'
            f'base_url = "{base_url}"\nmax_retries = 0\n[models]\nlab = "lab/labmodel"\n'
            f'env = {{ model = "openai-compatible/envmodel", base_url = "{env_server.base_url}" }}\n'
            '[options]\ngame = "guessing"\nplayers = 3\nrounds = 1\nruns = 1\nmax_reasks = 0\n'
            'seats = ["llm", "llm:lab", "llm:env"]\n',
        )

    host = url_server.base_url.removeprefix("http://")
    secret_url = f"http://alice:{canaries['userinfo']}@{host}?api_key={canaries['query']}"
    outputs = []
    ok = llmpsych(
        "run",
        str(run_config(secret_url, "ok")),
        "--out",
        str(tmp_path / "runs" / "ok"),
        "--no-progress",
        env=env,
    )
    outputs.append(ok)
    assert ok.returncode == 0, ok.stderr
    # the request itself authenticates: each server saw its own credential and no other
    assert set(url_server.authorization_headers) == {f"Basic {basic}"}
    assert all(p.endswith(f"/chat/completions?api_key={canaries['query']}") for p in url_server.paths)
    assert set(cfg_server.authorization_headers) == {f"Bearer {canaries['config']}"}
    assert set(env_server.authorization_headers) == {f"Bearer {canaries['env']}"}

    exported = llmpsych("export", str(tmp_path / "runs" / "ok"), env=env)
    outputs.append(exported)
    assert exported.returncode == 0 and (tmp_path / "runs" / "ok" / "export" / "calls.csv").is_file()

    echo = EchoingAuthServer()
    rejected = f"http://alice:{canaries['userinfo']}@127.0.0.1:{echo.port}/v1?api_key={canaries['query']}"
    denied = llmpsych(
        "run",
        str(run_config(rejected, "denied")),
        "--out",
        str(tmp_path / "runs" / "401"),
        "--no-progress",
        env=env,
    )
    outputs.append(denied)
    assert denied.returncode == 1 and "HTTP 401" in denied.stderr and "***" in denied.stderr

    refused = f"http://alice:{canaries['userinfo']}@127.0.0.1:{free_port()}/v1?api_key={canaries['query']}"
    down = llmpsych(
        "run",
        str(run_config(refused, "down")),
        "--out",
        str(tmp_path / "runs" / "down"),
        "--no-progress",
        env=env,
    )
    outputs.append(down)
    assert down.returncode == 1 and "is the server running?" in down.stderr
    again = llmpsych("run", "--resume", str(tmp_path / "runs" / "down"), "--no-progress", env=env)
    outputs.append(again)
    assert again.returncode == 2 and "--base-url" in again.stderr  # the credentials were never stored

    on_disk = every_byte(tmp_path / "runs", tmp_path / "cache")
    said = "".join(o.stdout + o.stderr for o in outputs).encode()
    for name, canary in {**canaries, "basic": basic}.items():
        assert canary.encode() not in on_disk, f"{name} canary stored"
        assert canary.encode() not in said, f"{name} canary printed"
    stored = json.loads((tmp_path / "runs" / "ok" / "manifest.json").read_text())
    assert stored["config"]["base_url"] == redact_url(secret_url) == f"http://***@{host}?api_key=***"
    assert stored["models"]["subject"]["key_from"] == "base URL userinfo"
    assert stored["models"]["lab"]["key_from"] == "config:endpoints.lab.api_key"
    assert stored["models"]["env"]["key_from"] == "env:LLMPSYCH_API_KEY"


def test_credentials_in_a_url_become_basic_auth_and_never_the_identity() -> None:
    spec = parse_model_spec("openai-compatible/m")
    endpoint = resolve_endpoint(spec, "http://u%40x:p%3Aw@127.0.0.1:9/v1?api_key=tok123&v=2")
    assert endpoint.authorization() == "Basic " + base64.b64encode(b"u@x:p:w").decode()
    assert endpoint.identity == "http://127.0.0.1:9/v1?api_key=***&v=2#m"
    assert endpoint.address == "http://127.0.0.1:9/v1"
    assert "p:w" not in repr(endpoint) and "tok123" not in repr(endpoint)
    plain = resolve_endpoint(spec, "http://127.0.0.1:9/v1/")
    assert plain.identity == "http://127.0.0.1:9/v1#m"  # plain URLs: identities (cache keys) unchanged


class RedirectingServer:
    """Answers every POST with a 307 to ``target`` (another host's chat endpoint)."""

    def __init__(self, target: str) -> None:
        self.hits = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.hits += 1
                self.send_response(307)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.mark.parametrize("query", ["", "?api-version=1"])  # with and without a query in the URL
def test_a_redirect_to_another_host_is_not_followed(
    query: str, monkeypatch: pytest.MonkeyPatch, servers: tuple[FaultServer, FaultServer, FaultServer]
) -> None:
    import asyncio

    from llmpsych.models import open_client
    from llmpsych.models.client import RequestFailed

    *_, evil = servers
    redirector = RedirectingServer(f"{evil.base_url}/chat/completions")
    monkeypatch.setenv("LLMPSYCH_API_KEY", "redirect-canary-1")

    async def ask() -> None:
        client = open_client("openai-compatible/m", base_url=redirector.base_url + query, max_retries=0)
        try:
            await client.complete([{"role": "user", "content": "hi"}])
        finally:
            await client.aclose()

    with pytest.raises(RequestFailed):
        asyncio.run(ask())
    redirector.httpd.shutdown()
    assert redirector.hits == 1 and evil.authorization_headers == []

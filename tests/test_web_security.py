"""`llmpsych web` attacked as an attacker would: no token, a wrong Host, other methods, bodies, long URLs,
path traversal, planted symbolic links, hostile model text; against a real uvicorn server."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.web.catalog import _run_id

HOSTILE = (
    '<script>alert("x")</script> [click](javascript:alert(1)) <img src=x onerror=alert(2)> '
    "![secret](../../secret.png) [up](../secret.md)"
)


def hostile_responder(body: dict) -> str:
    return HOSTILE + " " + body["messages"][-1]["content"][-20:]


class WebServer:
    """``llmpsych web`` in a child process on a free loopback port; ``url`` holds the printed token."""

    def __init__(self, *roots: Path, host: str = "127.0.0.1", wrap: tuple[str, ...] = ()) -> None:
        code = (
            "import sys; from pathlib import Path; from llmpsych.web.cli import serve_runs; "
            "serve_runs([Path(p) for p in sys.argv[2:]], host=sys.argv[1])"
        )
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [*wrap, sys.executable, "-c", code, host, *map(str, roots)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("open "):
                self.url = line.split()[1]
                break
        else:
            raise AssertionError("server did not start: " + "".join(self.lines))
        threading.Thread(target=self._drain, daemon=True).start()
        match = re.match(r"http://([^/]+):(\d+)/\?token=(\S+)", self.url)
        assert match, self.url
        self.host, self.port, self.token = match.group(1), int(match.group(2)), match.group(3)
        self.base = f"http://{self.host}:{self.port}"

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def request(
        self,
        path: str,
        *,
        method: str = "GET",
        host: str | None = None,
        cookie: bool = True,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """A raw HTTP request (http.client does not normalise the path, so traversal reaches the server)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        sent = {"Host": f"127.0.0.1:{self.port}" if host is None else host, **(headers or {})}
        if cookie:
            sent["Cookie"] = f"llmpsych_web_{self.port}={self.token}"
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with one echo run whose replies hold markup, plus files planted around it."""
    base = tmp_path_factory.mktemp("served")
    root = base / "runs"
    with FaultServer(responder=hostile_responder) as server:
        config = {"task": "echo", "model": "openai-compatible/m", "base_url": server.base_url, "cache": False}
        start_run(parse_run_config({**config, "options": {"units": 3, "turns": 2}}), root / "r", False)
    run = root / "r"
    (base / "secret.md").write_text("TOP-SECRET outside the runs folder\n")
    (base / "secret.png").write_bytes(b"\x89PNG TOP-SECRET")
    (run / "report.md").write_text(f"# Report\n\n{HOSTILE}\n\n![ok](plot.png) [t](transcripts.md)\n")
    (run / "plot.png").write_bytes(b"\x89PNG fine")
    (run / "transcripts.md").write_text("## T\n\nfine\n")
    os.symlink(base / "secret.md", run / "linked.md")  # a planted link to a file outside
    os.symlink(base, run / "plots")  # a planted link to a folder outside
    (run / "sub").mkdir()
    os.symlink(base / "secret.png", run / "sub" / "x.png")
    # a run folder that is itself a link to a run outside the served folder
    shutil.copytree(run, base / "outside-run", symlinks=True)
    os.symlink(base / "outside-run", root / "linked-run")
    return root


@pytest.fixture(scope="module")
def web(hostile_runs: Path) -> Iterator[WebServer]:
    server = WebServer(hostile_runs)
    yield server
    server.stop()


def run_id(label: str) -> str:
    return _run_id(0, label)


def test_it_listens_on_loopback_only_and_says_so(web: WebServer) -> None:
    assert web.host == "127.0.0.1" and len(web.token) >= 40
    assert any("only this machine" in line for line in web.lines)
    other = [a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None) if a[0] == socket.AF_INET]
    for address in {a for a in other if not a.startswith("127.")}:
        with pytest.raises(OSError):
            socket.create_connection((address, web.port), timeout=2).close()


def test_every_page_needs_the_token(web: WebServer) -> None:
    rid = run_id("r")
    for path in ("/", "/api/runs", f"/run/{rid}", f"/run/{rid}/file/report.md", "/static/style.css", "/nope"):
        status, _, body = web.request(path, cookie=False)
        assert status == 403 and b"token" in body, path
    status, _, _ = web.request("/", cookie=False, headers={"Cookie": f"llmpsych_web_{web.port}=guess"})
    assert status == 403
    status, _, _ = web.request("/?token=wrong", cookie=False)
    assert status == 403


def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_url(web: WebServer) -> None:
    status, headers, _ = web.request(f"/?token={web.token}&task=echo", cookie=False)
    assert status == 303 and headers["location"] == "/?task=echo"
    cookie = headers["set-cookie"]
    assert cookie.startswith(f"llmpsych_web_{web.port}={web.token};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    status, _, body = web.request("/")
    assert status == 200 and b"Runs" in body


def test_foreign_host_headers_are_refused(web: WebServer) -> None:
    for host in ("evil.example", f"evil.example:{web.port}", "127.0.0.1", f"127.0.0.1:{web.port + 1}", ""):
        status, _, _ = web.request("/", host=host)
        assert status == 421, host
    for host in (f"localhost:{web.port}", f"127.0.0.1:{web.port}", f"LOCALHOST:{web.port}"):
        assert web.request("/", host=host)[0] == 200, host


def test_only_get_without_a_body_and_bounded_urls(web: WebServer) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        assert web.request("/", method=method)[0] == 405, method
    assert web.request("/", body=b"x" * 10, headers={"Content-Length": "10"})[0] == 413
    assert web.request("/?q=" + "a" * 5000)[0] == 414
    assert web.request("/" + "a" * 3000)[0] == 414
    # a head of 100 kB in one write, with the right Host and cookie: refused for its size alone
    connection = socket.create_connection(("127.0.0.1", web.port), timeout=30)
    head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nCookie: llmpsych_web_{web.port}={web.token}\r\n"
    connection.sendall(head.encode() + b"X-Big: " + b"a" * 100_000 + b"\r\n\r\n")
    reply = connection.recv(100)
    connection.close()
    assert reply.startswith(b"HTTP/1.1 431 ")


def test_pages_send_a_strict_content_security_policy(web: WebServer) -> None:
    status, headers, _ = web.request("/")
    assert status == 200
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"


def test_traversal_and_planted_links_read_nothing_outside(web: WebServer) -> None:
    rid = run_id("r")
    attempts = [
        f"/run/{rid}/file/../../secret.md",
        f"/run/{rid}/file/..%2f..%2fsecret.md",
        f"/run/{rid}/file/%2e%2e/%2e%2e/secret.md",
        f"/run/{rid}/file/linked.md",
        f"/run/{rid}/file/plots/secret.md",
        f"/run/{rid}/file/sub/x.png",
        f"/run/{rid}/file//etc/passwd",
        f"/run/{rid}/file/run.sqlite",
        f"/run/{rid}/file/manifest.json/../../../secret.md",
        "/run/..%2f..%2fetc/file/passwd",
        f"/run/{run_id('linked-run')}",
        f"/run/{run_id('linked-run')}/file/report.md",
        "/static/../web/app.py",
        "/static/%2e%2e/app.py",
        "/static/..%2fapp.py",
    ]
    for path in attempts:
        status, _, body = web.request(path)
        assert status in (404, 400), (path, status)
        assert b"TOP-SECRET" not in body and b"import" not in body, path
    status, _, body = web.request("/")
    assert b"linked-run" not in body  # a run folder planted as a link is not listed
    status, _, body = web.request(f"/run/{rid}")
    assert status == 200
    for name in (b"linked.md", b"plots/", b"sub/x.png", b"run.sqlite"):
        assert name not in body, name
    assert web.request(f"/run/{rid}/file/plot.png")[0] == 200  # the run's own files are served


def test_model_text_and_report_markup_are_shown_as_text(web: WebServer) -> None:
    rid = run_id("r")
    status, _, body = web.request(f"/run/{rid}")
    page = body.decode()
    assert status == 200
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert "javascript:" not in page.replace("[click](javascript:alert(1))", "")
    assert "onerror=alert" not in page.replace("&lt;img src=x onerror=alert(2)&gt;", "")
    assert 'src="/run/' + rid + '/file/plot.png"' in page  # the run's own image
    assert "secret.png" not in page.replace("![secret](../../secret.png)", "")  # not made an image
    assert f'href="/run/{rid}/file/transcripts.md"' in page
    status, headers, body = web.request(f"/run/{rid}/file/report.md")  # a Markdown file, rendered
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"&lt;script&gt;alert" in body and b"<script>alert" not in body
    status, headers, body = web.request(f"/run/{rid}/file/report.md?raw=1")  # as text, never as HTML
    assert status == 200 and headers["content-type"].startswith("text/plain") and b"<script>" in body
    status, _, body = web.request(f"/run/{rid}/unit?id=u000000")
    page = body.decode()
    assert status == 200 and page.count("&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") == 2
    assert "<script>alert" not in page and "<img src=x" not in page


def test_a_damaged_or_foreign_store_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "run.sqlite").write_bytes(b"not a database" * 100)
    (tmp_path / "linked").mkdir()
    os.symlink(tmp_path / "bad" / "run.sqlite", tmp_path / "linked" / "run.sqlite")
    server = WebServer(tmp_path)
    try:
        status, _, body = server.request("/")
        assert status == 200 and b"bad" in body and b"file is not a database" in body
        assert b"linked" not in body  # a store planted as a link is not a run
        status, _, body = server.request(f"/run/{_run_id(0, 'bad')}")
        assert status == 422 and b"file is not a database" in body and b"Traceback" not in body
    finally:
        server.stop()


def test_binding_another_address_needs_host_and_warns(tmp_path: Path) -> None:
    server = WebServer(tmp_path, host="0.0.0.0")
    try:
        assert any("WARNING: bound to 0.0.0.0" in line and "plain HTTP" in line for line in server.lines)
        assert any(line.startswith("from other machines: http://") for line in server.lines)
        assert server.request("/")[0] == 200
        assert server.request("/", host=f"evil.example:{server.port}")[0] == 421
    finally:
        server.stop()
    deadline = time.time() + 10
    while server.process.poll() is None and time.time() < deadline:
        time.sleep(0.05)


def test_reading_a_file_never_passes_a_link_on_the_way(tmp_path: Path) -> None:
    from llmpsych.web.catalog import read_inside

    run, outside = tmp_path / "run", tmp_path / "outside"
    (run / "plots").mkdir(parents=True)
    outside.mkdir()
    (run / "plots" / "a.png").write_bytes(b"inside")
    (outside / "a.png").write_bytes(b"TOP-SECRET")
    assert read_inside(run, "plots/a.png") == b"inside"
    shutil.rmtree(run / "plots")
    os.symlink(outside, run / "plots")  # the folder swapped for a link after it was listed
    assert read_inside(run, "plots/a.png") is None
    os.symlink(outside / "a.png", run / "b.png")
    for name in ("b.png", "../outside/a.png", "plots/../plots/a.png", "/etc/passwd", "", "plots//a.png"):
        assert read_inside(run, name) is None, name


def test_a_run_holding_links_is_not_compared(tmp_path: Path, seed_data: Path) -> None:
    from test_web_browser import scores_responder

    root = tmp_path / "runs"
    with FaultServer(responder=scores_responder) as server:
        for name in ("a", "b"):
            config = {"task": "psychobench", "model": "openai-compatible/low", "base_url": server.base_url}
            config |= {"cache": False, "data_dir": str(seed_data), "options": {"scale": ["DTDD"], "runs": 1}}
            start_run(parse_run_config(config), root / name, False)
    (tmp_path / "secret.csv").write_text("scale,subscale,group,mean,sd,n\nTOP-SECRET,x,y,1,1,1\n")
    (root / "b" / "norms.csv").unlink()
    os.symlink(tmp_path / "secret.csv", root / "b" / "norms.csv")  # read by name by the comparison
    server = WebServer(root)
    try:
        status, _, body = server.request(f"/compare?run={run_id('a')}&run={run_id('b')}")
        assert status == 200 and b"b holds symbolic links (norms.csv)" in body and b"TOP-SECRET" not in body
        (root / "b" / "norms.csv").unlink()
        shutil.copy(root / "a" / "norms.csv", root / "b" / "norms.csv")
        status, _, body = server.request(f"/compare?run={run_id('a')}&run={run_id('b')}")
        assert status == 200 and b"PsychoBench comparison" in body and b"symbolic" not in body
    finally:
        server.stop()

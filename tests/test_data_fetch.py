"""``llmpsych data fetch`` against a real local HTTP server that serves the official seed data."""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from typer.testing import CliRunner

from llmpsych.data import DATASETS, dataset_status, fetch_dataset, file_sha256, load_manifest
from llmpsych.data.cli import app
from llmpsych.data.fetch import fetch_datasets, file_url
from llmpsych.errors import ChecksumError, DataError
from llmpsych.models.retry import RETRYABLE_STATUS

SEED = (Path(__file__).parents[1] / ".." / "shared" / "seed-data").resolve()

#: repository -> local dataset folder (as the seed data is laid out)
FOLDERS = {
    "CUHK-ARISE/PsychoBench": "PsychoBench",
    "CUHK-ARISE/EmotionBench": "EmotionBench",
    "CUHK-ARISE/GAMABench": "GAMABench",
    "CUHK-ARISE/MAS-Resilience": "MAS-Resilience",
    "i-Eval/FairEval": "FairEval",
    "CUHK-ARISE/LLMPersonality": "LLMPersonality",
    "sylinrl/TruthfulQA": "TruthfulQA",
}
#: remote folder names that the seed copy renamed
REMOTE_TO_LOCAL = {
    "results/PANAS Test/": "results/PANAS_Test/",
    "results/Challenging Bench/": "results/Challenging_Bench/",
}


class SeedServer:
    """Serves ``/{owner}/{repo}/{commit}/{remote path}`` from the seed folder, with injectable faults."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: Counter[str] = Counter()  # decoded remote paths
        self.fail_first: dict[str, int] = {}  # remote path -> how many failures before success
        self.always_fail = False
        self.fail_status = 500  # the status of those failures
        self.retry_after = ""  # a Retry-After header sent with them
        self.gzip = False  # send bodies gzip-compressed (Content-Encoding: gzip), though not asked to
        self.tamper: set[str] = set()  # remote paths served with one byte changed
        self.authorization: list[str] = []  # the Authorization header of each request ("" when none)
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server.authorization.append(self.headers.get("Authorization") or "")
                parts = unquote(urlsplit(self.path).path).lstrip("/").split("/", 3)
                if len(parts) < 4:
                    return self.send_error(404)
                repository, commit, remote = "/".join(parts[:2]), parts[2], parts[3]
                folder = FOLDERS.get(repository)
                if folder is None or commit != load_manifest(folder).commit:
                    return self.send_error(404)
                with server.lock:
                    server.requests[remote] += 1
                    count = server.requests[remote]
                if server.always_fail or count <= server.fail_first.get(remote, 0):
                    self.send_response(server.fail_status)
                    if server.retry_after:
                        self.send_header("Retry-After", server.retry_after)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                local = remote
                for prefix, renamed in REMOTE_TO_LOCAL.items():
                    if folder == "EmotionBench" and remote.startswith(prefix):
                        local = renamed + remote[len(prefix) :]
                path = server.root / folder / local
                if ".." in Path(local).parts or not path.is_file():
                    return self.send_error(404)
                body = path.read_bytes()
                if remote in server.tamper:
                    body = bytes([body[0] ^ 0x01]) + body[1:]
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                if server.gzip:
                    body = gzip.compress(body)
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


@pytest.fixture(scope="module")
def seed() -> Path:
    """The official data beside the repository; missing data is a failure, never a skip."""
    if not SEED.is_dir():
        pytest.fail(f"official seed data not found at {SEED} (expected ../shared/seed-data beside the repo)")
    return SEED


@pytest.fixture
def server(seed: Path) -> Iterator[SeedServer]:
    srv = SeedServer(seed)
    srv.thread.start()
    try:
        yield srv
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMPSYCH_DATA_DIR", raising=False)
    monkeypatch.delenv("LLMPSYCH_DATA_BASE_URL", raising=False)


def _assert_verified(dest: Path, dataset: str) -> None:
    manifest = load_manifest(dataset)
    for entry in manifest.files:
        path = dest / dataset / entry.path
        assert path.is_file(), entry.path
        assert file_sha256(path) == entry.sha256, entry.path
    leftovers = [p for p in (dest / dataset).rglob("*.part")]
    assert not leftovers


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_fetch_psychobench_verifies_and_resumes(server: SeedServer, tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    folder = fetch_dataset(
        "psychobench", base_url=server.url, dest=tmp_path, progress=lambda *a: seen.append(a)
    )
    assert folder == tmp_path / "PsychoBench"
    _assert_verified(tmp_path, "PsychoBench")
    total = load_manifest("PsychoBench").total_size
    assert seen[-1] == ("PsychoBench", total, total)
    assert dataset_status("PsychoBench", tmp_path).checksums_ok is True

    requests = sum(server.requests.values())
    (report,) = fetch_datasets(["PsychoBench"], base_url=server.url, dest=tmp_path)
    assert (report.downloaded, report.skipped) == (0, 1)
    assert sum(server.requests.values()) == requests  # nothing downloaded again


def test_fetch_emotionbench_via_cli_with_renamed_folders(server: SeedServer, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["fetch", "EmotionBench", "--base-url", server.url, "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    assert "EmotionBench: 14 downloaded" in result.output
    _assert_verified(tmp_path, "EmotionBench")
    assert "results/PANAS Test/crowd.xlsx" in server.requests  # fetched under its remote name
    assert (tmp_path / "EmotionBench" / "results" / "PANAS_Test" / "crowd.xlsx").is_file()
    result = CliRunner().invoke(app, ["list", "--data-dir", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "14/14" in result.output


def test_fetch_all_and_a_resumed_partial_fetch(server: SeedServer, tmp_path: Path) -> None:
    # a previous, interrupted fetch left one good file and one corrupt one
    good = load_manifest("FairEval").files[0]
    (tmp_path / "FairEval" / good.path).parent.mkdir(parents=True)
    (tmp_path / "FairEval" / good.path).write_bytes((SEED / "FairEval" / good.path).read_bytes())
    bad = load_manifest("FairEval").files[1]
    (tmp_path / "FairEval" / bad.path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "FairEval" / bad.path).write_bytes(b"partial")

    root = fetch_dataset("all", base_url=server.url, dest=tmp_path)
    assert root == tmp_path
    for dataset in DATASETS:
        _assert_verified(tmp_path, dataset)
        assert len(_files(tmp_path / dataset)) == len(load_manifest(dataset).files)
    assert good.remote not in server.requests and server.requests[bad.remote] == 1


def test_base_url_from_environment(
    server: SeedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMPSYCH_DATA_BASE_URL", server.url + "/")
    fetch_dataset("FairEval", dest=tmp_path)
    _assert_verified(tmp_path, "FairEval")
    manifest = load_manifest("EmotionBench")
    url = file_url(manifest, manifest.file("results/PANAS_Test/crowd.xlsx"), "https://example.org")
    assert (
        url
        == f"https://example.org/CUHK-ARISE/EmotionBench/{manifest.commit}/results/PANAS%20Test/crowd.xlsx"
    )


def test_tampered_file_raises_checksum_error_and_leaves_nothing(server: SeedServer, tmp_path: Path) -> None:
    entry = load_manifest("PsychoBench").files[0]
    server.tamper.add(entry.remote)
    with pytest.raises(ChecksumError) as err:
        fetch_dataset("PsychoBench", base_url=server.url, dest=tmp_path)
    text = str(err.value)
    assert entry.path in text and entry.sha256 in text and "\n" not in text
    served = bytearray((SEED / "PsychoBench" / entry.path).read_bytes())
    served[0] ^= 0x01
    assert hashlib.sha256(bytes(served)).hexdigest() in text
    assert _files(tmp_path) == []


def test_truthfulqa_is_fetched_at_the_thesis_commit_and_read_only_when_pinned(
    server: SeedServer, tmp_path: Path
) -> None:
    from llmpsych.data import pinned_data_file

    # the 817-question file the thesis used, at fdd8ad1, verified; no --trust-unpinned needed
    folder = fetch_dataset("TruthfulQA", base_url=server.url, dest=tmp_path / "a")
    _assert_verified(tmp_path / "a", "TruthfulQA")
    assert server.requests == Counter({"TruthfulQA.csv": 1})
    assert pinned_data_file("TruthfulQA", "TruthfulQA.csv", tmp_path / "a") == folder / "TruthfulQA.csv"
    # the repository's head now serves another file: it is refused, and a copy of it is not read either
    server.tamper.add("TruthfulQA.csv")
    with pytest.raises(ChecksumError, match="checksum mismatch for TruthfulQA/TruthfulQA.csv"):
        fetch_dataset("TruthfulQA", base_url=server.url, dest=tmp_path / "b")
    assert _files(tmp_path / "b") == []
    edited = folder / "TruthfulQA.csv"
    edited.write_bytes(edited.read_bytes()[:-200])
    with pytest.raises(ChecksumError) as err:
        pinned_data_file("TruthfulQA", "TruthfulQA.csv", tmp_path / "a")
    text = str(err.value)
    assert "is not the pinned TruthfulQA file (sylinrl/TruthfulQA@fdd8ad1" in text and "\n" not in text
    assert "--trust-unpinned" in err.value.hint
    assert pinned_data_file("TruthfulQA", "TruthfulQA.csv", tmp_path / "a", trust_unpinned=True) == edited
    assert dataset_status("TruthfulQA", tmp_path / "a").mismatched == ["TruthfulQA.csv"]


def test_server_errors_are_retried(server: SeedServer, tmp_path: Path) -> None:
    entry = load_manifest("PsychoBench").files[0]
    server.fail_first[entry.remote] = 2
    fetch_dataset("PsychoBench", base_url=server.url, dest=tmp_path, backoff=0.01)
    assert server.requests[entry.remote] == 3
    _assert_verified(tmp_path, "PsychoBench")


def test_persistent_failure_is_a_clear_error_after_bounded_attempts(
    server: SeedServer, tmp_path: Path
) -> None:
    server.always_fail = True
    with pytest.raises(DataError) as err:
        fetch_dataset("PsychoBench", base_url=server.url, dest=tmp_path, backoff=0.01)
    text = str(err.value)
    assert "after 3 attempts" in text and "HTTP 500" in text and "PsychoBench/questionnaires.json" in text
    assert not isinstance(err.value, ChecksumError)
    assert sum(server.requests.values()) == 3
    assert _files(tmp_path) == []


def test_unreachable_server_is_retried_then_reported(server: SeedServer, tmp_path: Path) -> None:
    url = server.url
    server.httpd.shutdown()
    server.httpd.server_close()  # nothing listens on the port any more
    with pytest.raises(DataError, match="after 2 attempts.*Connect"):
        fetch_dataset("FairEval", base_url=url, dest=tmp_path, attempts=2, backoff=0.01)
    assert _files(tmp_path) == []


def test_not_found_is_not_retried(server: SeedServer, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="HTTP 404"):
        fetch_dataset("PsychoBench", base_url=server.url + "/mirror", dest=tmp_path, backoff=0.01)
    assert sum(server.requests.values()) == 0


@pytest.mark.parametrize("status", [429, 503])
def test_retryable_statuses_are_those_of_model_calls(server: SeedServer, tmp_path: Path, status: int) -> None:
    """The retry policy is the model calls' one (``llmpsych.models.retry``): its statuses and Retry-After."""
    assert status in RETRYABLE_STATUS
    entry = load_manifest("FairEval").files[0]
    server.fail_first[entry.remote] = 1
    server.fail_status, server.retry_after = status, "0"
    fetch_dataset("FairEval", base_url=server.url, dest=tmp_path, backoff=0.01)
    assert server.requests[entry.remote] == 2
    _assert_verified(tmp_path, "FairEval")


def test_a_status_outside_the_retry_policy_is_not_retried(server: SeedServer, tmp_path: Path) -> None:
    entry = load_manifest("FairEval").files[0]
    server.fail_first[entry.remote] = 1
    server.fail_status = 501
    assert 501 not in RETRYABLE_STATUS
    with pytest.raises(DataError, match="HTTP 501"):
        fetch_dataset("FairEval", base_url=server.url, dest=tmp_path, backoff=0.01)
    assert server.requests[entry.remote] == 1
    assert _files(tmp_path) == []


def test_a_compressed_body_is_decoded_and_verified(server: SeedServer, tmp_path: Path) -> None:
    """A server that gzips though asked for ``identity``: the file is decoded, then checked by sha256."""
    server.gzip = True
    fetch_dataset("FairEval", base_url=server.url, dest=tmp_path)
    _assert_verified(tmp_path, "FairEval")


def test_unknown_dataset_and_bad_base_url(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        fetch_dataset("NoSuchBench", dest=tmp_path)
    assert all(name in str(err.value) for name in DATASETS)
    with pytest.raises(DataError, match="http"):
        fetch_dataset("PsychoBench", base_url="ftp://example.org", dest=tmp_path)
    result = CliRunner().invoke(app, ["fetch", "NoSuchBench", "--data-dir", str(tmp_path)])
    assert isinstance(result.exception, DataError)


# -- hostile servers: a file past its pinned size, a gzip bomb, a redirect to another host ------------------
class HostileServer:
    """Answers every file request in one hostile way, counting the body bytes it managed to send."""

    def __init__(self, mode: str, redirect_to: str = "") -> None:
        self.mode = mode
        self.redirect_to = redirect_to
        self.sent = 0
        self.authorization: list[str] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.done.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self
        block = b"x" * 65536

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _write(self, data: bytes) -> None:
                self.wfile.write(data)
                with server.lock:
                    server.sent += len(data)

            def do_GET(self) -> None:
                server.authorization.append(self.headers.get("Authorization") or "")
                try:
                    if server.mode == "stall":  # headers, then silence until the test ends
                        self.send_response(200)
                        self.send_header("Content-Length", "100")
                        self.end_headers()
                        self.wfile.flush()
                        server.done.wait(60)
                    elif server.mode == "loop":  # redirects to itself, for ever
                        self.send_response(302)
                        self.send_header("Location", self.path)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    elif server.mode == "redirect":
                        self.send_response(307)
                        self.send_header("Location", server.redirect_to + self.path)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    elif server.mode == "endless":  # chunked, never ends
                        self.send_response(200)
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        while True:
                            self._write(b"%x\r\n%s\r\n" % (len(block), block))
                    elif server.mode == "unframed":  # no length: the body runs until the connection ends
                        self.send_response(200)
                        self.send_header("Connection", "close")
                        self.end_headers()
                        for _ in range(4096):  # 256 MiB
                            self._write(block)
                    elif server.mode == "long":  # announces more than the pinned size
                        self.send_response(200)
                        self.send_header("Content-Length", str(1 << 40))
                        self.end_headers()
                        while True:
                            self._write(block)
                    elif server.mode == "padded":  # a gzip stream of empty blocks: bytes, never a file
                        self.send_response(200)
                        self.send_header("Content-Encoding", "gzip")
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
                        empty = b"\x00\x00\x00\xff\xff" * 13107  # stored blocks of length 0
                        self._write(b"%x\r\n%s\r\n" % (len(header), header))
                        while True:
                            self._write(b"%x\r\n%s\r\n" % (len(empty), empty))
                    elif server.mode == "bomb":  # 1 GiB of zeros in about 1 MB of gzip
                        body = gzip_bomb()
                        self.send_response(200)
                        self.send_header("Content-Encoding", "gzip")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self._write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler


_BOMB: list[bytes] = []


def gzip_bomb() -> bytes:
    """1 GiB of zeros, gzip-compressed (made once per test session)."""
    if not _BOMB:
        import zlib

        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        zeros = bytes(1 << 20)
        _BOMB.append(b"".join(packer.compress(zeros) for _ in range(1024)) + packer.flush())
    return _BOMB[0]


@pytest.mark.parametrize("mode", ["endless", "unframed", "long", "bomb", "padded"])
def test_a_file_past_its_pinned_size_stops_the_download(mode: str, tmp_path: Path) -> None:
    """An endless chunked stream, a body without length, a huge Content-Length, a gzip bomb and an endless
    gzip stream that decodes to nothing: each is read no further than the pinned size (of decoded bytes;
    twice the size of compressed ones), a clear error, nothing left behind."""
    import tracemalloc

    entry = load_manifest("FairEval").files[0]  # question.jsonl, pinned at 12,884 bytes
    hostile = HostileServer(mode)
    tracemalloc.start()
    try:
        with pytest.raises(DataError) as err:
            fetch_dataset("FairEval", base_url=hostile.url, dest=tmp_path, attempts=3, backoff=0.01)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        hostile.close()
    text = str(err.value)
    assert "larger than its pinned size of 12884 bytes" in text and entry.path in text and "\n" not in text
    assert not isinstance(err.value, ChecksumError)
    assert len(hostile.authorization) == 1  # refused at once, not retried
    assert peak < 8 << 20, f"peak Python memory {peak} bytes"
    # what the server got out before the client hung up: socket buffers, never the 256 MiB or 1 TiB offered
    assert hostile.sent < 32 << 20, hostile.sent
    assert _files(tmp_path) == []


def test_redirect_to_another_host_drops_the_url_credentials(seed: Path, tmp_path: Path) -> None:
    """A mirror reached with user:password redirects (307) to another host: that host sees no
    Authorization header, and no message shows the password."""
    good = SeedServer(seed)
    good.thread.start()
    redirector = HostileServer("redirect", redirect_to=good.url)
    captured: list[str] = []
    try:
        base = redirector.url.replace("http://", "http://alice:canary-pw-71@")
        fetch_dataset("FairEval", base_url=base, dest=tmp_path)
        _assert_verified(tmp_path, "FairEval")
        assert redirector.authorization and all(a.startswith("Basic ") for a in redirector.authorization)
        assert len(good.authorization) == 2 and not any(good.authorization)
        good.httpd.shutdown()
        good.httpd.server_close()
        with pytest.raises(DataError) as err:
            fetch_dataset("PsychoBench", base_url=base, dest=tmp_path / "again", attempts=1)
        captured.append(str(err.value))
    finally:
        redirector.close()
    assert "canary-pw-71" not in captured[0] and "alice" not in captured[0]


def test_netrc_credentials_go_to_their_own_host_and_port_only(
    seed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$NETRC`` names the mirror's host: the mirror gets them, the server it redirects to (same address,
    another port: another origin) does not."""
    import base64

    good = SeedServer(seed)
    good.thread.start()
    redirector = HostileServer("redirect", redirect_to=good.url)
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login bob password netrc-canary-9\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    try:
        fetch_dataset("FairEval", base_url=redirector.url, dest=tmp_path / "data")
    finally:
        redirector.close()
        good.httpd.shutdown()
        good.httpd.server_close()
    _assert_verified(tmp_path / "data", "FairEval")
    basic = "Basic " + base64.b64encode(b"bob:netrc-canary-9").decode()
    assert redirector.authorization and set(redirector.authorization) == {basic}
    assert len(good.authorization) == 2 and not any(good.authorization)


def test_a_silent_server_ends_with_the_read_deadline(tmp_path: Path) -> None:
    """Headers, then nothing: each attempt ends when the server has been silent for ``timeout`` seconds."""
    hostile = HostileServer("stall")
    try:
        with pytest.raises(DataError) as err:
            fetch_dataset(
                "FairEval", base_url=hostile.url, dest=tmp_path, attempts=2, backoff=0.01, timeout=0.2
            )
    finally:
        hostile.close()
    assert "after 2 attempts" in str(err.value) and "timeout" in str(err.value)
    assert len(hostile.authorization) == 2
    assert _files(tmp_path) == []


def test_a_redirect_loop_is_a_clear_error(tmp_path: Path) -> None:
    hostile = HostileServer("loop")
    try:
        with pytest.raises(DataError, match="more than 10 redirects"):
            fetch_dataset("FairEval", base_url=hostile.url, dest=tmp_path, attempts=3, backoff=0.01)
    finally:
        hostile.close()
    assert len(hostile.authorization) == 10  # 10 requests, the 10th redirect not followed; not retried
    assert _files(tmp_path) == []

"""``llmpsych data fetch`` against a real local HTTP server that serves the official seed data."""

from __future__ import annotations

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

SEED = (Path(__file__).parents[1] / ".." / "shared" / "seed-data").resolve()

#: repository -> local dataset folder (as the seed data is laid out)
FOLDERS = {
    "CUHK-ARISE/PsychoBench": "PsychoBench",
    "CUHK-ARISE/EmotionBench": "EmotionBench",
    "CUHK-ARISE/GAMABench": "GAMABench",
    "CUHK-ARISE/MAS-Resilience": "MAS-Resilience",
    "i-Eval/FairEval": "FairEval",
    "CUHK-ARISE/LLMPersonality": "LLMPersonality",
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
        self.fail_first: dict[str, int] = {}  # remote path -> how many 500s before success
        self.always_fail = False
        self.tamper: set[str] = set()  # remote paths served with one byte changed
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
                    return self.send_error(500)
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
        app, ["fetch", "EmotionBench", "--base-url", server.url, "--dest", str(tmp_path)]
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


def test_unknown_dataset_and_bad_base_url(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        fetch_dataset("NoSuchBench", dest=tmp_path)
    assert all(name in str(err.value) for name in DATASETS)
    with pytest.raises(DataError, match="http"):
        fetch_dataset("PsychoBench", base_url="ftp://example.org", dest=tmp_path)
    result = CliRunner().invoke(app, ["fetch", "NoSuchBench", "--dest", str(tmp_path)])
    assert isinstance(result.exception, DataError)

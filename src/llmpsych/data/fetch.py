"""Download official datasets from the authors' repositories at pinned commits, verified by sha256.

Downloads go through the HTTP stack of the model calls (``llmpsych.models.http11``) and
its retry policy (``llmpsych.models.retry``: the same retryable statuses, exponential back-off with full
jitter, Retry-After honoured, a bounded number of attempts). What a server can do is bounded:

* a file is read no further than its pinned size plus one byte (a Content-Length above it is refused
  before any byte of the body; a gzip/deflate body is decoded in bounded steps, so a gzip bomb expands
  no further); the partial file is removed and nothing is saved;
* its sha256 must match the manifest before the file takes its place (a mismatch is not retried);
* connecting may take at most 15 s (or ``timeout`` if lower) and the server may go silent for at most
  ``timeout`` seconds (60 by default) between two reads;
* redirects are followed (a mirror may use them, at most 10); the credentials of a base URL's
  ``user:password@`` (or of ``~/.netrc`` / ``$NETRC`` for its host) are dropped when a redirect leaves its
  origin, and no message shows them; ``HTTP(S)_PROXY`` / ``NO_PROXY`` apply.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import ssl
import tempfile
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote, urljoin, urlsplit

from ..errors import ChecksumError, DataError
from ..models.http11 import HttpClient, Inflater, ResponseTooLarge, UndecodableBody, origin
from ..models.http_backend import MAX_ERROR_BYTES, USER_AGENT, ssl_context
from ..models.retry import (
    RETRYABLE_STATUS,
    RetriesExhausted,
    RetryableError,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
)
from ..models.urls import query_secrets, redact_url, scrub, split_userinfo
from .registry import FileEntry, Manifest, load_manifest, resolve_names
from .sources import ENV_DATA_DIR, default_data_dir, file_sha256

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
ENV_BASE_URL = "LLMPSYCH_DATA_BASE_URL"
#: Bytes read from the network at a time.
_READ_STEP = 1 << 16
#: Most seconds to wait for a connection (less when ``timeout`` is lower).
_CONNECT_TIMEOUT = 15.0
#: Most bytes taken of a file whose size is not pinned (``--trust-unpinned``).
UNPINNED_MAX_BYTES = 64 << 20
#: Most requests for one file, redirects included.
MAX_REDIRECTS = 10
_REDIRECTS = frozenset({301, 302, 303, 307, 308})

#: progress(dataset, bytes_done, bytes_total), called as files are checked and downloaded
ProgressCallback = Callable[[str, int, int], None]


@dataclass
class FetchReport:
    """The outcome of fetching one dataset."""

    dataset: str
    folder: Path
    downloaded: int = 0
    skipped: int = 0  # files already present with the right sha256
    unpinned: dict[str, str] = field(default_factory=dict)  # unchecked file -> the sha256 it has


def base_url_from(base_url: str | None = None) -> str:
    """The download base URL: argument > ``$LLMPSYCH_DATA_BASE_URL`` > raw.githubusercontent.com."""
    base = (base_url or os.environ.get(ENV_BASE_URL, "").strip() or DEFAULT_BASE_URL).rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise DataError(f"data base URL must start with http:// or https://, got {redact_url(base)!r}")
    return base


def file_url(manifest: Manifest, entry: FileEntry, base_url: str) -> str:
    """``{base}/{repository}/{commit}/{remote path}``, with the path URL-encoded (spaces as %20); an
    unpinned manifest names its branch (``ref``) instead of a commit."""
    ref = manifest.commit or manifest.ref or "HEAD"
    return f"{base_url.rstrip('/')}/{manifest.repository}/{ref}/{quote(entry.remote, safe='/')}"


def refuse_unpinned(manifests: list[Manifest]) -> None:
    """One line naming a dataset whose commit or checksums are not pinned (``--trust-unpinned`` takes
    it anyway)."""
    for manifest in manifests:
        if not manifest.pinned:
            raise DataError(
                f"{manifest.dataset} is not pinned: its commit and sha256 could not be verified when "
                f"llmpsych was released, so its download cannot be checked",
                f"pass --trust-unpinned to fetch {manifest.repository}@{manifest.ref or 'HEAD'} unchecked "
                "(a run records the sha256 of the file it reads), or put the file in the data directory",
            )


def fetch_dataset(
    name: str,
    base_url: str | None = None,
    dest: Path | None = None,
    progress: ProgressCallback | None = None,
    *,
    attempts: int = 3,
    backoff: float = 0.5,
    timeout: float = 60.0,
    trust_unpinned: bool = False,
) -> Path:
    """Fetch one dataset (or ``all``) into ``dest`` (default ``<user cache>/data``).

    Returns the dataset folder, or the data directory itself for ``all``. Files already present with the
    right sha256 are skipped, so an interrupted fetch resumes.
    """
    names = resolve_names(name)
    reports = fetch_datasets(
        names,
        base_url,
        dest,
        progress,
        attempts=attempts,
        backoff=backoff,
        timeout=timeout,
        trust_unpinned=trust_unpinned,
    )
    return reports[0].folder.parent if name.strip().lower() == "all" else reports[0].folder


def fetch_datasets(
    names: list[str],
    base_url: str | None = None,
    dest: Path | None = None,
    progress: ProgressCallback | None = None,
    *,
    attempts: int = 3,
    backoff: float = 0.5,
    timeout: float = 60.0,
    trust_unpinned: bool = False,
) -> list[FetchReport]:
    """Fetch several datasets over one HTTP connection pool; one report per dataset.

    A dataset that is not pinned (no commit or sha256 in its manifest) is refused unless
    ``trust_unpinned``; then its files are taken unchecked from its branch, at most
    :data:`UNPINNED_MAX_BYTES` each, and their sha256 is in the report (``unpinned``).

    Each file gets at most ``attempts`` attempts, waiting up to ``backoff`` x 2^(retry - 1) seconds
    (full jitter) before each retry. Runs its own event loop, so it is called from synchronous code.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    if not timeout > 0:
        raise ValueError("timeout must be positive")
    base = base_url_from(base_url)
    root = Path(dest).expanduser() if dest is not None else default_data_dir()
    manifests = [load_manifest(n) for n in names]
    if not trust_unpinned:
        refuse_unpinned(manifests)
    policy = RetryPolicy(max_retries=attempts - 1, base_delay=backoff)
    return asyncio.run(_fetch_all(manifests, base, root, progress, policy, timeout))


async def _fetch_all(
    manifests: list[Manifest],
    base: str,
    root: Path,
    progress: ProgressCallback | None,
    policy: RetryPolicy,
    timeout: float,
) -> list[FetchReport]:
    session = Session(timeout)
    try:
        return [await _fetch_one(session, m, base, root / m.dataset, progress, policy) for m in manifests]
    finally:
        await session.close()


class Session:
    """GET requests over the model calls' HTTP client, one keep-alive pool per origin.

    As for any download tool, ``HTTP(S)_PROXY`` / ``NO_PROXY`` and ``~/.netrc`` apply. The body is asked
    for uncompressed and handed over as it comes (a server that compresses anyway is decoded by the
    caller, in bounded steps); connecting may take ``min(timeout, 15)`` s and the server may stay silent
    for ``timeout`` s between two reads, with no deadline for the whole file."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._clients: dict[tuple[str, str, int], HttpClient] = {}

    def client(self, url: str) -> HttpClient:
        key = origin(url)
        if key not in self._clients:
            self._clients[key] = HttpClient(
                url,
                "GET",
                {},
                limit=4,
                timeout=None,
                ssl_context=ssl_context() if key[0] == "https" else None,
                connect_timeout=min(self._timeout, _CONNECT_TIMEOUT),
                idle_timeout=self._timeout,
                decode=False,
            )
        return self._clients[key]

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _netrc_auth(host: str) -> str | None:
    """``Authorization`` from ``$NETRC`` or ``~/.netrc`` for ``host``, if it names the host."""
    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    if not os.path.isfile(path):
        return None
    import netrc

    try:
        found = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    if not found:
        return None
    login, account, password = found
    return _basic(login or account or "", password or "")


async def _fetch_one(
    session: Session,
    manifest: Manifest,
    base: str,
    folder: Path,
    progress: ProgressCallback | None,
    policy: RetryPolicy,
) -> FetchReport:
    report = FetchReport(dataset=manifest.dataset, folder=folder)
    total = manifest.total_size

    def tell(current: int) -> None:
        if progress is not None:
            progress(manifest.dataset, current, total)

    tell(0)
    made = [p for p in (folder, *folder.parents) if not p.exists()]  # innermost first
    try:
        await _fetch_files(session, manifest, base, folder, report, tell, policy)
    except DataError:
        _remove_empty(made)  # a failed first fetch leaves no empty dataset folder to be read as "incomplete"
        raise
    return report


def _remove_empty(made: list[Path]) -> None:
    """Remove the folders this fetch created (innermost first) where nothing was saved in them."""
    if not made:
        return
    for inner, _, _ in os.walk(made[0], topdown=False):
        with suppress(OSError):  # only an empty folder can be removed
            os.rmdir(inner)
    for folder in made:
        with suppress(OSError):
            folder.rmdir()


async def _fetch_files(
    session: Session,
    manifest: Manifest,
    base: str,
    folder: Path,
    report: FetchReport,
    tell: Callable[[int], None],
    policy: RetryPolicy,
) -> None:
    done = 0

    def told(current: int) -> None:
        tell(done + current)

    for entry in manifest.files:
        target = folder / entry.path
        if _matches(target, entry):
            report.skipped += 1
        else:
            url = file_url(manifest, entry, base)
            limited = entry if entry.size is not None else replace(entry, size=UNPINNED_MAX_BYTES)
            await _download(session, url, target, manifest.dataset, limited, told, policy)
            report.downloaded += 1
        if entry.sha256 is None:
            report.unpinned[entry.path] = file_sha256(target)
        done += entry.size or 0
        told(0)


def _matches(path: Path, entry: FileEntry) -> bool:
    """A present file with the pinned size and sha256 (an unpinned file: present at all)."""
    if entry.sha256 is None:
        return path.is_file()
    return path.is_file() and path.stat().st_size == entry.size and file_sha256(path) == entry.sha256


async def _download(
    session: Session,
    url: str,
    target: Path,
    dataset: str,
    entry: FileEntry,
    tell: Callable[[int], None],
    policy: RetryPolicy,
) -> None:
    """Download with the shared retry policy; the target appears only once its sha256 has been verified."""

    async def attempt() -> None:
        await _download_once(session, url, target, dataset, entry, tell)

    try:
        await call_with_retries(attempt, policy, on_retry=lambda _attempt, _reason: tell(0))
    except RetriesExhausted as exc:
        raise DataError(
            f"could not download {dataset}/{entry.path} from {redact_url(url)} after {len(exc.reasons)} "
            f"attempts (last: {exc.reasons[-1]})",
            f"check the network; offline, point --data-dir / {ENV_DATA_DIR} at a folder holding {dataset}/ "
            "(a copy of the authors' repository), or --base-url / LLMPSYCH_DATA_BASE_URL at a mirror; "
            "a re-run resumes where this one stopped",
        ) from None


def _fatal(dataset: str, entry: FileEntry, url: str, reason: str) -> DataError:
    return DataError(
        f"could not download {dataset}/{entry.path} from {redact_url(url)}: {reason}",
        "check --base-url / LLMPSYCH_DATA_BASE_URL",
    )


def _too_big(dataset: str, entry: FileEntry, url: str, got: str) -> DataError:
    return DataError(
        f"{dataset}/{entry.path} from {redact_url(url)} is larger than its pinned size of {entry.size} "
        f"bytes ({got}); the download was stopped and nothing was saved",
        "the server holds a different file than the pinned commit",
    )


async def _download_once(
    session: Session,
    url: str,
    target: Path,
    dataset: str,
    entry: FileEntry,
    tell: Callable[[int], None],
) -> None:
    """One download. It stops reading as soon as the file exceeds its pinned size (a Content-Length
    above it is refused before any byte of the body), so an endless or oversized body costs at most
    ``entry.size`` bytes on disk and a few network chunks of memory."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    secrets = query_secrets(url) + list(split_userinfo(url)[1] or ())
    try:
        with os.fdopen(fd, "wb") as fh:
            try:
                received, got = await _receive(session, url, fh, dataset, entry, tell)
            except TimeoutError:
                raise RetryableError("timeout: no connection, or the server went silent") from None
            except ssl.SSLCertVerificationError:
                raise _fatal(dataset, entry, url, "the server's TLS certificate does not verify") from None
            except OSError as exc:  # refused, reset, dropped mid-body, malformed, ...
                raise RetryableError(scrub(f"{type(exc).__name__}: {exc}", secrets)) from None
            fh.flush()
            os.fsync(fh.fileno())
        if entry.sha256 is not None and got != entry.sha256:
            raise ChecksumError(
                f"checksum mismatch for {dataset}/{entry.path} from {redact_url(url)}: "
                f"expected sha256 {entry.sha256}, got {got} ({received} bytes, expected {entry.size})",
                "the file was not saved; the server may hold a different version of the data",
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


async def _receive(
    session: Session,
    url: str,
    fh: BinaryIO,
    dataset: str,
    entry: FileEntry,
    tell: Callable[[int], None],
) -> tuple[int, str]:
    """GET ``url`` into ``fh``, following at most :data:`MAX_REDIRECTS` redirects: (bytes written, their
    sha256). At most ``entry.size + 1`` decoded bytes are taken, and at most twice the size (plus 64 KiB)
    of compressed ones."""
    first = url
    url, credentials = split_userinfo(url)
    home = origin(url)
    auth = _basic(*credentials) if credentials else _netrc_auth(home[1])
    for _ in range(MAX_REDIRECTS):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _fatal(dataset, entry, first, f"cannot follow a redirect to {redact_url(url)[:80]!r}")
        if auth is not None and origin(url) != home:
            auth = None  # the credentials stay with the origin they were given for
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        if auth is not None:
            headers["Authorization"] = auth
        client = session.client(url)
        body = _Body(fh, dataset, entry, url, tell)
        try:
            status, response_headers, _ = await client.request(
                None,
                4 * body.wire_cap,
                MAX_ERROR_BYTES,
                head=client.head("GET", url, headers),
                on_head=body.start,
            )
        except ResponseTooLarge:  # a Content-Length far past what a compressed file may take
            raise _too_big(dataset, entry, url, f"more than {body.wire_cap} bytes on the wire") from None
        if status in _REDIRECTS and "location" in response_headers:
            url = split_userinfo(urljoin(url, response_headers["location"]))[0]
            continue
        if status in RETRYABLE_STATUS:
            raise RetryableError(f"HTTP {status}", parse_retry_after(response_headers.get("retry-after")))
        if status != 200:
            raise DataError(
                f"could not download {dataset}/{entry.path}: HTTP {status} from {redact_url(url)}",
                "check --base-url / LLMPSYCH_DATA_BASE_URL",
            )
        return body.finish()
    raise _fatal(dataset, entry, first, f"more than {MAX_REDIRECTS} redirects")


class _Body:
    """A file's body as it arrives: decoded if the server compressed it, bounded, hashed, written."""

    def __init__(
        self, fh: BinaryIO, dataset: str, entry: FileEntry, url: str, tell: Callable[[int], None]
    ) -> None:
        self.fh, self.dataset, self.entry, self.url, self.tell = fh, dataset, entry, url, tell
        self.size = entry.size if entry.size is not None else UNPINNED_MAX_BYTES
        self.wire_cap = 2 * self.size + _READ_STEP
        self.inflater: Inflater | None = None
        self.coding = "identity"
        self.digest = hashlib.sha256()
        self.wire = self.received = 0

    def start(self, status: int, headers: dict[str, str]) -> Callable[[bytes], None] | None:
        """The head of a response: a 200's body is taken here (anything else is read for its status)."""
        if status != 200:
            return None
        coding = headers.get("content-encoding", "").strip().lower() or "identity"
        length = headers.get("content-length", "")
        if coding == "identity" and length.isascii() and length.isdigit() and int(length) > self.size:
            raise self._too_big(f"Content-Length {length}")
        if coding not in ("identity", "gzip", "x-gzip", "deflate"):
            raise DataError(
                f"{self.dataset}/{self.entry.path} from {redact_url(self.url)}: "
                f"unsupported content-encoding {coding[:40]!r}"
            )
        self.coding = coding
        self.inflater = None if coding == "identity" else Inflater(coding)
        self.wire_cap = self.size + 1 if self.inflater is None else 2 * self.size + _READ_STEP
        return self.take

    def _too_big(self, got: str) -> DataError:
        return _too_big(self.dataset, self.entry, self.url, got)

    def take(self, data: bytes) -> None:
        inflater = self.inflater
        if inflater is not None and inflater.eof:
            return  # anything after the end of the compressed stream is not part of the file
        self.wire += len(data)
        try:
            chunks = [data] if inflater is None else inflater.feed(data, self.size - self.received)
        except ResponseTooLarge:
            raise self._too_big(f"more than {self.size} bytes sent") from None
        except UndecodableBody:
            raise RetryableError(f"undecodable {self.coding} body") from None
        for chunk in chunks:
            self.received += len(chunk)
            if self.received > self.size:
                raise self._too_big(f"more than {self.size} bytes sent")
            self.fh.write(chunk)
            self.digest.update(chunk)
        self.tell(self.received)
        if self.wire >= self.wire_cap and not (inflater is not None and inflater.eof):
            raise self._too_big(f"more than {self.wire_cap} bytes on the wire")

    def finish(self) -> tuple[int, str]:
        if self.inflater is not None and not self.inflater.eof and self.wire:
            raise RetryableError(f"truncated {self.coding} body")
        return self.received, self.digest.hexdigest()

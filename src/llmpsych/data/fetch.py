"""Download official datasets from the authors' repositories at pinned commits, verified by sha256.

Downloads go through the HTTP stack of the model calls (aiohttp, ``llmpsych.models.http_backend``) and
its retry policy (``llmpsych.models.retry``: the same retryable statuses, exponential back-off with full
jitter, Retry-After honoured, a bounded number of attempts). What a server can do is bounded:

* a file is read no further than its pinned size plus one byte (a Content-Length above it is refused
  before any byte of the body; a gzip/deflate body is decoded in bounded steps, so a gzip bomb expands
  no further); the partial file is removed and nothing is saved;
* its sha256 must match the manifest before the file takes its place (a mismatch is not retried);
* connecting may take at most 15 s (or ``timeout`` if lower) and the server may go silent for at most
  ``timeout`` seconds (60 by default) between two reads;
* redirects are followed (a mirror may use them, at most 10); the credentials of a base URL's
  ``user:password@`` are dropped when a redirect leaves its origin, and no message shows them.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

import aiohttp

from ..errors import ChecksumError, DataError
from ..models.http_backend import USER_AGENT, Inflater, ResponseTooLarge, UndecodableBody, ssl_context
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
    # trust_env: HTTP(S)_PROXY, NO_PROXY and ~/.netrc apply, as for any download tool. The body is asked
    # for uncompressed; a server that compresses anyway is decoded here, in bounded steps.
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=4, ssl=ssl_context() if base.startswith("https:") else True),
        headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
        timeout=aiohttp.ClientTimeout(
            total=None, sock_connect=min(timeout, _CONNECT_TIMEOUT), sock_read=timeout
        ),
        auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=True,
    )
    async with session:
        return [await _fetch_one(session, m, base, root / m.dataset, progress, policy) for m in manifests]


async def _fetch_one(
    session: aiohttp.ClientSession,
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
    session: aiohttp.ClientSession,
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
    session: aiohttp.ClientSession,
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
    session: aiohttp.ClientSession,
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
            except aiohttp.TooManyRedirects:
                raise _fatal(dataset, entry, url, "more than 10 redirects") from None
            except aiohttp.InvalidURL as exc:  # also a redirect to a non-HTTP or malformed address
                raise _fatal(dataset, entry, url, f"cannot follow {type(exc).__name__}") from None
            except aiohttp.ClientConnectorCertificateError:
                raise _fatal(dataset, entry, url, "the server's TLS certificate does not verify") from None
            except (aiohttp.ClientError, OSError) as exc:  # refused, reset, dropped mid-body, ...
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
    session: aiohttp.ClientSession,
    url: str,
    fh: BinaryIO,
    dataset: str,
    entry: FileEntry,
    tell: Callable[[int], None],
) -> tuple[int, str]:
    """GET ``url`` into ``fh``: (bytes written, their sha256). At most ``entry.size + 1`` decoded bytes
    are taken, and at most twice the size (plus 64 KiB) of compressed ones."""
    size = entry.size if entry.size is not None else UNPINNED_MAX_BYTES
    async with session.get(url) as response:
        if response.status in RETRYABLE_STATUS:
            raise RetryableError(
                f"HTTP {response.status}", parse_retry_after(response.headers.get("Retry-After"))
            )
        if response.status != 200:
            raise DataError(
                f"could not download {dataset}/{entry.path}: HTTP {response.status} from {redact_url(url)}",
                "check --base-url / LLMPSYCH_DATA_BASE_URL",
            )
        coding = response.headers.get("Content-Encoding", "").strip().lower() or "identity"
        length = response.content_length
        if coding == "identity" and length is not None and length > size:
            raise _too_big(dataset, entry, url, f"Content-Length {length}")
        if coding not in ("identity", "gzip", "x-gzip", "deflate"):
            raise DataError(
                f"{dataset}/{entry.path} from {redact_url(url)}: unsupported content-encoding {coding[:40]!r}"
            )
        inflater = None if coding == "identity" else Inflater(coding)
        wire_cap = size + 1 if inflater is None else 2 * size + _READ_STEP
        digest = hashlib.sha256()
        wire = received = 0
        while wire < wire_cap and (data := await response.content.read(min(_READ_STEP, wire_cap - wire))):
            wire += len(data)
            try:
                chunks = [data] if inflater is None else inflater.feed(data, size - received)
            except ResponseTooLarge:
                raise _too_big(dataset, entry, url, f"more than {size} bytes sent") from None
            except UndecodableBody:
                raise RetryableError(f"undecodable {coding} body") from None
            for chunk in chunks:
                received += len(chunk)
                if received > size:
                    raise _too_big(dataset, entry, url, f"more than {size} bytes sent")
                fh.write(chunk)
                digest.update(chunk)
            tell(received)
            if inflater is not None and inflater.eof:
                break  # anything after the end of the compressed stream is not part of the file
        ended = inflater is not None and inflater.eof
        if wire >= wire_cap and not ended:
            raise _too_big(dataset, entry, url, f"more than {wire_cap} bytes on the wire")
        if inflater is not None and not ended and wire:
            raise RetryableError(f"truncated {coding} body")
        return received, digest.hexdigest()

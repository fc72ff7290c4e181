"""Download official datasets from the authors' repositories at pinned commits, verified by sha256."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx

from .. import __version__
from ..errors import ChecksumError, DataError
from ..models.urls import query_secrets, redact_url, scrub, split_userinfo
from .registry import FileEntry, Manifest, load_manifest, resolve_names
from .sources import default_data_dir, file_sha256

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
ENV_BASE_URL = "LLMPSYCH_DATA_BASE_URL"

#: progress(dataset, bytes_done, bytes_total), called as files are checked and downloaded
ProgressCallback = Callable[[str, int, int], None]


@dataclass
class FetchReport:
    """The outcome of fetching one dataset."""

    dataset: str
    folder: Path
    downloaded: int = 0
    skipped: int = 0  # files already present with the right sha256


class _Retryable(Exception):
    """A network error or server-side failure worth another attempt."""


def base_url_from(base_url: str | None = None) -> str:
    """The download base URL: argument > ``$LLMPSYCH_DATA_BASE_URL`` > raw.githubusercontent.com."""
    base = (base_url or os.environ.get(ENV_BASE_URL, "").strip() or DEFAULT_BASE_URL).rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise DataError(f"data base URL must start with http:// or https://, got {redact_url(base)!r}")
    return base


def file_url(manifest: Manifest, entry: FileEntry, base_url: str) -> str:
    """``{base}/{repository}/{commit}/{remote path}``, with the path URL-encoded (spaces as %20)."""
    return f"{base_url.rstrip('/')}/{manifest.repository}/{manifest.commit}/{quote(entry.remote, safe='/')}"


def fetch_dataset(
    name: str,
    base_url: str | None = None,
    dest: Path | None = None,
    progress: ProgressCallback | None = None,
    *,
    attempts: int = 3,
    backoff: float = 0.5,
    timeout: float = 60.0,
) -> Path:
    """Fetch one dataset (or ``all``) into ``dest`` (default ``<user cache>/data``).

    Returns the dataset folder, or the data directory itself for ``all``. Files already present with the
    right sha256 are skipped, so an interrupted fetch resumes.
    """
    names = resolve_names(name)
    reports = fetch_datasets(
        names, base_url, dest, progress, attempts=attempts, backoff=backoff, timeout=timeout
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
) -> list[FetchReport]:
    """Fetch several datasets over one HTTP connection pool; one report per dataset."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    base = base_url_from(base_url)
    root = Path(dest).expanduser() if dest is not None else default_data_dir()
    manifests = [load_manifest(n) for n in names]
    # Redirects are followed (a mirror may use them); httpx drops the Authorization header of a base
    # URL's userinfo when a redirect leaves its origin. The body is asked for uncompressed.
    client = httpx.Client(
        timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0)),
        follow_redirects=True,
        headers={"User-Agent": f"llmpsych/{__version__}", "Accept-Encoding": "identity"},
    )
    with client:
        return [_fetch_one(client, m, base, root / m.dataset, progress, attempts, backoff) for m in manifests]


def _fetch_one(
    client: httpx.Client,
    manifest: Manifest,
    base: str,
    folder: Path,
    progress: ProgressCallback | None,
    attempts: int,
    backoff: float,
) -> FetchReport:
    report = FetchReport(dataset=manifest.dataset, folder=folder)
    total = manifest.total_size
    done = 0

    def tell(current: int) -> None:
        if progress is not None:
            progress(manifest.dataset, done + current, total)

    tell(0)
    for entry in manifest.files:
        target = folder / entry.path
        if _matches(target, entry):
            report.skipped += 1
        else:
            url = file_url(manifest, entry, base)
            _download(client, url, target, manifest.dataset, entry, tell, attempts, backoff)
            report.downloaded += 1
        done += entry.size
        tell(0)
    return report


def _matches(path: Path, entry: FileEntry) -> bool:
    return path.is_file() and path.stat().st_size == entry.size and file_sha256(path) == entry.sha256


def _download(
    client: httpx.Client,
    url: str,
    target: Path,
    dataset: str,
    entry: FileEntry,
    tell: Callable[[int], None],
    attempts: int,
    backoff: float,
) -> None:
    """Download with bounded retries; the target appears only once its sha256 has been verified."""
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            _download_once(client, url, target, dataset, entry, tell)
            return
        except _Retryable as exc:
            last = str(exc)
            tell(0)
            if attempt < attempts:
                time.sleep(backoff * 2 ** (attempt - 1))
    raise DataError(
        f"could not download {dataset}/{entry.path} from {redact_url(url)} after {attempts} attempts "
        f"(last: {last})",
        "check the network, or point --base-url / LLMPSYCH_DATA_BASE_URL at a mirror; "
        "a re-run resumes where this one stopped",
    )


#: Bytes decoded at a time from a compressed body: with the pinned size, what bounds memory per file.
_DECODE_STEP = 1 << 16


def _decoded(raw: Iterator[bytes], coding: str | None) -> Iterator[bytes]:
    """The body's bytes, decoded in steps of at most :data:`_DECODE_STEP` (a gzip bomb expands no further
    than the caller reads before it stops at the pinned size)."""
    coding = (coding or "identity").strip().lower()
    if coding == "identity":
        yield from raw
        return
    if coding not in ("gzip", "x-gzip", "deflate"):
        raise DataError(f"unsupported content-encoding {coding!r}")
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS if "gzip" in coding else zlib.MAX_WBITS)
    try:
        for chunk in raw:
            data = chunk
            while data:
                yield decoder.decompress(data, _DECODE_STEP)
                data = decoder.unconsumed_tail
    except zlib.error:
        raise _Retryable(f"undecodable {coding} body") from None


def _too_big(dataset: str, entry: FileEntry, url: str, got: str) -> DataError:
    return DataError(
        f"{dataset}/{entry.path} from {redact_url(url)} is larger than its pinned size of {entry.size} "
        f"bytes ({got}); the download was stopped and nothing was saved",
        "the server holds a different file than the pinned commit",
    )


def _download_once(
    client: httpx.Client,
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
        digest = hashlib.sha256()
        received = 0
        with os.fdopen(fd, "wb") as fh:
            try:
                with client.stream("GET", url) as response:
                    if response.status_code >= 500 or response.status_code == 429:
                        raise _Retryable(f"HTTP {response.status_code}")
                    if response.status_code != 200:
                        raise DataError(
                            f"could not download {dataset}/{entry.path}: HTTP {response.status_code} "
                            f"from {redact_url(url)}",
                            "check --base-url / LLMPSYCH_DATA_BASE_URL",
                        )
                    coding = response.headers.get("content-encoding")
                    length = response.headers.get("content-length", "")
                    identity = (coding or "identity").strip().lower() == "identity"
                    if identity and length.isdigit() and int(length) > entry.size:
                        raise _too_big(dataset, entry, url, f"Content-Length {length}")
                    for chunk in _decoded(response.iter_raw(), coding):
                        received += len(chunk)
                        if received > entry.size:
                            raise _too_big(dataset, entry, url, f"more than {entry.size} bytes sent")
                        fh.write(chunk)
                        digest.update(chunk)
                        tell(received)
            except httpx.TransportError as exc:
                raise _Retryable(scrub(f"{type(exc).__name__}: {exc}", secrets)) from exc
            fh.flush()
            os.fsync(fh.fileno())
        got = digest.hexdigest()
        if got != entry.sha256:
            raise ChecksumError(
                f"checksum mismatch for {dataset}/{entry.path} from {redact_url(url)}: "
                f"expected sha256 {entry.sha256}, got {got} ({received} bytes, expected {entry.size})",
                "the file was not saved; the server may hold a different version of the data",
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)

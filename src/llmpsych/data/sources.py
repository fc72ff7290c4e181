"""Where the official datasets are read from: the data directory, its dataset folders and their files."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ChecksumError, DataError
from ..paths import cache_dir
from .registry import DATASETS, Manifest, canonical_name, load_manifest

ENV_DATA_DIR = "LLMPSYCH_DATA_DIR"


def default_data_dir() -> Path:
    """The folder ``llmpsych data fetch`` downloads into: ``<user cache>/data``."""
    return cache_dir() / "data"


def resolve_data_dir(explicit: Path | None = None) -> Path:
    """The data directory: ``--data-dir`` beats ``$LLMPSYCH_DATA_DIR`` beats ``<user cache>/data``.

    A folder named explicitly (option or environment) must exist; the default one need not.
    """
    if explicit is not None:
        return _existing_dir(Path(explicit), "--data-dir", "pass an existing folder, or leave out --data-dir")
    env = os.environ.get(ENV_DATA_DIR, "").strip()
    if env:
        return _existing_dir(
            Path(env), f"${ENV_DATA_DIR}", f"point {ENV_DATA_DIR} at an existing folder, or unset it"
        )
    return default_data_dir()


def _existing_dir(path: Path, origin: str, fix: str) -> Path:
    path = path.expanduser()
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise DataError(
            f"data directory {path} (from {origin}) {what}",
            f"{fix} to use the download cache, which `llmpsych data fetch all` fills",
        )
    return path.resolve()


def dataset_path(dataset: str, data_dir: Path | None = None) -> Path:
    """The folder of one official dataset inside the data directory; DataError if it is absent."""
    name = canonical_name(dataset)
    root = resolve_data_dir(data_dir)
    folder = root / name
    if not folder.is_dir():
        raise DataError(
            f"dataset {name} not found in {root}",
            f"run `llmpsych data fetch {name}`, or pass --data-dir / set {ENV_DATA_DIR} "
            f"to a folder that contains {name}/",
        )
    return folder


def data_file(dataset: str, relpath: str | Path, data_dir: Path | None = None) -> Path:
    """A file of an official dataset, e.g. ``data_file("PsychoBench", "questionnaires.json")``."""
    rel = Path(relpath)
    if rel.is_absolute() or ".." in rel.parts:
        raise DataError(f"data file path must be relative to the dataset folder, got {relpath}")
    folder = dataset_path(dataset, data_dir)
    path = folder / rel
    if not path.is_file():
        name = canonical_name(dataset)
        raise DataError(
            f"{name} file {rel.as_posix()} not found in {folder}",
            f"the folder is incomplete: run `llmpsych data fetch {name}` to restore it at the pinned commit, "
            f"or pass --data-dir / set {ENV_DATA_DIR} to a folder holding a complete {name}/",
        )
    return path


#: The flag that lets a run read a data file other than the pinned one (``data fetch`` has the same name).
TRUST_UNPINNED_FLAG = "--trust-unpinned"


def is_pinned_copy(dataset: str, relpath: str, sha256: str) -> bool:
    """Whether ``sha256`` is the one the dataset's manifest pins for ``relpath`` (False if none is pinned)."""
    entry = load_manifest(dataset).file(relpath)
    return entry is not None and entry.sha256 is not None and entry.sha256 == sha256


def pinned_data_file(
    dataset: str, relpath: str, data_dir: Path | None = None, *, trust_unpinned: bool = False
) -> Path:
    """:func:`data_file`, refused (one line, :class:`ChecksumError`) unless its sha256 is the pinned one.

    Published figures were computed on the pinned file; another version (a repository's revised head, an
    edited copy) would silently measure something else. ``trust_unpinned`` reads it anyway: the caller
    must then say that published figures are not comparable (:func:`is_pinned_copy` tells it).
    """
    path = data_file(dataset, relpath, data_dir)
    if trust_unpinned:
        return path
    manifest = load_manifest(dataset)
    entry = manifest.file(relpath)
    if entry is None or entry.sha256 is None:
        raise ChecksumError(
            f"{manifest.dataset}/{relpath} has no pinned checksum, so {path} cannot be checked",
            f"pass {TRUST_UNPINNED_FLAG} to read it anyway (published figures are then not comparable)",
        )
    got = file_sha256(path)
    if got != entry.sha256:
        raise ChecksumError(
            f"{path} is not the pinned {manifest.dataset} file ({manifest.source}, sha256 "
            f"{entry.sha256[:12]}…, {entry.size} bytes): it has sha256 {got[:12]}…, "
            f"{path.stat().st_size} bytes",
            f"`llmpsych data fetch {manifest.dataset}` puts the pinned file in place; or pass "
            f"{TRUST_UNPINNED_FLAG} to use this one, whose figures are then not comparable with the "
            "published ones",
        )
    return path


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class DatasetStatus:
    """What ``llmpsych data list`` reports for one dataset."""

    manifest: Manifest
    location: Path | None  # the dataset folder, or None if it is absent
    present: int = 0  # manifest files found in the folder
    mismatched: list[str] = field(default_factory=list)  # present files whose sha256 differs

    @property
    def dataset(self) -> str:
        """The dataset name."""
        return self.manifest.dataset

    @property
    def total(self) -> int:
        """Number of files the manifest lists."""
        return len(self.manifest.files)

    @property
    def complete(self) -> bool:
        """Every file present."""
        return self.present == self.total

    @property
    def checksums_ok(self) -> bool | None:
        """True if every present file matches, False if one does not, None if none were checked."""
        if self.location is None or self.present == 0:
            return None
        return not self.mismatched


def dataset_status(dataset: str, data_dir: Path | None = None, verify: bool = True) -> DatasetStatus:
    """Where a dataset is found, how many of its manifest's files are present and whether they match."""
    return _status(load_manifest(dataset), resolve_data_dir(data_dir), verify)


def data_status(data_dir: Path | None = None, verify: bool = True) -> list[DatasetStatus]:
    """The status of every official dataset, in registry order."""
    root = resolve_data_dir(data_dir)
    return [_status(load_manifest(name), root, verify) for name in DATASETS]


def _status(manifest: Manifest, root: Path, verify: bool) -> DatasetStatus:
    folder = root / manifest.dataset
    if not folder.is_dir():
        return DatasetStatus(manifest=manifest, location=None)
    status = DatasetStatus(manifest=manifest, location=folder)
    for entry in manifest.files:
        path = folder / entry.path
        if not path.is_file():
            continue
        status.present += 1
        if (
            verify
            and entry.sha256 is not None
            and (path.stat().st_size != entry.size or file_sha256(path) != entry.sha256)
        ):
            status.mismatched.append(entry.path)
    return status

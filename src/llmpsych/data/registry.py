"""The registry of official datasets: one JSON manifest per dataset (repository, pinned commit, files)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..errors import DataError

#: The official datasets, in the order they are listed and fetched.
DATASETS: tuple[str, ...] = (
    "PsychoBench",
    "EmotionBench",
    "GAMABench",
    "MAS-Resilience",
    "FairEval",
    "LLMPersonality",
)
#: Public question sets a study borrowed (PsychoBench's validity check): fetched by name, never by ``all``.
QUESTION_SETS: tuple[str, ...] = ("TruthfulQA", "SafetyQA")


@dataclass(frozen=True)
class FileEntry:
    """One file of a dataset: where it lives locally and in the authors' repository."""

    path: str  # relative to the dataset folder, '/'-separated
    remote: str  # path inside the repository at the pinned commit
    sha256: str | None  # None: not pinned (the file could not be checked when the entry was written)
    size: int | None


@dataclass(frozen=True)
class Manifest:
    """A dataset's source (repository at a pinned commit), licence note and expected files."""

    dataset: str
    repository: str
    commit: str | None  # None: not pinned; ``ref`` (a branch) is fetched instead
    licence: str
    files: tuple[FileEntry, ...]
    note: str = ""
    ref: str = ""

    @property
    def pinned(self) -> bool:
        """Whether the commit and every file's sha256 and size are known (``data fetch`` verifies them)."""
        return self.commit is not None and all(f.sha256 and f.size is not None for f in self.files)

    @property
    def source(self) -> str:
        """``owner/repo@commit`` with the commit shortened to 7 characters (``@ref, unpinned`` if none)."""
        if self.commit is None:
            return f"{self.repository}@{self.ref or 'HEAD'} (unpinned)"
        return f"{self.repository}@{self.commit[:7]}"

    @property
    def total_size(self) -> int:
        """Bytes of all files together (unpinned files count 0)."""
        return sum(f.size or 0 for f in self.files)

    def file(self, path: str) -> FileEntry | None:
        """The entry for a local relative path, or None if the manifest does not list it."""
        wanted = path.replace("\\", "/").lstrip("/")
        return next((f for f in self.files if f.path == wanted), None)


def canonical_name(name: str) -> str:
    """The registered spelling of a dataset name (case-insensitive); DataError if unknown."""
    for known in DATASETS + QUESTION_SETS:
        if known.lower() == name.strip().lower():
            return known
    raise DataError(
        f"unknown dataset {name!r}; known datasets: {', '.join(DATASETS + QUESTION_SETS)}",
        "use one of these names, or 'all' with `llmpsych data fetch`",
    )


def resolve_names(name: str) -> list[str]:
    """Dataset names for a command-line argument: one dataset, or every dataset for ``all``."""
    if name.strip().lower() == "all":
        return list(DATASETS)
    return [canonical_name(name)]


@cache
def load_manifest(name: str) -> Manifest:
    """The packaged manifest of a dataset (name matched case-insensitively)."""
    dataset = canonical_name(name)
    resource = resources.files("llmpsych.data") / "manifests" / f"{dataset}.json"
    try:
        raw = json.loads(resource.read_text(encoding="utf-8"))
        files = tuple(
            FileEntry(
                path=_joined(f["path"]),
                remote=_joined(f["remote"]),
                sha256=f["sha256"] or None,
                size=None if f["size"] is None else int(f["size"]),
            )
            for f in raw["files"]
        )
        return Manifest(
            dataset=raw["dataset"],
            repository=raw["repository"],
            commit=raw["commit"],
            licence=raw["licence"],
            files=files,
            note=raw.get("note", ""),
            ref=raw.get("ref", ""),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(
            f"the packaged manifest of {dataset} is missing or malformed ({exc})", "reinstall llmpsych"
        ) from exc


def _joined(path: str | list[str]) -> str:
    """A manifest path, stored as a list of components (or a '/'-separated string), as one string."""
    if isinstance(path, str):
        return path
    if not path or not all(isinstance(part, str) and part for part in path):
        raise ValueError(f"bad path {path!r}")
    return "/".join(path)


def all_manifests() -> list[Manifest]:
    """The manifests of every dataset, in registry order."""
    return [load_manifest(name) for name in DATASETS]

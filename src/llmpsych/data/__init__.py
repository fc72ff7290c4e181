"""Official datasets: the registry of pinned sources, the local data directory, and fetching.

Names are imported on first use, so importing the package (e.g. for ``--help``) stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import first_use

if TYPE_CHECKING:
    from .fetch import (
        fetch_dataset,
    )
    from .registry import (
        DATASETS,
        QUESTION_SETS,
        FileEntry,
        Manifest,
        all_manifests,
        load_manifest,
    )
    from .sources import (
        DatasetStatus,
        data_file,
        data_status,
        dataset_path,
        dataset_status,
        default_data_dir,
        file_sha256,
        is_pinned_copy,
        pinned_data_file,
        resolve_data_dir,
    )

#: public name -> the submodule defining it
_WHERE: dict[str, str] = {
    "fetch_dataset": "fetch",
    "DATASETS": "registry",
    "QUESTION_SETS": "registry",
    "FileEntry": "registry",
    "Manifest": "registry",
    "all_manifests": "registry",
    "load_manifest": "registry",
    "DatasetStatus": "sources",
    "data_file": "sources",
    "data_status": "sources",
    "dataset_path": "sources",
    "dataset_status": "sources",
    "default_data_dir": "sources",
    "file_sha256": "sources",
    "is_pinned_copy": "sources",
    "pinned_data_file": "sources",
    "resolve_data_dir": "sources",
}

__all__ = [
    "DATASETS",
    "QUESTION_SETS",
    "DatasetStatus",
    "FileEntry",
    "Manifest",
    "all_manifests",
    "data_file",
    "data_status",
    "dataset_path",
    "dataset_status",
    "default_data_dir",
    "fetch_dataset",
    "file_sha256",
    "is_pinned_copy",
    "load_manifest",
    "pinned_data_file",
    "resolve_data_dir",
]


__getattr__ = first_use(__name__, _WHERE)

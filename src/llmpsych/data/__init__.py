"""Official datasets: the registry of pinned sources, the local data directory, and fetching."""

from .fetch import fetch_dataset
from .registry import DATASETS, FileEntry, Manifest, all_manifests, load_manifest
from .sources import (
    DatasetStatus,
    data_file,
    data_status,
    dataset_path,
    dataset_status,
    default_data_dir,
    file_sha256,
    resolve_data_dir,
)

__all__ = [
    "DATASETS",
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
    "load_manifest",
    "resolve_data_dir",
]

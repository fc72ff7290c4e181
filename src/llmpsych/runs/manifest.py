"""The manifest: what exactly produced a run (versions, models, parameters, data checksums, seeds)."""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..models.catalog import sha256_file
from ..models.client import ModelClient
from .config import RunConfig


def build_manifest(
    config: RunConfig, clients: dict[str, ModelClient], data_files: list[Path], n_units: int
) -> dict[str, Any]:
    """A JSON-ready manifest. It never contains API keys, nor credentials of a base URL.

    ``models`` holds each role's true endpoint: spec, provider, ``scheme://host:port/path``, where the URL
    and the key came from (an environment variable or config entry, never the key)."""
    return {
        "llmpsych_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "task": config.task,
        "config": config.stored(),
        "models": {role: client.describe() for role, client in clients.items()},
        "data": {str(path): sha256_file(path) for path in data_files},
        "seed": config.seed,
        "units": n_units,
    }

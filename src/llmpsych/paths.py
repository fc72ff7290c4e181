"""Where llmpsych keeps its files: user cache, config, and default run folders."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "llmpsych"


def cache_dir() -> Path:
    """Root of the user cache (models, fetched data, response cache); LLMPSYCH_CACHE_DIR overrides it."""
    override = os.environ.get("LLMPSYCH_CACHE_DIR")
    path = Path(override) if override else Path(platformdirs.user_cache_dir(APP))
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_file() -> Path:
    """The user config file; LLMPSYCH_CONFIG overrides its location."""
    override = os.environ.get("LLMPSYCH_CONFIG")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP)) / "config.toml"


def runs_dir() -> Path:
    """Default parent folder for run directories; LLMPSYCH_RUNS_DIR overrides it."""
    return Path(os.environ.get("LLMPSYCH_RUNS_DIR", "llmpsych-runs"))

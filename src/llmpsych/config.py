"""The user config file (TOML): named endpoints, keys, cache and default limits.

Example ``~/.config/llmpsych/config.toml``::

    [endpoints.mylab]
    base_url = "http://10.0.0.5:8000/v1"
    api_key_env = "MYLAB_API_KEY"     # or api_key = "..." (the file should then be private)
    concurrency = 16
    timeout = 120

    [cache]
    enabled = true
    path = "/data/llmpsych-cache.sqlite"
"""

from __future__ import annotations

import os
import stat
import sys
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from .errors import ConfigError
from .paths import config_file
from .userfiles import parse_toml, read_bytes


class EndpointSettings(BaseModel):
    """One named OpenAI-compatible endpoint."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    api_key_env: str | None = None
    api_key: SecretStr | None = None
    concurrency: int | None = Field(default=None, ge=1, le=4096)
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0, le=20)


class CacheSettings(BaseModel):
    """Where the response cache lives and whether it is used."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    path: Path | None = None


class UserConfig(BaseModel):
    """Everything the user config file may hold."""

    model_config = ConfigDict(extra="forbid")

    endpoints: dict[str, EndpointSettings] = {}
    cache: CacheSettings = CacheSettings()


#: Largest config file read (a run config or the user config is a few kB): a larger file, e.g. a data
#: file named by mistake, is refused before it is read.
MAX_CONFIG_BYTES = 1_000_000


def read_config_text(path: Path) -> str:
    """The text of a config file: a regular file of at most :data:`MAX_CONFIG_BYTES`, in UTF-8.

    Anything else (a folder, a FIFO or device, a 100 MB file, a PNG renamed ``config.toml``) is a
    :class:`ConfigError` naming the file and what is wrong; read by the one bounded reader
    (:func:`llmpsych.userfiles.read_bytes`: the size is checked before a byte is read).
    """
    data = read_bytes(path, "config file", MAX_CONFIG_BYTES, error=ConfigError)
    if b"\0" in data:
        raise ConfigError(f"config file {path} is binary, not a text config (it holds NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte {exc.start} cannot be decoded)"
        ) from None


def load_user_config(path: Path | None = None) -> UserConfig:
    """Read the user config file; a missing file means defaults."""
    path = path or config_file()
    if not path.exists() and not path.is_symlink():
        return UserConfig()
    raw = parse_toml(read_config_text(path), f"config file {path}", error=ConfigError)
    try:
        config = UserConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"config file {path}: {where}: {first['msg']}") from None
    _warn_if_readable(path, config)
    return config


def _warn_if_readable(path: Path, config: UserConfig) -> None:
    """One line on stderr when the file holds a key (``api_key``) and others may read it."""
    if os.name != "posix" or not any(e.api_key is not None for e in config.endpoints.values()):
        return
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        print(
            f"warning: config file {path} holds an API key and other users may read it "
            f"(mode {mode:o}); run: chmod 600 {path}",
            file=sys.stderr,
        )


@lru_cache(maxsize=1)
def user_config() -> UserConfig:
    """The user config, read once per process."""
    return load_user_config()

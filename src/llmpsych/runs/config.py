"""Run configuration: a TOML or YAML file, or command-line flags, validated with clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..config import read_config_text
from ..errors import ConfigError
from ..models.catalog import DEFAULT_EMBEDDED_MODEL
from ..models.types import GenerationParams
from ..models.urls import redact_url
from ..userfiles import parse_toml, parse_yaml

DEFAULT_MODEL = f"local/{DEFAULT_EMBEDDED_MODEL}"


def _message(error: Any) -> str:
    """A pydantic error's message, without the "Value error, " pydantic puts before a validator's own."""
    if error.get("type") == "value_error" and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    return str(error["msg"])


class RoleModel(BaseModel):
    """One model role as a whole endpoint, as inspect_ai's model roles are: its spec, its own base URL
    (for ``openai-compatible/...`` or another endpoint without a URL of its own), request parameters that
    win over the task's, and limits. Nothing run-wide but the run's ``base_url`` (for URL-less specs
    that set none) reaches it."""

    model_config = ConfigDict(extra="forbid")

    model: str
    base_url: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    concurrency: int | None = Field(default=None, ge=1, le=4096)
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0, le=20)

    @field_validator("params")
    @classmethod
    def _known_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            GenerationParams.model_validate(value)  # names and ranges as in the run's params
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"{'.'.join(str(p) for p in first['loc'])}: {_message(first)}") from None
        return value

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        if value is not None and redact_url(value) != value:
            raise ValueError(
                "a role's base_url may not carry credentials or tokens (they are never stored, so a "
                "resumed run could not send them): use an api_key_env endpoint in your own config file"
            )
        return value


class RunConfig(BaseModel):
    """Everything that defines a run. ``options`` holds the task's own settings."""

    model_config = ConfigDict(extra="forbid")

    task: str
    model: str = DEFAULT_MODEL
    models: dict[str, str | RoleModel] = Field(
        default_factory=dict, description="extra model roles, e.g. judge: a spec or a whole endpoint"
    )
    base_url: str | None = Field(
        default=None, description="for roles naming openai-compatible/... (or another URL-less endpoint)"
    )
    params: GenerationParams = GenerationParams()
    seed: int = 0
    concurrency: int | None = Field(default=None, ge=1, le=4096)
    workers: int | None = Field(default=None, ge=1, le=10_000, description="work units in flight")
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0, le=20)
    n_parallel: int = Field(default=1, ge=1, le=64, description="llama.cpp slots for embedded models")
    cache: bool = True
    cache_path: Path | None = None
    data_dir: Path | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("models", mode="before")
    @classmethod
    def _role_tables(cls, value: Any) -> Any:
        """Validate each role table as a :class:`RoleModel` here, so a mistake is named by its own field
        (not by the string alternative of the union)."""
        if not isinstance(value, dict):
            return value
        out = dict(value)
        for role, item in value.items():
            if isinstance(item, dict):
                try:
                    out[role] = RoleModel.model_validate(item)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first["loc"])
                    raise ValueError(f"{role}.{where}: {_message(first)}") from None
        return out

    def role_specs(self) -> dict[str, str]:
        """Model spec per role; the main model is the 'subject'."""
        return {role: r.model for role, r in self.roles().items()}

    def roles(self) -> dict[str, RoleModel]:
        """Each role as a whole endpoint; the main model is the 'subject'."""
        roles = {"subject": RoleModel(model=self.model)}
        for role, value in self.models.items():
            roles[role] = RoleModel(model=value) if isinstance(value, str) else value
        return roles

    def stored(self) -> dict[str, Any]:
        """The config as the run store and manifest keep it: credentials in the base URL replaced by
        ``***`` (a resumed run then needs ``--base-url`` again)."""
        data = self.model_dump(mode="json")
        if data.get("base_url"):
            data["base_url"] = redact_url(data["base_url"])
        return data


def _validation_message(exc: ValidationError, source: str) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
    return f"{source}: {where}: {_message(first)}{more}"


def parse_run_config(data: dict[str, Any], source: str = "run config") -> RunConfig:
    """Validate a config mapping."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message(exc, source)) from None


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a TOML (.toml) or YAML (.yaml/.yml) file into a mapping.

    The file is read by :func:`~llmpsych.config.read_config_text` (size cap checked before reading, text
    only); YAML by :func:`llmpsych.userfiles.parse_yaml` (``safe_load``: no ``!!python/...`` tags; nesting
    and expanded size bounded), TOML with the same bounds.
    """
    suffix = path.suffix.lower()
    if suffix not in {".toml", ".yaml", ".yml"}:
        raise ConfigError(f"config file {path} must end in .toml, .yaml or .yml")
    text = read_config_text(path)
    if suffix == ".toml":
        data = parse_toml(text, f"config file {path}", error=ConfigError)
    else:
        data = parse_yaml(text, f"config file {path}", error=ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings at the top level")
    return data

"""Model specifications: one string names any model llmpsych can talk to.

==============================  ===========================================================
``openai/<model>``              api.openai.com, key from ``OPENAI_API_KEY``
``openai-compatible/<model>``   any OpenAI-compatible server; base URL from ``--base-url``,
                                ``LLMPSYCH_BASE_URL`` or ``[endpoints.openai-compatible]``
``<endpoint>/<model>``          a named endpoint: built-in (vllm, ollama, llamacpp, openrouter)
                                or defined in the user config file
``local/<name>``                an embedded model from the catalog (``llmpsych models list``)
``gguf:<path>``                 any GGUF file, run in-process by llama.cpp
==============================  ===========================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import SecretStr

from ..config import EndpointSettings, UserConfig, user_config
from ..errors import MissingKeyError, ModelSpecError

#: Endpoints known without any configuration: (base URL, environment variable holding the key).
BUILTIN_ENDPOINTS: dict[str, tuple[str | None, str | None]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openai-compatible": (None, "LLMPSYCH_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "vllm": ("http://127.0.0.1:8000/v1", "VLLM_API_KEY"),
    "ollama": ("http://127.0.0.1:11434/v1", None),
    "llamacpp": ("http://127.0.0.1:8080/v1", None),
}
#: Endpoints that cannot work without a key.
KEY_REQUIRED = {"openai", "openrouter"}

DEFAULT_HTTP_CONCURRENCY = 16
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 6


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model specification."""

    kind: str  # "http" or "embedded"
    endpoint: str  # endpoint name ("local" / "gguf" for embedded models)
    model: str  # model name sent to the endpoint, catalog name, or GGUF path
    text: str  # the spec as the user wrote it

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ResolvedEndpoint:
    """Everything needed to call an HTTP endpoint; the key never leaves this object."""

    name: str
    base_url: str
    model: str
    api_key: SecretStr | None = field(default=None, repr=False)
    concurrency: int = DEFAULT_HTTP_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES

    @property
    def identity(self) -> str:
        """What distinguishes this endpoint in the cache (never the key)."""
        return f"{self.base_url.rstrip('/')}#{self.model}"


def parse_model_spec(text: str, config: UserConfig | None = None) -> ModelSpec:
    """Parse a model spec string, raising :class:`ModelSpecError` with the accepted forms."""
    config = config or user_config()
    text = text.strip()
    if text.startswith("gguf:"):
        path = text[len("gguf:") :]
        if not path:
            raise ModelSpecError("model spec 'gguf:' needs a file path, e.g. gguf:/models/llama.gguf")
        return ModelSpec("embedded", "gguf", path, text)
    endpoint, sep, model = text.partition("/")
    if not sep or not endpoint or not model:
        raise ModelSpecError(
            f"unknown model spec {text!r}",
            "use openai/<model>, openai-compatible/<model>, <endpoint>/<model>, local/<name> or gguf:<path>",
        )
    if endpoint == "local":
        return ModelSpec("embedded", "local", model, text)
    if endpoint not in BUILTIN_ENDPOINTS and endpoint not in config.endpoints:
        known = sorted(set(BUILTIN_ENDPOINTS) | set(config.endpoints) | {"local"})
        raise ModelSpecError(
            f"unknown endpoint {endpoint!r} in model spec {text!r}",
            f"known endpoints: {', '.join(known)}; define others under [endpoints.<name>] in the config file",
        )
    return ModelSpec("http", endpoint, model, text)


def resolve_endpoint(
    spec: ModelSpec,
    base_url: str | None = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    config: UserConfig | None = None,
) -> ResolvedEndpoint:
    """Combine a spec with flags, the environment and the config file (flags win)."""
    if spec.kind != "http":
        raise ModelSpecError(f"{spec} is an embedded model, not an HTTP endpoint")
    config = config or user_config()
    settings = config.endpoints.get(spec.endpoint, EndpointSettings())
    builtin_url, builtin_key_env = BUILTIN_ENDPOINTS.get(spec.endpoint, (None, None))
    env_url = os.environ.get("LLMPSYCH_BASE_URL") if spec.endpoint == "openai-compatible" else None
    url = base_url or env_url or settings.base_url or builtin_url
    if not url:
        raise ModelSpecError(
            f"no base URL for {spec}",
            "pass --base-url, set LLMPSYCH_BASE_URL, or set base_url under "
            f"[endpoints.{spec.endpoint}] in the config file",
        )
    key_env = settings.api_key_env or builtin_key_env
    key = settings.api_key
    if key is None and key_env and os.environ.get(key_env):
        key = SecretStr(os.environ[key_env])
    if key is None and spec.endpoint in KEY_REQUIRED:
        raise MissingKeyError(
            f"no API key for {spec}",
            f"set the environment variable {key_env} or api_key_env/api_key under "
            f"[endpoints.{spec.endpoint}] in the config file; keys are never accepted on the command line",
        )
    return ResolvedEndpoint(
        name=spec.endpoint,
        base_url=url.rstrip("/"),
        model=spec.model,
        api_key=key,
        concurrency=concurrency or settings.concurrency or DEFAULT_HTTP_CONCURRENCY,
        timeout=timeout or settings.timeout or DEFAULT_TIMEOUT_S,
        max_retries=max_retries
        if max_retries is not None
        else (settings.max_retries if settings.max_retries is not None else DEFAULT_MAX_RETRIES),
    )


def gguf_path(spec: ModelSpec) -> Path:
    """The file of a ``gguf:`` spec, checked to exist."""
    path = Path(spec.model).expanduser()
    if not path.is_file():
        raise ModelSpecError(f"GGUF file not found: {path}")
    return path

"""Model specifications: one string names any model llmpsych can talk to.

==============================  ===========================================================
``openai/<model>``              api.openai.com, key from ``OPENAI_API_KEY``
``openai-compatible/<model>``   any OpenAI-compatible server; base URL from ``--base-url`` (or a
                                role's ``base_url``), ``LLMPSYCH_BASE_URL`` or
                                ``[endpoints.openai-compatible]``
``<endpoint>/<model>``          a named endpoint: built-in (vllm, ollama, llamacpp, openrouter)
                                or defined in the user config file
``local/<name>``                an embedded model from the catalog (``llmpsych models list``)
``gguf:<path>``                 any GGUF file, run in-process by llama.cpp
==============================  ===========================================================

An embedded spec may end in ``?ctx=<tokens>``, the context size of each llama.cpp slot
(``local/qwen2.5-0.5b?ctx=8192``); without it the model gets
:data:`~llmpsych.models.embedded.DEFAULT_CONTEXT_PER_SLOT`. An HTTP server sets its own context.

A key belongs to its endpoint: a base URL given by a flag, a run config or a role fills in the URL of
``openai-compatible/`` (and of config-file endpoints without ``base_url``) and is refused for any endpoint
with a URL of its own, so no config file can send ``OPENAI_API_KEY`` to another server.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

from pydantic import SecretStr

from ..config import EndpointSettings, UserConfig, user_config
from ..errors import MissingKeyError, ModelSpecError
from .backends import BACKENDS, BUILTIN_KINDS
from .embedded import served_token
from .urls import endpoint_address, query_secrets, redact_url, split_userinfo

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

    kind: str  # its backend (:mod:`llmpsych.models.backends`): "http", "embedded" or a registered one
    endpoint: str  # endpoint name ("local" / "gguf" for embedded models)
    model: str  # model name sent to the endpoint, catalog name, or GGUF path
    text: str  # the spec as the user wrote it
    ctx: int | None = None  # embedded models: context tokens per slot (``?ctx=``), None for the default

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, repr=False)
class ResolvedEndpoint:
    """Everything needed to call an HTTP endpoint; the key never leaves this object.

    ``base_url`` is where requests go, without userinfo (credentials in the URL became ``basic``, sent as
    the Authorization header); it may still hold a query token, so it is never stored or shown: use
    :attr:`public_url`, :attr:`address` or :attr:`identity`.
    """

    name: str
    base_url: str
    model: str
    api_key: SecretStr | None = field(default=None, repr=False)
    concurrency: int = DEFAULT_HTTP_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    basic: SecretStr | None = field(default=None, repr=False)  # "user:password" from the URL's userinfo
    key_source: str | None = None  # where the credential came from (never the credential)
    url_source: str = "built-in"  # where the base URL came from
    #: Whether the user chose the concurrency (flag, run, role or config file); if not, a client asks the
    #: server for its slots (``HttpBackend.server_slots``) and uses them instead of the default.
    concurrency_set: bool = True

    def __repr__(self) -> str:
        key = f"key from {self.key_source}"
        return f"ResolvedEndpoint({self.name!r}, {self.public_url!r}, {self.model!r}, {key})"

    @property
    def identity(self) -> str:
        """What distinguishes this endpoint in the cache and the run store (never a credential)."""
        return f"{redact_url(self.base_url.rstrip('/'))}#{self.model}"

    @property
    def public_url(self) -> str:
        """The base URL as it may be shown and stored (query tokens replaced by ``***``)."""
        return redact_url(self.base_url)

    @property
    def address(self) -> str:
        """``scheme://host:port/path`` of the endpoint."""
        return endpoint_address(self.base_url)

    def authorization(self) -> str | None:
        """The Authorization header value: Basic from the URL's userinfo, else Bearer with the key."""
        if self.basic is not None:
            token = base64.b64encode(self.basic.get_secret_value().encode("utf-8")).decode("ascii")
            return f"Basic {token}"
        if self.api_key is not None:
            return f"Bearer {self.api_key.get_secret_value()}"
        return None

    def secrets(self) -> list[str]:
        """Every credential this endpoint holds, to scrub from anything a server says back."""
        out = query_secrets(self.base_url)
        if self.api_key is not None:
            out.append(self.api_key.get_secret_value())
        if self.basic is not None:
            basic = self.basic.get_secret_value()
            out += [basic, basic.partition(":")[2], base64.b64encode(basic.encode("utf-8")).decode("ascii")]
        return out

    def describe(self) -> dict[str, str | None]:
        """What a manifest records: provider, address, where URL and key came from (never the key)."""
        return {
            "provider": self.name,
            "endpoint": self.address,
            "url": self.public_url,
            "url_from": self.url_source,
            "key_from": self.key_source,
        }


#: The accepted range of ``?ctx=`` (tokens per slot).
CTX_RANGE = (256, 1_048_576)


def _split_ctx(text: str, body: str) -> tuple[str, int | None]:
    """``body`` without a trailing ``?ctx=<tokens>``, and the number (None without one)."""
    head, sep, query = body.rpartition("?")
    if not sep or not query.startswith("ctx="):
        return body, None
    value = query[len("ctx=") :]
    low, high = CTX_RANGE
    if not value.isdigit() or not low <= int(value) <= high:
        raise ModelSpecError(
            f"model spec {text!r}: ctx must be a whole number of tokens from {low:,} to {high:,}",
            "e.g. local/qwen2.5-0.5b?ctx=8192",
        )
    return head, int(value)


def parse_model_spec(text: str, config: UserConfig | None = None) -> ModelSpec:
    """Parse a model spec string, raising :class:`ModelSpecError` with the accepted forms."""
    config = config or user_config()
    text = text.strip()
    if text.startswith("gguf:"):
        path, ctx = _split_ctx(text, text[len("gguf:") :])
        if not path:
            raise ModelSpecError("model spec 'gguf:' needs a file path, e.g. gguf:/models/llama.gguf")
        return ModelSpec("embedded", "gguf", path, text, ctx)
    endpoint, sep, model = text.partition("/")
    if not sep or not endpoint or not model:
        raise ModelSpecError(
            f"unknown model spec {text!r}",
            "use openai/<model>, openai-compatible/<model>, <endpoint>/<model>, local/<name> or gguf:<path>",
        )
    if endpoint == "local":
        name, ctx = _split_ctx(text, model)
        if not name:
            raise ModelSpecError(f"model spec {text!r} names no model", "e.g. local/qwen2.5-0.5b?ctx=8192")
        return ModelSpec("embedded", "local", name, text, ctx)
    if endpoint in BACKENDS and endpoint not in BUILTIN_KINDS:  # a registered backend's own prefix
        return ModelSpec(endpoint, endpoint, model, text)
    if _split_ctx(text, model)[1] is not None:
        raise ModelSpecError(
            f"model spec {text!r}: ?ctx= applies to embedded models (local/..., gguf:...)",
            "an HTTP server sets its own context size (e.g. llama-server --ctx-size, vllm --max-model-len)",
        )
    if endpoint not in BUILTIN_ENDPOINTS and endpoint not in config.endpoints:
        known = sorted(set(BUILTIN_ENDPOINTS) | set(config.endpoints) | {"local"})
        raise ModelSpecError(
            f"unknown endpoint {endpoint!r} in model spec {text!r}",
            f"known endpoints: {', '.join(known)}; define others under [endpoints.<name>] in the config file",
        )
    return ModelSpec("http", endpoint, model, text)


def own_url(spec: ModelSpec, config: UserConfig | None = None) -> str | None:
    """The URL an endpoint has by itself (built in or in the user config file), or None when it takes the
    base URL of the run or role: ``openai-compatible`` always does, and so does a config-file endpoint
    defined without ``base_url``."""
    if spec.kind != "http" or spec.endpoint == "openai-compatible":
        return None
    config = config or user_config()
    settings = config.endpoints.get(spec.endpoint, EndpointSettings())
    return settings.base_url or BUILTIN_ENDPOINTS.get(spec.endpoint, (None, None))[0]


def accepts_base_url(spec: ModelSpec, config: UserConfig | None = None) -> bool:
    """Whether a run- or role-level base URL applies to this spec (an HTTP endpoint without its own URL)."""
    return spec.kind == "http" and own_url(spec, config) is None


def key_env_of(spec: ModelSpec, config: UserConfig | None = None) -> str | None:
    """The environment variable an endpoint takes its key from."""
    config = config or user_config()
    settings = config.endpoints.get(spec.endpoint, EndpointSettings())
    return settings.api_key_env or BUILTIN_ENDPOINTS.get(spec.endpoint, (None, None))[1]


def check_base_url(url: str, source: str = "base URL") -> None:
    """Raise ModelSpecError unless ``url`` is an http(s) URL with a host."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ModelSpecError(f"{source} {redact_url(url)!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelSpecError(
            f"{source} {redact_url(url)!r} is not an http:// or https:// URL with a host",
            "e.g. http://127.0.0.1:8000/v1",
        )


def refuse_redirect(
    spec: ModelSpec, base_url: str, source: str, config: UserConfig | None = None
) -> NoReturn:
    """The one line that refuses to point an endpoint with its own URL (and key) at another URL."""
    url = own_url(spec, config)
    env = key_env_of(spec, config)
    key = f", key from {env}" if env else ""
    raise ModelSpecError(
        f"{source} {redact_url(base_url)!r} cannot redirect {spec}: that endpoint has its own URL "
        f"({redact_url(url or '')}{key}), and its key goes nowhere else",
        "for another server use openai-compatible/<model> (key from LLMPSYCH_API_KEY), or define the "
        "endpoint under [endpoints.<name>] in your own config file",
    )


def resolve_endpoint(
    spec: ModelSpec,
    base_url: str | None = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    config: UserConfig | None = None,
    url_source: str = "--base-url",
) -> ResolvedEndpoint:
    """Combine a spec with flags, the environment and the config file (flags win).

    ``base_url`` applies only to endpoints without their own URL (:func:`accepts_base_url`); given for any
    other endpoint it is refused, so a config file cannot send, say, ``OPENAI_API_KEY`` to its own server.
    Credentials in the URL's userinfo are sent as HTTP Basic authorization instead of any key.
    """
    if spec.kind != "http":
        raise ModelSpecError(f"{spec} is an embedded model, not an HTTP endpoint")
    config = config or user_config()
    if base_url is not None and not accepts_base_url(spec, config):
        refuse_redirect(spec, base_url, url_source, config)
    settings = config.endpoints.get(spec.endpoint, EndpointSettings())
    builtin_url, builtin_key_env = BUILTIN_ENDPOINTS.get(spec.endpoint, (None, None))
    env_url = os.environ.get("LLMPSYCH_BASE_URL") if spec.endpoint == "openai-compatible" else None
    sources = (
        (base_url, url_source),
        (env_url, "env:LLMPSYCH_BASE_URL"),
        (settings.base_url, f"config:endpoints.{spec.endpoint}.base_url"),
        (builtin_url, "built-in"),
    )
    url, source = next(((u, s) for u, s in sources if u), (None, ""))
    if not url:
        raise ModelSpecError(
            f"no base URL for {spec}",
            "pass --base-url, set LLMPSYCH_BASE_URL, or set base_url under "
            f"[endpoints.{spec.endpoint}] in the config file",
        )
    check_base_url(url, source)
    url, userinfo = split_userinfo(url)
    key_env = settings.api_key_env or builtin_key_env
    key: SecretStr | None = None
    basic: SecretStr | None = None
    key_source: str | None = None
    if userinfo is not None:
        basic, key_source = SecretStr(":".join(userinfo)), "base URL userinfo"
    elif (token := served_token(endpoint_address(url))) is not None:
        key, key_source = token, "token of the embedded server in this process"
    elif settings.api_key is not None:
        key, key_source = settings.api_key, f"config:endpoints.{spec.endpoint}.api_key"
    elif key_env and os.environ.get(key_env):
        key, key_source = SecretStr(os.environ[key_env]), f"env:{key_env}"
    if key is None and basic is None and spec.endpoint in KEY_REQUIRED:
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
        concurrency_set=bool(concurrency or settings.concurrency),
        timeout=timeout or settings.timeout or DEFAULT_TIMEOUT_S,
        max_retries=max_retries
        if max_retries is not None
        else (settings.max_retries if settings.max_retries is not None else DEFAULT_MAX_RETRIES),
        basic=basic,
        key_source=key_source,
        url_source=source,
    )


def gguf_path(spec: ModelSpec) -> Path:
    """The file of a ``gguf:`` spec, checked to exist."""
    path = Path(spec.model).expanduser()
    if not path.is_file():
        raise ModelSpecError(f"GGUF file not found: {path}")
    return path

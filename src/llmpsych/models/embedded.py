"""The embedded llama.cpp model (xllamacpp), answering OpenAI-shaped chat requests in-process.

llama.cpp also listens on a loopback HTTP port for every loaded model (``llmpsych serve`` relies on it).
That port is closed to anyone without the process's bearer token (:func:`process_token`, 256 random bits
from :mod:`secrets`): llama.cpp answers 401 to every request without it except ``/health``. Its CORS
headers are emptied (an empty ``Access-Control-Allow-Origin`` matches no origin; llama.cpp's default
reflects any origin, with credentials), and the web UI and ``/slots`` (other requests' prompts) are off,
so a web page in the user's browser can neither read from nor drive the model. In-process requests do not
go through HTTP, and an llmpsych client pointed at this port takes the token by itself
(:func:`served_token`).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from ..errors import LlmpsychError, ModelSpecError
from .retry import FatalRequestError, RetryableError

DEFAULT_CONTEXT_PER_SLOT = 4096


@dataclass(frozen=True)
class EmbeddedSettings:
    """How llama.cpp runs the model. ``n_parallel`` is the number of slots (continuous batching)."""

    n_parallel: int = 1
    n_ctx_per_slot: int = DEFAULT_CONTEXT_PER_SLOT
    n_threads: int = 0  # 0: all available cores
    host: str = "127.0.0.1"
    port: int = 0  # 0: pick a free port


@lru_cache(maxsize=1)
def process_token() -> SecretStr:
    """The bearer token of this process's embedded HTTP servers, made once per process."""
    return SecretStr(secrets.token_urlsafe(32))


def _threads(requested: int) -> int:
    return requested or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2)


class EmbeddedModel:
    """One loaded GGUF model. The same object also listens on a loopback OpenAI-compatible address."""

    def __init__(self, path: Path, settings: EmbeddedSettings = EmbeddedSettings()) -> None:
        try:
            import xllamacpp
        except ImportError:
            raise ModelSpecError(
                "the embedded llama.cpp runtime (xllamacpp) is not installed", "pip install 'llmpsych[local]'"
            ) from None
        self.path = path
        self.settings = settings
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_parallel = settings.n_parallel
        params.n_ctx = settings.n_ctx_per_slot * settings.n_parallel
        params.cpuparams.n_threads = _threads(settings.n_threads)
        params.cpuparams_batch.n_threads = _threads(settings.n_threads)
        params.verbosity = 0
        params.hostnames = [settings.host]
        params.api_keys = [process_token().get_secret_value()]
        params.cors_origins = ""  # llama.cpp's default, "*", reflects any Origin with credentials
        params.cors_origins_explicit = True
        params.cors_credentials = False
        params.cors_methods = ""
        params.cors_headers = ""
        params.ui = False
        params.endpoint_slots = False
        if settings.port:
            params.port = settings.port
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # llama.cpp reports load failures as generic exceptions
            raise LlmpsychError(f"llama.cpp could not load {path}: {exc}") from None

    @property
    def base_url(self) -> str:
        """The loopback OpenAI-compatible address (``.../v1``); requests need :attr:`api_key`."""
        return f"{self._server.listening_address.rstrip('/')}/v1"

    @property
    def api_key(self) -> SecretStr:
        """The bearer token the loopback server requires."""
        return process_token()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer one chat-completions body synchronously (releases the GIL while decoding)."""
        response = self._server.handle_chat_completions(body)
        if not isinstance(response, dict):
            raise RetryableError("malformed response from llama.cpp")
        if "error" in response or "choices" not in response:
            error = response.get("error", response)
            message = error.get("message", error) if isinstance(error, dict) else error
            raise FatalRequestError(f"llama.cpp rejected the request: {message}")
        return response


_loaded: dict[tuple[str, EmbeddedSettings], EmbeddedModel] = {}
_lock = threading.Lock()


def load_embedded(path: Path, settings: EmbeddedSettings = EmbeddedSettings()) -> EmbeddedModel:
    """Load a model once per process and settings; later calls share it."""
    key = (str(path.resolve()), settings)
    with _lock:
        if key not in _loaded:
            _loaded[key] = EmbeddedModel(path, settings)
        return _loaded[key]


def write_token_file(path: Path, token: SecretStr) -> None:
    """Write ``token`` to ``path``, readable by the user alone (0600; its folder 0700 if made here).

    An existing file is replaced, never followed through a symlink planted in its place."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(token.get_secret_value() + "\n")


def served_token(address: str) -> SecretStr | None:
    """The token for ``address`` (``scheme://host:port/...``) when a model of this process serves it."""
    wanted = urlsplit(address)
    with _lock:
        models = list(_loaded.values())
    for model in models:
        served = urlsplit(model.base_url)
        if (served.hostname, served.port) == (wanted.hostname, wanted.port):
            return model.api_key
    return None


class EmbeddedBackend:
    """Backend adapter: runs blocking llama.cpp calls in worker threads."""

    def __init__(self, model: EmbeddedModel) -> None:
        self.model = model

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt, off the event loop."""
        return await asyncio.to_thread(self.model.complete, body)

    async def aclose(self) -> None:
        """Nothing to close: the model stays loaded for the process."""

"""The embedded llama.cpp model (xllamacpp), answering OpenAI-shaped chat requests in-process."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
        if settings.port:
            params.port = settings.port
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # llama.cpp reports load failures as generic exceptions
            raise LlmpsychError(f"llama.cpp could not load {path}: {exc}") from None

    @property
    def base_url(self) -> str:
        """The loopback OpenAI-compatible address (``.../v1``)."""
        return f"{self._server.listening_address.rstrip('/')}/v1"

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


class EmbeddedBackend:
    """Backend adapter: runs blocking llama.cpp calls in worker threads."""

    def __init__(self, model: EmbeddedModel) -> None:
        self.model = model

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt, off the event loop."""
        return await asyncio.to_thread(self.model.complete, body)

    async def aclose(self) -> None:
        """Nothing to close: the model stays loaded for the process."""

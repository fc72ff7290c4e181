"""The embedded llama.cpp model (xllamacpp), answering OpenAI-shaped chat requests in-process.

llama.cpp also listens on a loopback HTTP port for every loaded model (``llmpsych serve`` relies on it).
That port is closed to anyone without the process's bearer token (:func:`process_token`, 256 random bits
from :mod:`secrets`): llama.cpp answers 401 to every request without it except ``/health``. Its CORS
headers are emptied (an empty ``Access-Control-Allow-Origin`` matches no origin; llama.cpp's default
reflects any origin, with credentials), and the web UI and ``/slots`` (other requests' prompts) are off,
so a web page in the user's browser can neither read from nor drive the model. In-process requests do not
go through HTTP, and an llmpsych client pointed at this port takes the token by itself
(:func:`served_token`).

Each slot has a context of ``n_ctx_per_slot`` tokens (``?ctx=`` in the model spec). A request whose
prompt plus ``max_tokens`` cannot fit is refused before llama.cpp sees it (:class:`ContextOverflow`,
counted with the model's own chat template and tokenizer), as one failed call that is not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import threading
import urllib.request
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from ..errors import LlmpsychError, ModelSpecError
from .retry import FatalRequestError, RetryableError

#: Context tokens per slot unless the spec says ``?ctx=``: Qwen2.5's whole trained context. Measured on
#: the default model (2 cores): 32,768 instead of 4,096 tokens costs 344 MiB more memory (1,022 instead of
#: 678 MiB resident) and the same load time (1.3 s); requests take the same time (1.02-1.06 s for 24
#: tokens with either, interleaved in one process).
DEFAULT_CONTEXT_PER_SLOT = 32768
#: ... but all slots together get at most this many by default (768 MiB of cache on the default model), so
#: many slots (``n_parallel``) do not multiply the memory: 4 slots get 16,384 tokens each.
DEFAULT_CONTEXT_TOTAL = 65536
#: The least a slot gets by default, however many slots there are.
MIN_DEFAULT_CONTEXT = 2048

#: Tokens a chat template adds around each message, and once (a default system prompt such as Qwen's), at
#: most; used only to skip counting a request that fits by any measure (a token is at least one byte).
_TEMPLATE_TOKENS_PER_MESSAGE = 16
_TEMPLATE_TOKENS_ONCE = 128


class ContextOverflow(FatalRequestError):
    """A request that cannot fit the slot's context; refused before it is sent, never retried."""


@dataclass(frozen=True)
class EmbeddedSettings:
    """How llama.cpp runs the model. ``n_parallel`` is the number of slots (continuous batching)."""

    n_parallel: int = 1
    n_ctx_per_slot: int | None = None  # None: :meth:`context` chooses
    n_threads: int = 0  # 0: all available cores
    host: str = "127.0.0.1"
    port: int = 0  # 0: pick a free port
    alias: str | None = None  # the model id /v1/models reports (None: llama.cpp's, the file's path)

    def with_context(self, ctx: int | None) -> EmbeddedSettings:
        """These settings with ``ctx`` tokens per slot (a spec's ``?ctx=``); unchanged for None."""
        return self if ctx is None else replace(self, n_ctx_per_slot=ctx)

    @property
    def context(self) -> int:
        """Tokens per slot: as set, else :data:`DEFAULT_CONTEXT_PER_SLOT` within
        :data:`DEFAULT_CONTEXT_TOTAL` for all slots (never below :data:`MIN_DEFAULT_CONTEXT`)."""
        if self.n_ctx_per_slot is not None:
            return self.n_ctx_per_slot
        share = DEFAULT_CONTEXT_TOTAL // max(1, self.n_parallel)
        return max(MIN_DEFAULT_CONTEXT, min(DEFAULT_CONTEXT_PER_SLOT, share))


def check_port_free(host: str, port: int) -> None:
    """Refuse, in one line, a port another program already listens on.

    llama.cpp reports a taken port as a failure to load the model ("could not load ... check the input
    params"), which sends the user looking at the model file; binding it first names the real cause."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise LlmpsychError(
                f"port {port} on {host} is already in use: {exc.strerror or exc}",
                "another program, perhaps another `llmpsych serve`, listens there: stop it, or pick another "
                "port with --port; 0 picks a free one",
            ) from None


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
        params.n_ctx = settings.context * settings.n_parallel
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
            check_port_free(settings.host, settings.port)
            params.port = settings.port
        if settings.alias:
            params.model_alias = {settings.alias}
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

    def _post(self, route: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST to a route of the loopback server (tokenizer and template routes: no slot is used)."""
        request = urllib.request.Request(
            self.base_url.removesuffix("/v1") + route,
            data=json.dumps(payload).encode("utf-8"),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self.api_key.get_secret_value()}",
            },
        )
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - our loopback port
            answer = json.loads(response.read())
        if not isinstance(answer, dict):
            raise RetryableError(f"malformed answer from llama.cpp {route}")
        return answer

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """Tokens the prompt of ``body`` takes: its messages through the model's chat template, tokenized
        by the model's tokenizer."""
        templated = self._post("/apply-template", {"messages": body.get("messages", [])})
        tokens = self._post("/tokenize", {"content": str(templated.get("prompt", "")), "add_special": True})
        return len(tokens.get("tokens", []))

    def check_fits(self, body: dict[str, Any]) -> None:
        """Raise :class:`ContextOverflow` unless the prompt plus ``max_tokens`` fits one slot's context."""
        limit = self.settings.context
        wanted = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        wanted = wanted if isinstance(wanted, int) and wanted > 0 else 0
        messages = body.get("messages", [])
        upper = len(json.dumps(messages, ensure_ascii=False).encode("utf-8"))
        upper += _TEMPLATE_TOKENS_PER_MESSAGE * len(messages) + _TEMPLATE_TOKENS_ONCE
        if upper + wanted <= limit:
            return  # fits by any count: no need to tokenize
        try:
            prompt = self.prompt_tokens(body)
        except (OSError, ValueError, RetryableError):  # no count: llama.cpp still refuses what cannot fit
            return
        if prompt + wanted > limit:
            asked = f"{prompt:,} prompt tokens" + (f" + max_tokens {wanted:,}" if wanted else "")
            raise ContextOverflow(
                f"request refused: {asked} do not fit the model's context of {limit:,} tokens "
                "(raise it with ?ctx=<tokens> in the model spec)"
            )

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer one chat-completions body synchronously (releases the GIL while decoding)."""
        self.check_fits(body)
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


#: llama.cpp calls running on abandoned or live daemon threads (see :class:`EmbeddedBackend`).
_IN_FLIGHT = [0]
_IN_FLIGHT_LOCK = threading.Lock()


def calls_in_flight() -> int:
    """How many llama.cpp calls are running now. A process that ends while one runs must not finalize
    the interpreter (the model's memory is freed under the running call: a segmentation fault at exit,
    seen after Ctrl-C); the CLI then ends with ``os._exit`` once its output is flushed."""
    with _IN_FLIGHT_LOCK:
        return _IN_FLIGHT[0]


class EmbeddedBackend:
    """Backend adapter: runs each blocking llama.cpp call in a daemon thread of its own.

    Not ``asyncio.to_thread``: the event loop's default executor is joined when ``asyncio.run`` ends, with
    every call queued for it, so Ctrl-C waited for the llama.cpp calls in flight and queued (66 s on a BFI
    log-prob run under load, with nothing printed). A call abandoned here is not needed: its unit is not
    done, and ``--resume`` asks again. A thread costs ~0.1 ms against a call of 50 ms or more."""

    def __init__(self, model: EmbeddedModel) -> None:
        self.model = model

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt, off the event loop; cancelling it abandons the call (its answer is dropped)."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[dict[str, Any]] = loop.create_future()

        def settle(result: dict[str, Any] | None, error: BaseException | None) -> None:
            if answer.done():  # cancelled meanwhile: nobody waits for this answer
                return
            if error is not None:
                answer.set_exception(error)
            else:
                answer.set_result(result or {})

        def call() -> None:
            result: dict[str, Any] | None = None
            error: BaseException | None = None
            with _IN_FLIGHT_LOCK:
                _IN_FLIGHT[0] += 1
            try:
                result = self.model.complete(body)
            except BaseException as exc:  # handed to the waiting coroutine, raised there
                error = exc
            finally:
                with _IN_FLIGHT_LOCK:
                    _IN_FLIGHT[0] -= 1
            with contextlib.suppress(RuntimeError):  # the loop is closed: the run has ended
                loop.call_soon_threadsafe(settle, result, error)

        threading.Thread(target=call, name="llmpsych-embedded-call", daemon=True).start()
        return await answer

    async def aclose(self) -> None:
        """Nothing to close: the model stays loaded for the process."""

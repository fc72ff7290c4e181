"""The one client every benchmark uses: limits, retries, cache and accounting around a backend."""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from ..errors import EndpointError, ModelSpecError
from .backends import BACKENDS, ClientOptions
from .cache import ResponseCache, cache_key
from .canonical import canonical_json
from .catalog import DEFAULT_EMBEDDED_MODEL, catalog_entry, model_file
from .embedded import EmbeddedBackend, EmbeddedSettings, load_embedded
from .http_backend import HttpBackend
from .retry import FatalRequestError, RetriesExhausted, RetryableError, RetryPolicy, call_with_retries
from .spec import KEY_REQUIRED, ModelSpec, gguf_path, parse_model_spec, resolve_endpoint
from .types import ChatResult, GenerationParams, MalformedReply, Message


class Backend(Protocol):
    """Sends one chat-completions body; raises RetryableError or FatalRequestError."""

    async def send(self, body: dict[str, Any]) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...


class RequestFailed(EndpointError):
    """A request that failed for good (after bounded retries, or a non-retryable error)."""


@dataclass
class ClientStats:
    """Counters for progress bars and reports."""

    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retry_reasons: dict[str, int] = field(default_factory=dict)


class EndpointLimit:
    """The requests in flight to one server: at most ``concurrency``, or its own slots once it said them.

    ``ask_slots`` (set when the user chose no concurrency) is awaited once, before the first request is
    let through, and a positive answer replaces the default: with as many requests in flight as the
    server has slots none waits in its queue, so no request's timeout runs out there (seen: 16 in
    flight against 1 slot, 120 s timeouts, 15 attempts for 8 requests)."""

    def __init__(
        self, concurrency: int, source: str, ask_slots: Callable[[], Awaitable[int | None]] | None = None
    ) -> None:
        self.concurrency = concurrency
        #: Where the concurrency came from: "set" (flag, config, run), "default" or "server slots".
        self.source = source
        self._ask_slots = ask_slots
        self._semaphore = asyncio.Semaphore(concurrency)
        self._asking: asyncio.Lock | None = None
        #: Called with the server's slots once they are known (the HTTP backend sizes its connections).
        self.on_slots: list[Callable[[int], None]] = []

    async def settle(self) -> None:
        """Ask the server for its slots now, if that is still to do (a manifest then records them)."""
        if self._ask_slots is not None:
            await self._settle()

    async def _settle(self) -> None:
        if self._asking is None:
            self._asking = asyncio.Lock()
        async with self._asking:  # the others wait here: no request passes the old limit meanwhile
            if self._ask_slots is None:
                return
            try:
                slots = await self._ask_slots()
            finally:
                self._ask_slots = None
            if slots is not None:
                self.concurrency, self.source = slots, "server slots"
                self._semaphore = asyncio.Semaphore(slots)
                for hook in self.on_slots:
                    hook(slots)

    async def __aenter__(self) -> None:
        await self.settle()
        await self._semaphore.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._semaphore.release()


class ModelClient:
    """Concurrency-limited, retrying, caching chat client for one model."""

    def __init__(
        self,
        spec: ModelSpec,
        backend: Backend,
        identity: str,
        request_model: str,
        concurrency: int,
        policy: RetryPolicy,
        cache: ResponseCache | None = None,
        limit: EndpointLimit | None = None,
    ) -> None:
        self.spec = spec
        self.backend = backend
        self.identity = identity
        #: The endpoint label in run-store call keys: a resumed run keeps the one it started with, so its
        #: stored answers replay even when it now reaches the role at another URL.
        self.call_identity = identity
        self.request_model = request_model
        self.policy = policy
        self.cache = cache
        self.stats = ClientStats()
        self._limit = limit or EndpointLimit(concurrency, "set")
        self._rng = random.Random()
        self._params_fields: tuple[GenerationParams | None, dict[str, Any]] = (None, {})
        #: Request fields this role sets itself (a role's ``params``): a run merges them into each call
        #: of the role (:func:`llmpsych.runs.params.merge_params`); the body sends the merged parameters.
        self.overrides: dict[str, Any] = {}
        #: Where requests go, as the manifest records it (provider, address, sources; never a key).
        self.endpoint_info: dict[str, Any] = {}

    @property
    def endpoint_key(self) -> str:
        """What the concurrency limit is per: the server (HTTP) or the loaded model (embedded)."""
        return self.identity.split("#", 1)[0]

    @property
    def concurrency(self) -> int:
        """Requests in flight at most (the server's slots once it reported them)."""
        return self._limit.concurrency

    async def settle_concurrency(self) -> None:
        """Settle the concurrency before the first request (asks the server for its slots, see
        :class:`EndpointLimit`), so that :meth:`describe` records the one the requests will get."""
        await self._limit.settle()

    def share_limit_with(self, other: ModelClient) -> None:
        """Use ``other``'s concurrency limit (two models served by one endpoint share its limit)."""
        self._limit = other._limit
        if isinstance(self.backend, HttpBackend):
            self._limit.on_slots.append(partial(setattr, self.backend, "concurrency"))

    def body(self, messages: list[Message], params: GenerationParams) -> dict[str, Any]:
        """The chat-completions request body."""
        # A run sends the same (frozen) params object with nearly every request: its fields are
        # computed once for it instead of a pydantic dump per request.
        if self._params_fields[0] is not params:
            self._params_fields = (params, params.request_fields())
        return {"model": self.request_model, "messages": messages, **self._params_fields[1]}

    @staticmethod
    def encode(body: dict[str, Any]) -> str:
        """The canonical JSON of a request body (sorted keys), as stored, hashed and sent by the runs."""
        return canonical_json(body)

    def call_key(self, encoded_body: str, sample: str) -> str:
        """A run store's key for a request: this model, the canonical body and the sample label."""
        text = "\x00".join((self.call_identity, self.request_model, sample, encoded_body))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def key(self, messages: list[Message], params: GenerationParams, sample: str = "0") -> str:
        """The cache key of a request."""
        return cache_key(self.identity, self.request_model, self.body(messages, params), sample)

    async def complete(
        self,
        messages: list[Message],
        params: GenerationParams | None = None,
        sample: str | int = 0,
        encoded: str | None = None,
    ) -> ChatResult:
        """Answer one chat request (from the cache when possible).

        ``encoded`` is the body as :meth:`encode` gives it, when the caller has it already: a backend
        with ``send_encoded`` (HTTP) then sends it as it is instead of encoding the body again.
        """
        params = params or GenerationParams()
        send_encoded = getattr(self.backend, "send_encoded", None)
        # The body as a dict is needed only when it has not been encoded or the backend encodes it itself.
        body: dict[str, Any] = {}
        if encoded is None or send_encoded is None:
            body = self.body(messages, params)
        key = ""
        if self.cache is not None:
            request = body if encoded is None else encoded  # the same key either way
            key = cache_key(self.identity, self.request_model, request, str(sample))
            if (hit := self.cache.get(key)) is not None:
                self.stats.cache_hits += 1
                return hit
        failed_attempts: list[str] = []

        def note_retry(attempt: int, reason: str) -> None:
            failed_attempts.append(reason)
            self._note_retry(attempt, reason)

        if encoded is not None and send_encoded is not None:
            send = partial(send_encoded, encoded.encode("utf-8"))
        else:
            send = partial(self.backend.send, body)

        async def attempt() -> ChatResult:
            """One attempt, read inside the retry loop: a reply without a message is retried."""
            try:
                return ChatResult.from_response(await send())
            except MalformedReply as exc:
                raise RetryableError(f"malformed response: {exc}") from None

        async with self._limit:
            started = time.perf_counter()
            try:
                result, attempts = await call_with_retries(attempt, self.policy, self._rng, note_retry)
            except RetriesExhausted as exc:
                self.stats.failures += 1
                raise RequestFailed(f"{self.spec}: {exc}") from None
            except FatalRequestError as exc:
                self.stats.failures += 1
                raise RequestFailed(f"{self.spec}: {exc}") from None
            result.latency_s = time.perf_counter() - started
        result.attempts = attempts
        result.errors = failed_attempts
        self.stats.requests += 1
        self.stats.prompt_tokens += result.usage.prompt_tokens
        self.stats.completion_tokens += result.usage.completion_tokens
        if self.cache is not None:
            self.cache.put(key, self.identity, self.request_model, result)
        return result

    def _note_retry(self, attempt: int, reason: str) -> None:
        self.stats.retries += 1
        self.stats.retry_reasons[reason] = self.stats.retry_reasons.get(reason, 0) + 1

    def describe(self) -> dict[str, Any]:
        """What the manifest records about this model (never the key)."""
        return {
            "spec": self.spec.text,
            **self.endpoint_info,
            "identity": self.identity,
            "concurrency": self.concurrency,
            "concurrency_from": self._limit.source,
            "max_retries": self.policy.max_retries,
            **({"params": self.overrides} if self.overrides else {}),
        }

    async def aclose(self) -> None:
        """Release connections."""
        await self.backend.aclose()


#: A backend's opener, as :data:`~llmpsych.models.backends.BACKENDS` holds it.
Opener = Callable[[ModelSpec, ClientOptions], ModelClient]


def open_client(
    spec: ModelSpec | str,
    *,
    base_url: str | None = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    cache: ResponseCache | None = None,
    embedded: EmbeddedSettings | None = None,
    url_source: str = "--base-url",
) -> ModelClient:
    """Build a client from a parsed model spec (text is parsed here, once: see :mod:`llmpsych.models.spec`),
    by the opener its kind is registered with (:mod:`llmpsych.models.backends`).

    ``base_url`` is refused for an endpoint with its own URL (``openai/``, ``openrouter/``, named
    endpoints): see :func:`~llmpsych.models.spec.resolve_endpoint`. ``url_source`` names where it came from.
    """
    if isinstance(spec, str):
        spec = parse_model_spec(spec)
    options = ClientOptions(base_url, concurrency, timeout, max_retries, cache, embedded, url_source)
    opener: Opener = BACKENDS.get(spec.kind)
    return opener(spec, options)


def open_http(spec: ModelSpec, options: ClientOptions) -> ModelClient:
    """The client of an OpenAI-compatible endpoint (the ``http`` backend)."""
    endpoint = resolve_endpoint(
        spec,
        options.base_url,
        options.concurrency,
        options.timeout,
        options.max_retries,
        url_source=options.url_source,
    )
    backend = HttpBackend(endpoint)
    ask = not endpoint.concurrency_set and spec.endpoint not in KEY_REQUIRED  # hosted APIs: no slots
    source = "set" if endpoint.concurrency_set else "default"
    limit = EndpointLimit(endpoint.concurrency, source, backend.server_slots if ask else None)
    limit.on_slots.append(partial(setattr, backend, "concurrency"))
    client = ModelClient(
        spec,
        backend,
        endpoint.identity,
        endpoint.model,
        endpoint.concurrency,
        RetryPolicy(max_retries=endpoint.max_retries),
        options.cache,
        limit,
    )
    client.endpoint_info = endpoint.describe()
    return client


def open_embedded(spec: ModelSpec, options: ClientOptions) -> ModelClient:
    """The client of a model llama.cpp runs in this process (the ``embedded`` backend)."""
    if options.base_url is not None:
        raise ModelSpecError(f"{spec} is an embedded model: {options.url_source} does not apply to it")
    settings = (options.embedded or EmbeddedSettings()).with_context(spec.ctx)
    if spec.endpoint == "local":
        name = spec.model or DEFAULT_EMBEDDED_MODEL
        path = model_file(name)
        identity = f"embedded:sha256={catalog_entry(name).sha256}"
    else:
        path = gguf_path(spec)
        stat = path.stat()
        identity = f"embedded:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    model = load_embedded(path, settings)
    concurrency = options.concurrency
    client = ModelClient(
        spec,
        EmbeddedBackend(model),
        identity,
        spec.model,
        concurrency or settings.n_parallel,
        RetryPolicy(max_retries=2 if options.max_retries is None else options.max_retries),
        options.cache,
        EndpointLimit(concurrency or settings.n_parallel, "set" if concurrency else "slots (n_parallel)"),
    )
    client.endpoint_info = {"provider": "embedded", "endpoint": "in-process", "key_from": None}
    return client

"""The fault-injecting endpoint: an OpenAI-compatible server in front of any model llmpsych can call.

A framework is pointed at it by its base URL and API key setting (the key is this endpoint's token, never
the upstream key). Each ``POST /v1/chat/completions`` goes through :class:`~.session.FaultSession`; the
reply is sent as JSON, or as server-sent events when the request asks for ``stream`` (the upstream is
asked without streaming, since a fault needs the whole text; the chunks are made from the final reply).

Safe by default:

* bound to 127.0.0.1 (``host`` elsewhere is the caller's explicit choice) on a socket bound before the
  server starts, so the URL given is the one that answers;
* every request needs ``Authorization: Bearer <token>`` (a fresh 256-bit token per endpoint, compared in
  constant time) and a ``Host`` header naming this server (against DNS rebinding); no CORS header, so no
  web page can use it;
* the upstream key is resolved by the same rules as a run (:func:`llmpsych.runs.clients.open_clients`):
  it goes only to its own endpoint, never to the framework, the run store or a log;
* request bodies are bounded (:data:`MAX_BODY_BYTES`), uvicorn's connection limits are those of
  ``llmpsych web`` (:func:`llmpsych.serving.listen.server_config`).

Python use (the API other code builds on; stable)::

    from llmpsych.faults import running, load_plan
    with running(load_plan("plan.toml"), upstream="openai-compatible/m", base_url=URL, out=RUN) as ep:
        client = OpenAI(base_url=ep.base_url, api_key=ep.token)
"""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import ConfigError
from ..models.client import ModelClient
from ..report.files import atomic_write_text
from ..runs.clients import open_clients
from ..runs.config import RunConfig
from ..runs.manifest import build_manifest
from ..runs.runner import MANIFEST_FILE, analyze_run, new_run_dir
from ..runs.store import STORE_FILE, RunStore, run_lock
from ..serving.hosts import host_allowed, host_names, new_token, split_host
from ..serving.listen import bind, is_loopback, server_config, url_host
from .plan import FaultPlan, parse_plan
from .session import FaultSession, Reply, UnitResult, header_problem

#: The task name of an endpoint's run (:class:`llmpsych.faults.task.FaultsTask`).
TASK = "faults"
#: The largest request body accepted (a long conversation with tools fits many times over).
MAX_BODY_BYTES = 16 * 2**20
#: Characters per streamed content chunk.
CHUNK_CHARS = 64


@dataclass(frozen=True)
class Endpoint:
    """A running endpoint: where to point the framework (``base_url``, ending in ``/v1``), the token to
    give it as its API key, and the run folder recording everything."""

    base_url: str
    token: str
    run_dir: Path


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status)


def _json_body(raw: bytes) -> dict[str, Any] | str:
    """The parsed request, or why it is refused."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"{text} is out of range")
        return value

    try:
        body = json.loads(raw, parse_constant=no_constant, parse_float=finite)
        json.dumps(body, ensure_ascii=False).encode("utf-8")  # a lone surrogate (\ud800) cannot be sent on
    except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return "the request body is not JSON (or holds a number out of range or a lone surrogate)"
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        return "messages must be a non-empty list of message objects"
    if body.get("n", 1) not in (1, None):
        return "n must be 1: the fault endpoint answers one choice (faults apply to one reply)"
    return body


def completion(reply: Reply, result: UnitResult) -> dict[str, Any]:
    """The chat-completions body of a reply (a held one also says ``"llmpsych": {"call": <its number>}``,
    the number its delivery names)."""
    message = reply.message
    finish = reply.finish_reason or ("tool_calls" if message.get("tool_calls") else "stop")
    body = {
        "id": f"chatcmpl-llmpsych-{result.call}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": result.model_sent,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(reply),
    }
    if reply.held_call is not None:
        body["llmpsych"] = {"call": reply.held_call}
    return body


def _usage(reply: Reply) -> dict[str, int]:
    prompt = int(reply.usage.get("prompt_tokens", 0))
    done = int(reply.usage.get("completion_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}


def chunks(reply: Reply, result: UnitResult, usage: bool) -> Iterator[bytes]:
    """The server-sent events of a streamed reply: the role, the content in pieces, the tool calls, the
    finish reason (and the usage when asked for), then ``[DONE]``."""
    base = {
        "id": f"chatcmpl-llmpsych-{result.call}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": result.model_sent,
    }

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"

    message = reply.message
    yield event({"role": "assistant", "content": ""})
    text = message.get("content") or ""
    for start in range(0, len(text), CHUNK_CHARS):
        yield event({"content": text[start : start + CHUNK_CHARS]})
    for index, call in enumerate(message.get("tool_calls") or []):
        yield event({"tool_calls": [{"index": index, **call}]})
    yield event({}, reply.finish_reason or ("tool_calls" if message.get("tool_calls") else "stop"))
    if usage:
        yield b"data: " + json.dumps({**base, "choices": [], "usage": _usage(reply)}).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


def create_app(session: FaultSession, *, token: str, port: int, hosts: set[str]) -> Starlette:
    """The ASGI app of an endpoint (every route behind the token and the Host check)."""

    def refused(request: Request) -> Response | None:
        name, given_port = split_host(request.headers.get("host", "").lower())
        if not host_allowed(name, hosts) or given_port != str(port):
            return _error(421, "unknown Host header")
        supplied = request.headers.get("authorization", "")
        if not hmac.compare_digest(supplied.encode(), f"Bearer {token}".encode()):
            return _error(
                401, "a valid bearer token is needed (the endpoint's token)", "authentication_error"
            )
        return None

    async def models(request: Request) -> Response:
        if (refusal := refused(request)) is not None:
            return refusal
        names = [a.model for a in session.plan.agents if a.model] or [
            session.clients["subject"].request_model
        ]
        return JSONResponse({"object": "list", "data": [{"id": n, "object": "model"} for n in names]})

    async def chat(request: Request) -> Response:
        if (refusal := refused(request)) is not None:
            return refusal
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            return _error(413, f"request body over {MAX_BODY_BYTES} bytes")
        raw = bytearray()
        try:
            async for piece in request.stream():
                raw += piece
                if len(raw) > MAX_BODY_BYTES:
                    return _error(413, f"request body over {MAX_BODY_BYTES} bytes")
        except ClientDisconnect:
            return Response(status_code=400)
        body = _json_body(bytes(raw))
        if isinstance(body, str):
            return _error(400, body)
        headers = {k.lower(): v for k, v in request.headers.items()}
        if (problem := header_problem(headers)) is not None:
            return _error(400, problem)
        reply, result = await session.handle(body, headers)
        if reply.status == 400:
            return _error(400, reply.error)
        if reply.status in (500, 502):
            return _error(
                reply.status, reply.error, "upstream_error" if reply.status == 502 else "server_error"
            )
        if reply.fault == "timeout":
            await asyncio.sleep(reply.delay_s)
            return _error(504, reply.error, "timeout")
        stream = bool(body.get("stream"))
        if reply.fault == "malformed":
            from .session import MALFORMED_BODY

            if stream:
                return Response(b"data: " + MALFORMED_BODY, 200, media_type="text/event-stream")
            return Response(MALFORMED_BODY, 200, media_type="application/json")
        if stream:
            options = body.get("stream_options")
            usage = isinstance(options, dict) and options.get("include_usage") is True

            async def events() -> AsyncIterator[bytes]:
                for piece in chunks(reply, result, usage):
                    yield piece

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse(completion(reply, result))

    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/models", models, methods=["GET"]),
    ]
    return Starlette(routes=routes)


def endpoint_config(
    plan: FaultPlan,
    upstream: str,
    *,
    base_url: str | None = None,
    seed: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    concurrency: int | None = None,
) -> RunConfig:
    """The run config an endpoint records: the upstream model (role ``subject``), its base URL, the seed
    and the plan (the task's only option)."""
    return RunConfig(
        task=TASK,
        model=upstream,
        base_url=base_url,
        seed=plan.seed if seed is None else seed,
        timeout=timeout,
        max_retries=max_retries,
        concurrency=concurrency,
        cache=False,
        options={"plan": plan.model_dump(mode="json")},
    )


@contextmanager
def running(
    plan: FaultPlan | None = None,
    *,
    upstream: str | None = None,
    base_url: str | None = None,
    out: Path | str | None = None,
    resume: Path | str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    seed: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    analyze: bool = True,
    token: str | None = None,
) -> Iterator[Endpoint]:
    """Serve a fault endpoint while the block runs; yields its :class:`Endpoint` (``base_url``, ``token``,
    ``run_dir``).

    ``upstream`` is a model spec (``openai-compatible/<model>`` with ``base_url``, ``openai/<model>``, a
    named endpoint, ``local/<name>``); its key is found as a run finds it and goes only to it. ``out`` is
    the run folder to create (a parent folder: a new ``faults-<time>`` folder in it when it exists and
    holds no run; default ``llmpsych-runs/``); ``resume`` continues the run in that folder with its stored
    plan and model (requests answered before are answered from the store). At the end the run is
    analysed (``ground_truth.csv``, ``report.md``) unless ``analyze`` is False. ``token``: the bearer token
    to require (default: a new one).
    """
    if resume is not None:
        run_dir = Path(resume)
        with RunStore.in_dir(run_dir, readonly=True) as peek:
            stored = peek.get_meta("config")
        if not isinstance(stored, dict) or stored.get("task") != TASK:
            raise ConfigError(f"{run_dir} holds no fault-endpoint run", "start one with --out")
        config = RunConfig.model_validate(stored)
        if base_url is not None:
            config = config.model_copy(update={"base_url": base_url})
        plan = parse_plan(config.options.get("plan"), f"stored in {run_dir}")
    else:
        if plan is None or upstream is None:
            raise ConfigError("a fault endpoint needs a plan and an upstream model")
        config = endpoint_config(
            plan, upstream, base_url=base_url, seed=seed, timeout=timeout, max_retries=max_retries
        )
        target = Path(out) if out is not None else Path("llmpsych-runs")
        run_dir = (
            new_run_dir(target, TASK) if target.is_dir() and not (target / STORE_FILE).exists() else target
        )
        if (run_dir / STORE_FILE).exists():
            raise ConfigError(
                f"{run_dir} already holds a run", "continue it with --resume, or choose a new --out"
            )
    assert plan is not None
    clients = open_clients(config, None)
    sock = bind(host, port)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with run_lock(run_dir):
            store = RunStore.in_dir(run_dir, create=resume is None)
            try:
                if resume is None:
                    store.set_meta("config", config.stored())
                    store.set_meta("display", {"progress": False})
                    manifest = build_manifest(config, clients, [], 0)
                    store.set_meta("manifest", manifest)
                    atomic_write_text(run_dir / MANIFEST_FILE, json.dumps(manifest, indent=2) + "\n")
                session = FaultSession(plan, clients, store, config.seed)
                bound_port = sock.getsockname()[1]
                token = token or new_token()
                app = create_app(session, token=token, port=bound_port, hosts=host_names(host))
                server = uvicorn.Server(server_config(app))
                failure: list[BaseException] = []
                thread = threading.Thread(
                    target=_serve, args=(server, sock, session, clients, failure), daemon=True
                )
                thread.start()
                try:
                    yield Endpoint(f"http://{url_host(host)}:{bound_port}/v1", token, run_dir)
                finally:
                    server.should_exit = True
                    thread.join()
            finally:
                store.close()
        if failure:
            raise ConfigError(f"the fault endpoint stopped: {failure[0]}")
        if analyze:
            analyze_run(run_dir)
    finally:
        sock.close()


def _serve(
    server: uvicorn.Server,
    sock: Any,
    session: FaultSession,
    clients: dict[str, ModelClient],
    failure: list[BaseException],
) -> None:
    async def main() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            session.commits.flush()
            for client in {id(c): c for c in clients.values()}.values():
                with suppress(Exception):
                    await client.aclose()

    try:
        asyncio.run(main())
    except BaseException as exc:  # reported by the caller's thread, in one line
        failure.append(exc)


def warning_lines(host: str) -> list[str]:
    """What a person starting an endpoint must be told about where it can be reached."""
    if is_loopback(host):
        return ["only this machine can reach it (loopback); every request needs the token"]
    return [
        f"WARNING: bound to {host}: anyone who can reach this machine can connect; the token still guards "
        "every request, but the connection is plain HTTP (not encrypted): use it only on a network you trust"
    ]

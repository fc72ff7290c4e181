"""Throughput of the full run engine against an OpenAI-compatible server with a fixed 100 ms latency.

    python benchmarks/throughput_http.py                    # 5,000 requests at concurrency 64 (~4 min)
    python benchmarks/throughput_http.py --quick            # 1,000 requests
    python benchmarks/throughput_http.py --sweep 8,16,32,64 # 40 x concurrency requests per setting
    python benchmarks/throughput_http.py --requests 2000 --plan asyncio:llmpsych --profile out
                                                            # cProfile of the run engine -> out.llmpsych.txt

Every measurement uses a fresh server process and a fresh client process, so the client's CPU time
and peak RSS are its own. Servers (see ``_common.py``): ``asyncio`` (a minimal asyncio server, timers
instead of threads), ``fault`` (llmpsych's ThreadingHTTPServer-based FaultServer, listen backlog
1024) and ``fault-nodelay`` (the same with TCP_NODELAY). Clients:

* ``llmpsych`` - the full run engine: task ``echo`` with one request per unit, model
  ``openai-compatible/bench``, response cache off, ``concurrency`` = ``workers`` = 64, run store in a
  temporary directory; timed around ``start_run`` (store, manifest, execution, analysis). Requests go
  through ``llmpsych.models.http_backend`` on llmpsych's own HTTP/1.1 client (``llmpsych.models.http11``)
  with the response bounds (32 MiB body cap, bounded gzip decoding, one deadline);
* ``raw`` - a minimal asyncio-streams HTTP/1.1 client: what the server allows, at almost no client cost;
* ``aiohttp`` - a bare ``aiohttp.ClientSession`` with llmpsych's connection limit (llmpsych's HTTP library
  until November 2026; installed with the ``dev`` extra);
* ``httpx`` - a bare ``httpx.AsyncClient`` with the same limits (the library llmpsych used before);
* diagnostics: ``httpx2`` (httpx's API-compatible fork, bare),
  ``llmpsych+httpx`` and ``llmpsych+httpx2`` (the run engine with ``HttpBackend.send`` replaced by the
  previous httpx-based implementation, on ``httpx`` or ``httpx2``) and ``llmpsych+nohttp``
  (``HttpBackend.send_encoded`` replaced by a 100 ms sleep and the server-slots question skipped: no
  HTTP request at all, counted to make sure: the run engine's own cost).

Reported: wall time, ideal time (requests x latency / concurrency), ideal/wall, CPU time per request of
the client process and of the server process, and the client's peak RSS (``ru_maxrss``); with both
``llmpsych`` and ``llmpsych+nohttp`` in the plan, their difference: the **HTTP layer's CPU per request**
(the HTTP client, the response bounds, JSON parsing). ``--reps N`` measures each pair N times and keeps
the one with the least client CPU time (the least disturbed by other work). ``--against OTHER/src``
measures each llmpsych client on another source tree too, run for run in turn (rows ``client@other``).
Results go to
``benchmarks/results/throughput_http.json`` (``throughput_http.sweep.json`` for ``--sweep``).

The difference counts more than the HTTP client: the run store commits once per event-loop turn with
answers to record (``runs/group_commit.py``, ~80 us a commit), and answers arriving one by one over
sockets (the server on the other core) take more turns than 64 sleeps ending together, the more so on an
idle machine. The ``store commits`` column shows it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    LoadMonitor,
    ServerProcess,
    check_quiet,
    cpu_seconds,
    markdown_table,
    peak_rss_mb,
    profiled,
    write_results,
)

LATENCY_S = 0.1


# -- measurements, each run in a child process ----------------------------------------------------------
def _body(i: int) -> dict[str, Any]:
    return {
        "model": "bench",
        "messages": [{"role": "user", "content": f"unit {i} seat 0: say something"}],
        "temperature": 0.0,
        "max_tokens": 8,
    }


def measure_raw(base_url: str, requests: int, concurrency: int) -> dict[str, Any]:
    """A minimal HTTP/1.1 client on asyncio streams: what the server allows, with almost no client cost."""
    host, port = base_url.split("//", 1)[1].split("/", 1)[0].split(":")
    remaining = iter(range(requests))
    ok = 0

    async def worker() -> None:
        nonlocal ok
        reader, writer = await asyncio.open_connection(host, int(port))
        for i in remaining:
            payload = json.dumps(_body(i)).encode()
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(payload), payload)
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
            data = json.loads(await reader.readexactly(length))
            ok += head.startswith(b"HTTP/1.1 200") and bool(data["choices"][0]["message"]["content"])
        writer.close()

    async def run() -> None:
        await asyncio.gather(*(worker() for _ in range(concurrency)))

    cpu0, t0 = cpu_seconds(), time.perf_counter()
    asyncio.run(run())
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    return {"wall_s": wall, "cpu_s": cpu, "ok": ok, "peak_rss_mb": peak_rss_mb()}


def measure_httpx(base_url: str, requests: int, concurrency: int, module: str = "httpx") -> dict[str, Any]:
    """A bare ``httpx.AsyncClient`` (or the API-compatible ``httpx2``) sharing ``requests`` POSTs."""
    httpx = importlib.import_module(module)

    async def run() -> int:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        remaining = iter(range(requests))
        ok = 0
        async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=120) as client:

            async def worker() -> None:
                nonlocal ok
                for i in remaining:
                    response = await client.post("/chat/completions", json=_body(i))
                    response.raise_for_status()
                    ok += bool(response.json()["choices"][0]["message"]["content"])

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        return ok

    cpu0, t0 = cpu_seconds(), time.perf_counter()
    ok = asyncio.run(run())
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    return {"wall_s": wall, "cpu_s": cpu, "ok": ok, "peak_rss_mb": peak_rss_mb()}


def measure_aiohttp(base_url: str, requests: int, concurrency: int) -> dict[str, Any]:
    """A bare ``aiohttp.ClientSession`` (connector limit = concurrency) sharing ``requests`` POSTs."""
    import aiohttp

    url = base_url.rstrip("/") + "/chat/completions"

    async def run() -> int:
        remaining = iter(range(requests))
        ok = 0
        connector = aiohttp.TCPConnector(limit=concurrency)
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

            async def worker() -> None:
                nonlocal ok
                for i in remaining:
                    async with session.post(url, json=_body(i)) as response:
                        response.raise_for_status()
                        data = json.loads(await response.read())
                    ok += bool(data["choices"][0]["message"]["content"])

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        return ok

    cpu0, t0 = cpu_seconds(), time.perf_counter()
    ok = asyncio.run(run())
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    return {"wall_s": wall, "cpu_s": cpu, "ok": ok, "peak_rss_mb": peak_rss_mb()}


def use_httpx_backend(backend_class: Any, module: str) -> None:
    """Diagnostic: give ``HttpBackend`` the send/aclose of llmpsych's previous httpx-based backend.

    The same requests, limits, timeout and error mapping as before the move to aiohttp, on ``httpx``
    (0.28, httpcore's pool) or its API-compatible fork ``httpx2``.
    """
    httpx = importlib.import_module(module)
    from llmpsych.models.http_backend import RETRYABLE_STATUS, _error_message, parse_retry_after
    from llmpsych.models.retry import FatalRequestError, RetryableError

    def client(self: Any) -> Any:
        if "_httpx" not in self.__dict__:
            endpoint = self.endpoint
            limits = httpx.Limits(
                max_connections=endpoint.concurrency, max_keepalive_connections=endpoint.concurrency
            )
            self._httpx = httpx.AsyncClient(
                base_url=endpoint.base_url,
                headers=self._headers,
                limits=limits,
                timeout=httpx.Timeout(endpoint.timeout),
            )
        return self._httpx

    async def send(self: Any, body: dict[str, Any]) -> dict[str, Any]:
        return await send_encoded(self, json.dumps(body).encode())

    async def send_encoded(self: Any, payload: bytes) -> dict[str, Any]:
        try:
            response = await client(self).post("/chat/completions", content=payload)
        except httpx.TimeoutException:
            raise RetryableError(f"timeout after {self.endpoint.timeout:g} s") from None
        except httpx.TransportError as exc:
            raise RetryableError(f"connection error: {type(exc).__name__}") from None
        if response.status_code in RETRYABLE_STATUS:
            raise RetryableError(
                f"HTTP {response.status_code}", parse_retry_after(response.headers.get("retry-after"))
            )
        if response.status_code >= 400:
            raise FatalRequestError(f"HTTP {response.status_code}: {_error_message(response.content)}")
        try:
            data = response.json()
            if not isinstance(data, dict) or not data.get("choices"):
                raise ValueError("no choices")
            data["choices"][0]["message"]  # noqa: B018 - shape check
        except (ValueError, KeyError, IndexError, TypeError):
            raise RetryableError("malformed response body") from None
        return data

    async def aclose(self: Any) -> None:
        if "_httpx" in self.__dict__:
            await self.__dict__.pop("_httpx").aclose()

    backend_class.send = send
    backend_class.send_encoded = send_encoded  # the one the run engine calls
    backend_class.aclose = aclose


def measure_llmpsych(
    base_url: str, requests: int, concurrency: int, transport: str = "", profile: str | None = None
) -> dict[str, Any]:
    """The full run engine: task echo, one request per unit.

    ``transport=""`` is llmpsych as it is. Diagnostics: ``"httpx"`` / ``"httpx2"`` put the previous
    httpx-based ``HttpBackend.send`` back (see :func:`use_httpx_backend`);
    ``transport="nohttp"`` replaces ``HttpBackend.send`` and ``HttpBackend.send_encoded`` (the one the
    run engine calls) by ``asyncio.sleep(latency)`` and a canned answer: no socket is opened and nothing is
    sent, which leaves the cost of the run engine alone (store, unit context, client, task). llmpsych
    minus llmpsych+nohttp is the HTTP layer's own cost (the HTTP client, the response bounds, JSON parsing).
    Until November 2026 only ``send`` was replaced, which the engine no longer calls: the diagnostic sent
    real HTTP.
    """
    import llmpsych.models.http_backend as http_backend

    # Store commits: one per event-loop turn that has answers to record (runs/group_commit.py, ~80 us
    # each). Answers that arrive one by one over sockets take more turns than sleeps ending together.
    from llmpsych.runs import group_commit, parse_run_config, start_run
    from llmpsych.runs.store import RunStore

    commits = [0]
    flush = group_commit.GroupCommit.flush

    def counted_flush(self: Any) -> None:
        commits[0] += bool(self._pending)
        flush(self)

    group_commit.GroupCommit.flush = counted_flush  # type: ignore[method-assign]
    sent = [0]
    if transport == "nohttp":

        async def send(self: Any, body: Any) -> dict[str, Any]:
            await asyncio.sleep(LATENCY_S)
            return {
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "ok"}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 1},
            }

        async def no_slots(self: Any) -> None:
            return None

        # the proof that nothing is sent: every request of the HTTP stack is counted, the run refused if not 0
        if hasattr(http_backend, "aiohttp"):  # a tree from before November 2026 (--against)
            stack, method = http_backend.aiohttp.ClientSession, "_request"
        else:
            from llmpsych.models.http11 import HttpClient as stack

            method = "request"
        real_request = getattr(stack, method)

        async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            sent[0] += 1
            return await real_request(self, *args, **kwargs)

        http_backend.HttpBackend.send = send  # type: ignore[method-assign]
        http_backend.HttpBackend.send_encoded = send  # type: ignore[method-assign]
        http_backend.HttpBackend.server_slots = no_slots  # type: ignore[method-assign]
        setattr(stack, method, counted)
    elif transport:
        use_httpx_backend(http_backend.HttpBackend, transport)
    config = parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/bench",
            "base_url": base_url,
            "cache": False,
            "concurrency": concurrency,
            "workers": concurrency,
            "options": {"units": requests, "turns": 1, "parallel": 1},
        }
    )
    with tempfile.TemporaryDirectory(prefix="llmpsych-bench-") as tmp:
        run_dir = Path(tmp) / "run"
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        with profiled(profile, top_own=20):
            outcome = start_run(config, run_dir, show_progress=False)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        store = RunStore.in_dir(run_dir)
        try:
            stored_calls = store.call_count()
        finally:
            store.close()
    summary = outcome.summary
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "execute_s": summary.seconds,
        "ok": summary.done if stored_calls == requests else 0,
        "failed": summary.failed,
        "stored_calls": stored_calls,
        "peak_rss_mb": peak_rss_mb(),
        "store_commits": commits[0],
        **({"http_requests_sent": sent[0]} if transport == "nohttp" else {}),
    }


CLIENTS = {
    "raw": "minimal asyncio-streams HTTP/1.1 client (server capacity check)",
    "aiohttp": "bare aiohttp.ClientSession (llmpsych's HTTP library until November 2026)",
    "llmpsych": "full run engine, llmpsych's HTTP/1.1 client with response bounds (echo task, cache off, "
    "concurrency = workers)",
    "httpx": "bare httpx.AsyncClient (the HTTP library llmpsych used before aiohttp)",
    "llmpsych+httpx": "full run engine with the previous httpx-based HttpBackend.send (diagnostic)",
    "httpx2": "bare httpx2.AsyncClient (diagnostic: fork with a linear-time connection pool)",
    "llmpsych+httpx2": "full run engine with the previous HttpBackend.send on httpx2 (diagnostic)",
    "llmpsych+nohttp": "full run engine, HttpBackend.send_encoded replaced by a 100 ms sleep (diagnostic: "
    "no HTTP request at all)",
}
FULL_PLAN = (
    "asyncio:raw,asyncio:llmpsych,asyncio:aiohttp,asyncio:httpx,asyncio:llmpsych+httpx,"
    "asyncio:httpx2,asyncio:llmpsych+httpx2,asyncio:llmpsych+nohttp,fault:raw,fault-nodelay:raw"
)

SWEEP_PLAN = "asyncio:llmpsych,asyncio:httpx,asyncio:llmpsych+httpx"


def measure(client: str, base_url: str, requests: int, concurrency: int, profile: str | None) -> dict:
    if client == "raw":
        return measure_raw(base_url, requests, concurrency)
    if client in ("httpx", "httpx2"):
        return measure_httpx(base_url, requests, concurrency, client)
    if client == "aiohttp":
        return measure_aiohttp(base_url, requests, concurrency)
    transport = client.partition("+")[2]
    return measure_llmpsych(base_url, requests, concurrency, transport, profile)


def run_child(
    client: str,
    base_url: str,
    requests: int,
    concurrency: int,
    profile: str | None = None,
    src: Path | None = None,
) -> dict:
    """Run one measurement in a fresh interpreter so its CPU time and peak RSS are its own (``src``:
    llmpsych imported from that source tree)."""
    cmd = [sys.executable, __file__, "--child", client, "--base-url", base_url]
    cmd += ["--requests", str(requests), "--concurrency", str(concurrency)]
    if profile:
        cmd += ["--profile", profile]
    # no user config (a missing file; os.devnull is refused as not a regular file)
    env = {**os.environ, "LLMPSYCH_CONFIG": str(Path(tempfile.gettempdir()) / "llmpsych-no-config.toml")}
    # llmpsych from this tree unless another is named (not whichever llmpsych the environment has installed)
    env["PYTHONPATH"] = str(src if src is not None else Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


# -- orchestration --------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1,000 requests instead of 5,000")
    parser.add_argument("--requests", type=int, help="requests per measurement (default 5000)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--plan", default=FULL_PLAN, help=f"comma-separated server:client pairs (default {FULL_PLAN})"
    )
    parser.add_argument(
        "--profile", help="profile each llmpsych run with cProfile (slows it down); write FILE.<client>.txt"
    )
    parser.add_argument(
        "--sweep",
        help="comma-separated concurrencies, e.g. 8,16,32,64: 40 x concurrency requests each (unless "
        f"--requests), plan {SWEEP_PLAN}; writes throughput_http.sweep.json",
    )
    parser.add_argument(
        "--reps", type=int, default=1, help="measure each pair this many times; the least CPU time counts"
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="another source tree (e.g. /tmp/main/src): each llmpsych client is measured in both, run for "
        "run in turn; the other tree's rows are named client@other",
    )
    parser.add_argument("--child", choices=list(CLIENTS), help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    requests = args.requests or (1000 if args.quick else 5000)

    if args.child:
        print(json.dumps(measure(args.child, args.base_url, requests, args.concurrency, args.profile)))
        return

    sweep = [int(c) for c in args.sweep.split(",")] if args.sweep else []
    if sweep and args.plan == FULL_PLAN:
        args.plan = SWEEP_PLAN
    busy_before = check_quiet()
    runs: list[dict[str, Any]] = []
    with LoadMonitor() as load:
        for concurrency in sweep or [args.concurrency]:
            n = args.requests or 40 * concurrency if sweep else requests
            runs += run_plan(args.plan, n, concurrency, args.profile, args.reps, args.against)

    headers = ["server", "client", "wall s", "ideal s", "ideal/wall", "client CPU ms/req"]
    headers += ["server CPU ms/req", "client peak RSS MiB", "store commits"]
    if sweep:
        headers = ["concurrency", "requests", *headers]
    rows = [
        [
            *([run["concurrency"], run["requests"]] if sweep else []),
            run["server"],
            run["client"],
            f"{run['wall_s']:.2f}",
            f"{run['ideal_s']:.2f}",
            f"{run['ratio']:.3f}",
            f"{run['cpu_ms_per_request']:.3f}",
            f"{run['server_cpu_ms_per_request']:.3f}",
            f"{run['peak_rss_mb']:.0f}",
            run.get("store_commits", "-"),
        ]
        for run in runs
    ]
    if sweep:
        print(
            f"\nconcurrency sweep, {args.requests or '40 x concurrency'} requests each, "
            f"server latency {LATENCY_S * 1000:.0f} ms\n"
        )
    else:
        print(
            f"\n{requests} requests, concurrency {args.concurrency}, "
            f"server latency {LATENCY_S * 1000:.0f} ms\n"
        )
    print(markdown_table(headers, rows))
    layers = http_layer(runs)
    for (concurrency, server, tree), ms in layers.items():
        print(
            f"HTTP layer (llmpsych - llmpsych+nohttp), {server}, concurrency {concurrency}"
            f"{', ' + tree if tree else ''}: {ms:.3f} ms CPU per request"
        )
    name = "throughput_http.sweep" if sweep else "throughput_http"
    path = write_results(
        name + (".profiled" if args.profile else ""),
        {
            "requests": None if sweep else requests,
            "concurrency": sweep or args.concurrency,
            "latency_s": LATENCY_S,
            "clients": CLIENTS,
            "runs": runs,
            "http_layer_cpu_ms_per_request": [
                {"concurrency": c, "server": server, "tree": tree or "here", "ms": ms}
                for (c, server, tree), ms in layers.items()
            ],
            "against": str(args.against) if args.against else None,
            "busy_cores_before": busy_before,
            "other_cores_busy_during": load.other_cores,
        },
        args.quick,
    )
    if load.other_cores is not None:
        print(f"other processes kept {load.other_cores:.2f} cores busy meanwhile")
    print(f"\nresults: {path}")


def http_layer(runs: list[dict[str, Any]]) -> dict[tuple[int, str, str], float]:
    """The HTTP layer's CPU ms per request: llmpsych minus llmpsych+nohttp, per concurrency, server and
    tree ("" for this one, "other" for ``--against``)."""
    by = {(r["concurrency"], r["server"], r["client"]): r["cpu_ms_per_request"] for r in runs}
    layers = {}
    for (c, server, client), ms in by.items():
        name, _, tree = client.partition("@")
        nohttp = (c, server, "llmpsych+nohttp" + (f"@{tree}" if tree else ""))
        if name == "llmpsych" and nohttp in by:
            layers[(c, server, tree)] = ms - by[nohttp]
    return layers


def run_plan(
    plan: str,
    requests: int,
    concurrency: int,
    profile_prefix: str | None,
    reps: int = 1,
    against: Path | None = None,
) -> list[dict[str, Any]]:
    """Measure each server:client pair of ``plan``, each with a fresh server and client process
    (``reps`` times: the measurement with the least client CPU time counts). With ``against``, each
    llmpsych client is also measured on that tree, alternating with this one rep by rep."""
    ideal = requests * LATENCY_S / concurrency
    runs = []
    for pair in plan.split(","):
        server_kind, _, client = pair.partition(":")
        if client not in CLIENTS or server_kind not in ("asyncio", "fault", "fault-nodelay"):
            raise SystemExit(f"unknown server:client pair {pair!r}")
        trees: list[tuple[str, Path | None]] = [("", None)]
        if against is not None and client.startswith("llmpsych"):
            trees = [("@other", against.resolve()), ("", None)]
        with ServerProcess(server_kind, LATENCY_S) as server:
            profile = (
                f"{profile_prefix}.{client}.txt" if profile_prefix and client.startswith("llmpsych") else None
            )
            results: dict[str, dict[str, Any]] = {}
            server_cpu: dict[str, float] = {}
            for _ in range(reps):
                for label, src in trees:  # interleaved: this tree and the other in turn
                    server_cpu0 = server.cpu_seconds() or 0.0
                    once = run_child(client, server.base_url, requests, concurrency, profile, src)
                    spent = (server.cpu_seconds() or 0.0) - server_cpu0
                    if label not in results or once["cpu_s"] < results[label]["cpu_s"]:
                        results[label] = once
                        server_cpu[label] = spent
        for label, _ in trees:
            result = results[label]
            name = client + label
            if result["ok"] != requests:
                raise SystemExit(f"{name} vs {server_kind}: only {result['ok']} of {requests} answered")
            if result.get("http_requests_sent"):
                sent = result["http_requests_sent"]
                raise SystemExit(f"{name}: sent {sent} HTTP requests; it must send none")
            runs.append(
                {
                    "server": server_kind,
                    "client": name,
                    "concurrency": concurrency,
                    "requests": requests,
                    **result,
                    "ideal_s": ideal,
                    "ratio": ideal / result["wall_s"],
                    "cpu_ms_per_request": 1000 * result["cpu_s"] / requests,
                    "server_cpu_ms_per_request": 1000 * server_cpu[label] / requests,
                }
            )
            print(
                f"  c={concurrency:<3} {server_kind:13} {name:21} {result['wall_s']:6.2f} s",
                file=sys.stderr,
                flush=True,
            )
    return runs


if __name__ == "__main__":
    main()

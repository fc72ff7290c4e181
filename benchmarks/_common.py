"""Shared helpers for the benchmark scripts: result files, Markdown tables, machine facts, servers.

Servers for ``throughput_http.py`` run in their own process so that the CPU time and RSS measured on
the llmpsych side are llmpsych's alone:

* ``python benchmarks/_common.py asyncio --port P --latency 0.1`` - a minimal HTTP/1.1 keep-alive
  server on asyncio (one process, one thread, timers instead of sleeping threads). It answers every
  POST with a fixed chat completion after ``latency`` seconds and accepts any parallelism.
* ``python benchmarks/_common.py fault --port P --latency 0.1`` - llmpsych's own
  :class:`llmpsych.testing.fault_server.FaultServer` (ThreadingHTTPServer, one thread per
  connection, ``time.sleep`` for the latency), with a listen backlog of 1024 instead of
  socketserver's default 5.
* ``python benchmarks/_common.py fault-nodelay ...`` - the same with TCP_NODELAY on accepted sockets.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import datetime as dt
import io
import json
import os
import platform
import pstats
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"


# -- reporting ------------------------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    """Facts about the machine a result was measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": cores,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


def busy_cores(seconds: float = 1.0) -> float | None:
    """How many cores were busy (all processes) over ``seconds``, from /proc/stat (Linux only).

    Called before a benchmark starts, it tells whether other work was competing for the machine.
    """

    def sample() -> tuple[int, int]:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields[:8]) - idle, sum(fields[:8])

    try:
        busy0, total0 = sample()
        time.sleep(seconds)
        busy1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores * (busy1 - busy0) / max(1, total1 - total0)


def check_quiet() -> float | None:
    """Measure background load before a benchmark and warn when the machine is not idle."""
    busy = busy_cores()
    if busy is not None and busy > 0.25:
        print(
            f"warning: {busy:.2f} cores were busy before the benchmark started; figures will be low",
            file=sys.stderr,
        )
    return busy


def _busy_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (Linux only)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    """CPU seconds of this process and its reaped children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class LoadMonitor:
    """How many cores other processes kept busy while a benchmark ran (its own children excluded)."""

    def __enter__(self) -> LoadMonitor:
        self.other_cores: float | None = None
        self._busy0, self._own0, self._t0 = _busy_seconds(), _own_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        busy1 = _busy_seconds()
        if self._busy0 is None or busy1 is None:
            return
        wall = time.perf_counter() - self._t0
        self.other_cores = max(0.0, (busy1 - self._busy0 - (_own_seconds() - self._own0)) / wall)
        if self.other_cores > 0.25:
            print(
                f"warning: other processes kept {self.other_cores:.2f} cores busy during the benchmark",
                file=sys.stderr,
            )


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_results(name: str, data: dict[str, Any], quick: bool) -> Path:
    """Write ``results/<name>.json`` (``<name>.quick.json`` for --quick runs)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}{'.quick' if quick else ''}.json"
    path.write_text(json.dumps({"benchmark": name, "quick": quick, "machine": machine(), **data}, indent=2))
    return path


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (all threads)."""
    times = os.times()
    return times.user + times.system


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports ru_maxrss in KiB)."""
    import resource

    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024 if sys.platform != "darwin" else kib / 1024 / 1024


def proc_cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of another process, from /proc (Linux only)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


@contextlib.contextmanager
def profiled(path: str | None, top_own: int = 25) -> Iterator[None]:
    """cProfile the block when ``path`` is given; write its 40 top cumulative and ``top_own`` top own-time
    entries to ``path`` (the venv's path shortened to ``<venv>``). Without ``path`` it does nothing."""
    if not path:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text).sort_stats("cumulative")
        stats.print_stats(40)
        stats.sort_stats("tottime").print_stats(top_own)
        Path(path).write_text(text.getvalue().replace(str(Path(sys.prefix)), "<venv>"))


# -- server processes -----------------------------------------------------------------------------------
def free_port() -> int:
    """A TCP port that is free right now on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A benchmark server in a child process, ready once it accepts connections; context manager.

    Runs ``python SCRIPT *ARGS --port P --latency L``: by default one of this module's servers
    (``ARGS = [kind]``); a benchmark script with its own server passes its ``__file__`` and mode flags.
    """

    def __init__(
        self, kind: str, latency: float, script: str = __file__, args: list[str] | None = None
    ) -> None:
        self.kind = kind
        self.latency = latency
        self.script = script
        self.args = [kind] if args is None else args
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ServerProcess:
        cmd = [
            sys.executable,
            self.script,
            *self.args,
            "--port",
            str(self.port),
            "--latency",
            str(self.latency),
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} server exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.kind} server did not start")

    def cpu_seconds(self) -> float | None:
        return proc_cpu_seconds(self.proc.pid) if self.proc else None

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def completion_response(content: str, usage: tuple[int, int] = (12, 1)) -> bytes:
    """A complete HTTP/1.1 response carrying one chat completion whose answer is ``content``."""
    payload = json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
        }
    ).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    return head.encode() + payload


_RESPONSE = completion_response("ok")


def _fixed_response(body: bytes) -> bytes:
    return _RESPONSE


class DelayedResponder(asyncio.Protocol):
    """HTTP/1.1 keep-alive: each complete request is answered ``latency`` s after it arrived.

    ``respond`` turns the request body into the full HTTP response (by default a fixed ``ok`` answer).
    """

    def __init__(self, latency: float, respond: Callable[[bytes], bytes] = _fixed_response) -> None:
        self.latency = latency
        self.respond = respond
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in self.buffer[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body, self.buffer = self.buffer[end + 4 : total], self.buffer[total:]
            loop = asyncio.get_running_loop()
            due = loop.time() + self.latency
            loop.call_at(due, self._answer, self.respond(body))

    def _answer(self, response: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(response)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


def stored_chains(run_dir: Path) -> list[list[bytes]]:
    """Each unit's requests as stored by a run (the exact bytes sent), in the order the unit sent them."""
    from llmpsych.runs import RunStore

    store = RunStore.in_dir(run_dir)
    try:
        by_unit: dict[str, list[tuple[int, bytes]]] = {}
        for call in store.calls():
            body = json.dumps(call["request"], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            by_unit.setdefault(call["unit_id"], []).append((call["seq"], body.encode()))
    finally:
        store.close()
    return [[body for _, body in sorted(calls)] for calls in by_unit.values()]


async def replay_chains(port: int, chains: list[list[bytes]]) -> float:
    """The replay floor: seconds for a bare asyncio HTTP/1.1 client to send every chain at once.

    Each chain gets its own new connection (TCP_NODELAY) and sends its requests one after the other,
    each after the previous answer, as a unit of a run does. Requests are built before the clock
    starts and chains start one per event-loop turn, as the run engine starts its workers. No JSON
    parsing, no store, no retries: what the server and the machine allow with no framework at all.
    """
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    requests = [[b"%sContent-Length: %d\r\n\r\n%s" % (head, len(b), b) for b in chain] for chain in chains]

    async def chain(messages: list[bytes]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for message in messages:
            writer.write(message)
            response_head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in response_head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
        writer.close()

    started = time.perf_counter()
    tasks = []
    for messages in requests:
        tasks.append(asyncio.ensure_future(chain(messages)))
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    return time.perf_counter() - started


async def serve_asyncio(
    port: int, latency: float, respond: Callable[[bytes], bytes] = _fixed_response
) -> None:
    """Serve forever with :class:`DelayedResponder` on 127.0.0.1:``port``."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: DelayedResponder(latency, respond), "127.0.0.1", port, backlog=1024, reuse_address=True
    )
    async with server:
        await server.serve_forever()


def serve_fault(port: int, latency: float, nodelay: bool = False) -> None:
    """Serve llmpsych's FaultServer (no faults, fixed latency) with a large listen backlog.

    ``nodelay`` sets TCP_NODELAY on accepted sockets (``StreamRequestHandler.disable_nagle_algorithm``):
    the handler writes the headers and the body in two ``send`` calls, so without it Nagle's algorithm
    holds the body back until the client's delayed ACK of the headers (up to 40 ms on Linux).
    """
    from http.server import ThreadingHTTPServer
    from socketserver import StreamRequestHandler

    from llmpsych.testing.fault_server import FaultRates, FaultServer

    ThreadingHTTPServer.request_queue_size = 1024
    StreamRequestHandler.disable_nagle_algorithm = nodelay
    server = FaultServer(FaultRates(latency_s=latency), port=port)
    server._httpd.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description="benchmark servers")
    parser.add_argument("kind", choices=["asyncio", "fault", "fault-nodelay"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    if args.kind == "asyncio":
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve_asyncio(args.port, args.latency))
    else:
        serve_fault(args.port, args.latency, nodelay=args.kind == "fault-nodelay")


if __name__ == "__main__":
    main()

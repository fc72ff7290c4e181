"""The socket and uvicorn set-up of every llmpsych server (``llmpsych web``, ``gamabench host``,
``faults serve``).

The socket is bound before uvicorn starts (port 0 gives a free port), so the URL printed is the one
that answers, with no window in which another process could take the port.
"""

from __future__ import annotations

import ipaddress
import socket

import uvicorn
from starlette.types import ASGIApp

from ..errors import ConfigError
from .connections import KEEP_ALIVE_S, LIMIT_CONCURRENCY, MAX_HEAD_BYTES, QuietDisconnects, guarded_protocol


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one); a clear error if that fails."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot bind {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror}", "choose another --port"
        ) from None
    sock.set_inheritable(True)
    return sock


def public_name(host: str) -> str:
    """How other machines reach a server bound to ``host``: the address itself, or for a wildcard bind
    this machine's address on its network (the source address of its default route; no packet is sent),
    else its host name."""
    if host not in ("0.0.0.0", "::", ""):
        return host
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 9))
            address = str(probe.getsockname()[0])
        except OSError:
            address = ""
    return address if address and not is_loopback(address) else socket.gethostname()


def url_host(host: str) -> str:
    """``host`` as written in a URL (the loopback address for a wildcard bind)."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def server_config(app: ASGIApp) -> uvicorn.Config:
    """uvicorn's settings for every llmpsych server (``llmpsych web``, ``gamabench host``, ``faults
    serve``): the limits of :mod:`.connections` (read time, head size, connections per client and in
    all), no WebSocket, no proxy headers, no access log."""
    return uvicorn.Config(
        QuietDisconnects(app),
        http=guarded_protocol(),
        ws="none",
        log_level="warning",
        access_log=False,
        limit_concurrency=LIMIT_CONCURRENCY,
        timeout_keep_alive=KEEP_ALIVE_S,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        server_header=False,
        proxy_headers=False,
        lifespan="off",
    )


__all__ = ["bind", "is_loopback", "public_name", "server_config", "url_host"]

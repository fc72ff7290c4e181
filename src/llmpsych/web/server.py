"""Serving the application with uvicorn on a socket this process binds itself.

The socket is bound before uvicorn starts (port 0 gives a free port), so the URL printed is the one
that answers, with no window in which another process could take the port.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from ..errors import ConfigError
from .app import create_app
from .connections import KEEP_ALIVE_S, LIMIT_CONCURRENCY, MAX_HEAD_BYTES, QuietDisconnects, guarded_protocol
from .security import TOKEN_PARAM, host_names, new_token


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
    """uvicorn's settings for every llmpsych page server (``llmpsych web`` and ``gamabench host``): the
    limits of :mod:`.connections` (read time, head size, connections per client and in all), no
    WebSocket, no proxy headers, no access log."""
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


def serve(
    roots: list[Path],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the runs under ``roots`` until interrupted; ``announce`` gets the lines to show the user."""
    for root in roots:
        if not root.is_dir():
            raise ConfigError(f"{root} is not a folder", "give the folder holding your run folders")
    sock = bind(host, port)
    port = sock.getsockname()[1]
    token = token or new_token()
    app = create_app(roots, token=token, port=port, hosts=host_names(host))
    url = f"http://{url_host(host)}:{port}/?{TOKEN_PARAM}={token}"
    announce(f"llmpsych web: serving the runs in {', '.join(str(r) for r in roots)}")
    if is_loopback(host):
        announce("only this machine can reach it (loopback); the token in the URL is needed to open it")
    else:
        announce(f"from other machines: http://{url_host(public_name(host))}:{port}/?{TOKEN_PARAM}={token}")
        announce(
            f"WARNING: bound to {host}: anyone who can reach this machine on port {port} over the network "
            "can connect; the token still guards every page, but the connection is plain HTTP (not "
            "encrypted), so use it only on a network you trust"
        )
    announce("stop with Ctrl+C; open this URL in your browser:")
    announce(f"open {url}")
    server = uvicorn.Server(server_config(app))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()

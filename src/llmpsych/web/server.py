"""Serving the application with uvicorn on a socket this process binds itself (:mod:`llmpsych.serving`).

The socket is bound before uvicorn starts (port 0 gives a free port), so the URL printed is the one
that answers, with no window in which another process could take the port.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import uvicorn

from ..errors import ConfigError
from ..serving.hosts import host_names, new_token
from ..serving.listen import bind, is_loopback, public_name, server_config, url_host
from .app import create_app
from .security import TOKEN_PARAM


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

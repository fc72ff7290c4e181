"""Who may talk to an llmpsych server: its per-process token and the ``Host`` names it answers to.

- **Token**: a per-process secret (``secrets.token_urlsafe(32)``, 256 bits), compared in constant time by
  each server's gate (the web pages' cookie gate, :mod:`llmpsych.web.security`; the fault endpoint's
  bearer token, :mod:`llmpsych.faults.endpoint`).
- **Host** (against DNS rebinding): a page on ``evil.example`` whose name is re-pointed to 127.0.0.1
  reaches the server with ``Host: evil.example:PORT``; only the names the server was started for pass.
"""

from __future__ import annotations

import ipaddress
import secrets


def new_token() -> str:
    """An unguessable per-process token."""
    return secrets.token_urlsafe(32)


def host_names(host: str) -> set[str]:
    """The Host names a server bound to ``host`` answers to (lower case, without port)."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    if host not in ("0.0.0.0", "::", ""):
        names.add(f"[{host}]" if ":" in host else host)
    else:
        import socket

        names.add(socket.gethostname().lower())
        names.add(ANY_ADDRESS)
        try:
            for info in socket.getaddrinfo(socket.gethostname(), None):
                address = str(info[4][0])
                names.add(f"[{address}]" if ":" in address else address)
        except OSError:
            pass
    return {n.lower() for n in names}


#: In :func:`host_names`: the server is bound to every address, so any IP-address Host is one of its own.
ANY_ADDRESS = "*"


def host_allowed(name: str, hosts: set[str]) -> bool:
    """Whether a request's Host name (lower case, no port) names this server.

    On a wildcard bind (``0.0.0.0``) participants type the machine's address, whichever interface it is on,
    so any IP address is accepted there; a name must still be this machine's (a DNS-rebinding page always
    sends its own domain name, never an address)."""
    if name in hosts:
        return True
    if ANY_ADDRESS not in hosts:
        return False
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, str]:
    """(name, port) of a Host header value; a bracketed IPv6 address keeps its brackets."""
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1], value[end + 2 :] if end >= 0 else ""
    name, _, port = value.partition(":")
    return name, port


__all__ = ["ANY_ADDRESS", "host_allowed", "host_names", "new_token", "split_host"]

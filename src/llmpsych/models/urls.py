"""Endpoint URLs without their secrets: what is stored, shown and compared, and what stays in the request.

A base URL may carry credentials, ``http://user:pass@host/v1``, or a token in its query,
``.../v1?api_key=...``. The request needs them; nothing else does. The run store, the manifest, the
response cache, error messages and reports only ever see :func:`redact_url`'s form (``***`` in their place)
or :func:`endpoint_address` (``scheme://host:port/path``).
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "***"

#: A query parameter whose name contains one of these holds a secret (``api_key``, ``token``, ``sig``, ...).
SECRET_QUERY_WORDS = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "auth",
    "sig",
    "credential",
    "session",
)


def _secret_name(name: str) -> bool:
    lowered = unquote(name).lower()
    return any(word in lowered for word in SECRET_QUERY_WORDS)


def redact_url(url: str) -> str:
    """``url`` with its userinfo, secret query values and fragment replaced by ``***``; unchanged if it
    holds none (so the identities, cache keys and stored runs of plain URLs stay as they were)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<malformed URL>"
    netloc, query, fragment = parts.netloc, parts.query, parts.fragment
    changed = False
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
        changed = True
    if query:
        pairs = []
        for pair in query.split("&"):
            name, sep, value = pair.partition("=")
            if sep and value and _secret_name(name):
                pair, changed = f"{name}={REDACTED}", True
            pairs.append(pair)
        query = "&".join(pairs)
    if fragment:
        fragment, changed = REDACTED, True
    if not changed:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def is_redacted(url: str | None) -> bool:
    """Whether ``url`` is a stored form whose secrets were removed (it cannot authenticate)."""
    return url is not None and REDACTED in url


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its userinfo, and the decoded (user, password) it held, if any."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return clean, (unquote(user), unquote(password))


def query_secrets(url: str) -> list[str]:
    """The values of the secret query parameters of ``url`` (raw and decoded), for scrubbing messages."""
    values: list[str] = []
    for pair in urlsplit(url).query.split("&"):
        name, sep, value = pair.partition("=")
        if sep and value and _secret_name(name):
            values += [value, unquote(value)]
    return values


def endpoint_address(url: str) -> str:
    """``scheme://host:port/path``: where requests go, with no credentials, query or fragment."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<malformed URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{host}{f':{port}' if port else ''}{parts.path.rstrip('/')}"


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every secret of at least 4 characters replaced by ``***`` (a server may echo a key)."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text

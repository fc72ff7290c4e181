"""The gate in front of every page: Host header, token, method, request size, response headers.

- **Host** (against DNS rebinding): a page on ``evil.example`` whose name is re-pointed to 127.0.0.1
  reaches the server with ``Host: evil.example:PORT``; only the names the server was started for pass.
- **Token**: a per-process secret (``secrets.token_urlsafe(32)``, 256 bits). The printed URL carries it
  once; the server answers with a cookie (HttpOnly, SameSite=Strict, named after the port, since cookies
  do not tell ports apart) and a redirect to the same page without the token, so it does not linger in
  the address bar or history. Every other request needs the cookie.
- **Methods**: GET and HEAD only. No page changes anything, so there is nothing to forge.
- **Sizes**: a request with a body, a path over 2 kB or a query over 4 kB is refused before any page
  runs (headers are bounded by uvicorn's h11 limit).
- **Headers**: a Content-Security-Policy allowing only this server's own scripts, styles and images
  (and PNGs embedded as ``data:``), no framing, no referrer, no caching, no content sniffing.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..serving.hosts import host_allowed, split_host

MAX_PATH = 2048
MAX_QUERY = 4096
TOKEN_PARAM = "token"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


class Gate:
    """ASGI middleware enforcing the rules above for ``app``."""

    def __init__(self, app: ASGIApp, *, token: str, port: int, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.hosts = {h.lower() for h in hosts}
        self.cookie = f"llmpsych_web_{port}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets: none served
        refusal = self._refusal(scope)
        if refusal is not None:
            await self._with_headers(refusal)(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_secured)

    @staticmethod
    def _with_headers(response: Response) -> Response:
        for name, value in SECURITY_HEADERS:
            response.headers[name.decode()] = value.decode()
        return response

    def _refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        name, port = split_host(headers.get("host", "").lower())
        if not host_allowed(name, self.hosts) or port != str(self.port):
            return PlainTextResponse("unknown Host header (open the URL llmpsych web printed)\n", 421)
        if scope["method"] not in ("GET", "HEAD"):
            return PlainTextResponse("read-only server: GET only\n", 405, headers={"Allow": "GET, HEAD"})
        if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
            return PlainTextResponse("requests have no body here\n", 413)
        query = scope.get("query_string", b"")
        if len(scope.get("raw_path") or scope["path"].encode()) > MAX_PATH:
            return PlainTextResponse("path too long\n", 414)
        if len(query) > MAX_QUERY:
            return PlainTextResponse("query too long\n", 414)
        pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in pairs if k == TOKEN_PARAM]
        if given:
            if not secrets.compare_digest(given[-1].encode(), self.token.encode()):
                return PlainTextResponse("wrong token (open the URL llmpsych web printed)\n", 403)
            rest = urlencode([(k, v) for k, v in pairs if k != TOKEN_PARAM])
            redirect = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), 303)
            redirect.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            return redirect
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is a missing one
            cookie = SimpleCookie()
        held = cookie.get(self.cookie)
        if held is None or not secrets.compare_digest(held.value.encode(), self.token.encode()):
            return PlainTextResponse(
                "this page needs the token: open the URL llmpsych web printed (it sets a cookie)\n", 403
            )
        return None

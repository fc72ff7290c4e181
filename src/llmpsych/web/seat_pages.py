"""The pages of a hosted session: a participant's seat page and the experimenter's monitor.

The seat pages (``/play/<seat token>``) are the only pages open without the experimenter token: the
seat token in the path admits that one seat and nothing else (not another seat, not the runs pages).
Answers are POSTed with a per-question form token (HMAC of this process's secret, the seat and the
question), only from this server's own pages (``Origin`` checked, cookies ``SameSite=Strict``), with a
body of at most 4 kB. The monitor (``/session``) sits behind the runs pages' gate (the experimenter
token); its forms (start the game early; per seat: move on, enter the default, more time, remove; pause
and resume) are protected the same way and need the experimenter cookie. Every text (rules, other seats'
replies, names) is escaped by Jinja2's autoescape.

Live updates are server-sent events (``/play/<token>/events``, ``/session/events``): a stream says, in
short, what its page shows (:meth:`Session.seat_signature`, the session's version for the monitor); when
that changes the page fetches itself and swaps its content in place (``static/seat.js``), so nothing
reloads on a timer and a typed answer or a link being copied is never lost. A stream is also the seat's
presence on the monitor. Streams are capped per seat and for the monitor (:data:`.session.STREAMS_PER_SEAT`,
:data:`.session.MONITOR_STREAMS`) on top of the server's per-client connection cap, end with the server,
and send a comment every :data:`HEARTBEAT_S` seconds so a closed tab is noticed.
"""

from __future__ import annotations

import asyncio
import copy
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from http.cookies import SimpleCookie
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio.to_thread
import jinja2
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..games.seats import _shown
from . import scores
from .security import SECURITY_HEADERS, _split_host, host_allowed
from .session import ANSWERED, FORGED, SEAT_ACTIONS, SESSION_ACTIONS, SeatSlot, Session

#: Seconds a form submission waits for its answer to reach the run store.
STORE_WAIT_S = 30.0
#: Largest form body accepted (an answer is at most 200 characters).
MAX_BODY = 4096
#: Seconds between a live-update stream's looks at the session (an in-memory comparison), and between
#: its heartbeats (a comment line: a closed tab's stream fails on it and the seat shows offline).
POLL_S = 0.25
HEARTBEAT_S = 10.0
#: The paths this app answers itself (the rest goes to the gated runs app).
_OWN = ("/seat.css", "/seat.js", "/session/start", "/session/control", "/session/events")
_PACKAGE = resources.files("llmpsych.web")
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(_PACKAGE / "templates")),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


def _page(template: str, code: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_ENV.get_template(template).render(**context), status_code=code)


def _text(message: str, code: int) -> Response:
    return PlainTextResponse(message + "\n", code)


class SessionApp:
    """ASGI: ``/play/...`` answered here; everything else goes to ``inner`` (the gated runs app, which
    also serves the monitor); ``POST /session/start`` is checked here against the experimenter cookie."""

    def __init__(self, session: Session, inner: ASGIApp, *, token: str, port: int, hosts: set[str]) -> None:
        self.session = session
        self.inner = inner
        self.token = token
        self.port = port
        self.hosts = hosts
        self.cookie = f"llmpsych_web_{port}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path in _OWN or path.startswith("/play/"):
            response = await self._handle(scope, receive, path)
            for name, value in SECURITY_HEADERS:
                response.headers[name.decode()] = value.decode()
            await response(scope, receive, send)
            return
        await self.inner(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive, path: str) -> Response:
        headers = Headers(scope=scope)
        name, port = _split_host(headers.get("host", "").lower())
        if not host_allowed(name, self.hosts) or port != str(self.port):
            return _text("unknown Host header", 421)
        method = scope["method"]
        if method not in ("GET", "HEAD", "POST"):
            return _text("method not allowed", 405)
        if path == "/seat.css":
            return Response((_PACKAGE / "static" / "seat.css").read_bytes(), media_type="text/css")
        if path == "/seat.js":
            script = (_PACKAGE / "static" / "seat.js").read_bytes()
            return Response(script, media_type="text/javascript")
        body = b""
        if method == "POST":
            origin = headers.get("origin")
            # with Referrer-Policy no-referrer a browser sends "Origin: null"; the form token still decides
            if origin not in (None, "null") and _split_host(origin.split("://", 1)[-1].lower()) != (
                name,
                port,
            ):
                return _text("forms are accepted from this server's pages only", 403)
            try:
                length = int(headers.get("content-length", ""))
            except ValueError:
                return _text("a form needs its length", 411)
            if length > MAX_BODY or "transfer-encoding" in headers:
                return _text("request too large", 413)
            body = await Request(scope, receive).body()
            if len(body) > MAX_BODY:
                return _text("request too large", 413)
        elif headers.get("content-length", "0") != "0":
            return _text("requests have no body here", 413)
        form = dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))
        if path.startswith("/session/"):
            refused = self._experimenter(headers)
            if refused is not None:
                return refused
            if path == "/session/events":
                return self._stream(None, lambda: f"{self.session.version}|{self.session.finished}")
            if method != "POST":
                return _text("use the monitor page's buttons", 405)
            if not hmac.compare_digest(form.get("csrf", "").encode(), monitor_csrf(self.session).encode()):
                return _text("this form is not valid (reload the monitor)", 403)
            if path == "/session/start":
                self.session.start()
            else:
                self._control(form)
            return RedirectResponse("/session", 303)
        token = path[len("/play/") :]
        events = token.endswith("/events")
        token = token.removesuffix("/events")
        slot = self.session.slot_for(token) if token and "/" not in token else None
        if slot is None:
            return _text("this link does not open a seat (check the link you were given)", 403)
        if events:
            return self._stream(slot, lambda: self.session.seat_signature(slot))
        if method == "POST":
            taken = self.session.submit(
                slot, form.get("key", ""), form.get("csrf", ""), form.get("answer", "")
            )
            if taken == ANSWERED:  # too late (the deadline, or the experimenter): the page says what happened
                if slot.notice:
                    said = "Your answer came after this question had closed, so it was not counted. "
                    said += slot.notice
                else:  # answered already (a second tab), or not asked again yet after a restart
                    said = "This question is not open now, so this answer was not counted."
                return self._seat(slot, said + " The page now shows where the game is.", 409)
            if taken == FORGED:
                return self._seat(
                    slot,
                    "This form was out of date, so nothing was taken; the page now shows where the game is.",
                    403,
                )
            if isinstance(taken, str):
                return self._seat(slot, taken, 400)
            # answered once the answer is durable: a page that says "your answer is in" never lies
            await anyio.to_thread.run_sync(taken.wait, STORE_WAIT_S)
            return RedirectResponse(f"/play/{slot.token}", 303)
        self.session.join(slot)
        return self._seat(slot, None, 200)

    def _stream(self, slot: SeatSlot | None, signature: Callable[[], str]) -> Response:
        """A live-update stream: the page's signature whenever it changes, a heartbeat between."""
        session = self.session
        if session.closed:
            return _text("the session has ended", 503)
        if not session.open_stream(slot):
            return _text("too many live pages open for this seat; close one", 429)

        async def events() -> AsyncIterator[str]:
            try:
                yield "retry: 2000\n\n"
                last, beat = "", time.monotonic()
                while not session.closed:
                    now = time.monotonic()
                    current = signature()
                    if current != last:
                        last, beat = current, now
                        yield f"data: {current}\n\n"
                    elif now - beat >= HEARTBEAT_S:
                        beat = now
                        yield ": heartbeat\n\n"
                    await asyncio.sleep(POLL_S)
            finally:
                session.close_stream(slot)

        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    def _experimenter(self, headers: Headers) -> Response | None:
        """None when the request holds the experimenter cookie, else the refusal."""
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is a missing one
            cookie = SimpleCookie()
        held = cookie.get(self.cookie)
        if held is None or not hmac.compare_digest(held.value.encode(), self.token.encode()):
            return _text("the monitor needs the experimenter link", 403)
        return None

    def _control(self, form: dict[str, str]) -> None:
        action = form.get("action", "")
        try:
            player = int(form["player"]) if "player" in form else None
        except ValueError:
            player = None
        if action in SEAT_ACTIONS or action in SESSION_ACTIONS:
            self.session.control(action, player)

    def _seat(self, slot: SeatSlot, error: str | None, code: int) -> Response:
        session = self.session
        pending = session.current(slot)
        context: dict[str, Any] = {"name": slot.name, "player": slot.player, "error": error, "q": None}
        context.update(game=None, more=0, final=[], paused=session.paused, removed=slot.removed)
        context.update(notice=slot.notice, signature=session.seat_signature(slot))
        if session.finished:
            state = "finished"
            context["final"] = scores.own_final(session.scores, slot.player)
        elif not session.started:
            state = "lobby"
            context["joined"] = sum(1 for s in session.slots.values() if s.joined)
            context["seats"] = len(session.slots)
        elif slot.removed:
            state = "removed"
        elif pending is None:
            state = "waiting"
            last = slot.last
            if last is not None:
                context["game"] = _game(last, slot.player)
        else:
            state = "question"
            o = pending.observation
            context["game"] = _game(o, slot.player)
            context["more"] = max(0, len(slot.pending) - 1)
            left = None
            if pending.remaining is not None:
                left = max(0, round(pending.remaining))
            elif pending.due is not None:
                left = max(0, round(pending.due - time.time()))
            context["q"] = {
                "round": o.round,
                "rules": o.rules,
                "history": [_turn(m) for m in o.history],
                "question": o.question,
                "valid": o.valid,
                "field": o.primary,
                "retry": o.attempt > 0,
                "key": o.key,
                "csrf": session.csrf(slot, o.key),
                "left": left,
            }
        context["state"] = state
        context["token"] = slot.token
        context["deadline"] = round(session.deadline_s)
        context["policy"] = _POLICY_TEXT[session.policy.partition(":")[0]]
        return _page("seat.html", code, **context)


#: What a person is told happens when their time runs out, per deadline policy.
_POLICY_TEXT = {
    "default": "the game's default answer is entered for you",
    "skip": "you sit this round out",
    "repeat": "your previous answer is entered again (the game's default answer if you have none)",
    "llm": "a computer player answers for you",
}


def _turn(message: dict[str, Any]) -> tuple[str, str]:
    """A history turn as a participant reads it: (``you`` or ``report``, text). The player's own answers
    (JSON, as their model-facing history holds them) read "Your answer: 19", without field names."""
    if message.get("role") != "assistant":
        return "report", str(message.get("content", ""))
    try:
        data = json.loads(str(message.get("content", "")))
    except ValueError:
        data = None
    if isinstance(data, dict):
        values = [v for k, v in data.items() if k != "explanation"]
        if len(values) == 1:
            return "you", f"Your answer: {values[0]}"
    return "you", "Your answer: " + _shown(message).removeprefix("(your answer: ").removesuffix(")")


#: Each game's scores so far by (unit, rounds finished): a seat page used to compute them (a pandas
#: table of the whole game) on every load; a round's scores do not change once it is recorded.
_SO_FAR: dict[tuple[str, int], list[dict[str, Any]]] = {}
_SO_FAR_KEPT = 256


def _game(o: Any, player: int) -> dict[str, Any]:
    """Which game and round a question belongs to, and the player's own score so far in it."""
    unit = o.sample.rpartition(":p")[0]
    own: list[tuple[str, Any]] = []
    if o.progress is not None:
        try:
            progress = o.progress()
            done = (unit, len(progress.get("rounds") or []))
            per_seat = _SO_FAR.get(done)
            if per_seat is None:  # computed once per finished round of a game, not once per page
                per_seat, _ = scores.so_far([copy.deepcopy(progress)], {})
                if len(_SO_FAR) >= _SO_FAR_KEPT:
                    _SO_FAR.clear()
                _SO_FAR[done] = per_seat
        except RuntimeError:  # the engine is adding a round record right now; the next refresh shows it
            per_seat = []
        own = scores.own(per_seat, unit, player)
    return {"title": o.title or o.kind, "round": o.round, "rounds": o.rounds, "unit": unit, "own": own}


def monitor_csrf(session: Session) -> str:
    """The form token of the monitor's start button."""
    return hmac.new(session.secret, b"start", "sha256").hexdigest()


def monitor_route(session: Session, links: dict[int, str], run_id: str, run_dir: Path) -> Route:
    """``/session``: who joined, their round, who is answering, their answers (typed, and the defaults
    entered for them), every answer with how it came, the links to hand out, and the scores so far per
    seat and per model (the final ``seats.csv`` / ``seat_kinds.csv`` at the end)."""
    specs: dict[str, str] = {}
    kept: dict[tuple[tuple[str, int], ...], tuple[list[dict[str, Any]], ...]] = {}

    def monitor(request: Request) -> Response:
        if session.finished and session.scores:
            per_seat, per_kind = session.scores, session.kinds
        else:
            if not specs:
                specs.update(scores.role_specs(run_dir))
            progress = session.progress()
            done = tuple((str(r.get("run")), len(r.get("rounds") or [])) for r in progress)
            if done not in kept:  # once per finished round, not once per load
                kept.clear()
                kept[done] = scores.so_far(progress, specs)
            per_seat, per_kind = kept[done]
        return _page(
            "monitor.html",
            seats=session.status(),
            paused=session.paused,
            policy=session.policy,
            events=session.events,
            now=time.time(),
            signature=f"{session.version}|{session.finished}",
            links=links,
            started=session.started,
            finished=session.finished,
            all_joined=session.all_joined(),
            csrf=monitor_csrf(session),
            deadline=round(session.deadline_s),
            run_id=run_id,
            scores=per_seat,
            kinds=per_kind,
            answers=session.answer_log(),
        )

    return Route("/session", monitor)

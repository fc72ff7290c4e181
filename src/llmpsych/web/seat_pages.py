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
from urllib.parse import parse_qsl, quote

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

from ..games import people_text
from ..games.experiment import QuizQuestion
from ..games.seats import _shown
from ..i18n import num
from ..instruments.scale import Scale
from ..serving.hosts import host_allowed, split_host
from . import participants, scores
from .i18n import PAGES, money
from .seat_view import seat_view
from .security import SECURITY_HEADERS
from .session import ANSWERED, FORGED, SEAT_ACTIONS, SESSION_ACTIONS, SeatSlot, Session, notice_text

#: Seconds a form submission waits for its answer to reach the run store.
STORE_WAIT_S = 30.0
#: Largest form body accepted (an answer is at most 200 characters).
MAX_BODY = 4096
#: Most fields of a Pirate plan read from one form (one per pirate; a table seats at most 100).
MAX_SHARES = 100
#: Seconds between a live-update stream's looks at the session (an in-memory comparison), and between
#: its heartbeats (a comment line: a closed tab's stream fails on it and the seat shows offline).
POLL_S = 0.25
HEARTBEAT_S = 10.0
#: The paths this app answers itself besides ``/play/`` and ``/room/`` (the rest goes to the gated runs
#: app).
_OWN = (
    "/seat.css",
    "/seat.js",
    "/session/start",
    "/session/control",
    "/session/events",
    "/session/payments.csv",
)
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

    def __init__(
        self,
        session: Session,
        inner: ASGIApp,
        *,
        token: str,
        port: int,
        hosts: set[str],
        instructions: Callable[[int], str] | None = None,
        scale: Scale | None = None,
    ) -> None:
        self.session = session
        #: the experiment's instructions as the participant at a player number reads them, and its
        #: questionnaire's scale
        self.instructions = instructions or (lambda player: "")
        self.scale = scale
        self.inner = inner
        self.token = token
        self.port = port
        self.hosts = hosts
        self.cookie = f"llmpsych_web_{port}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path in _OWN or path.startswith(("/play/", "/room/")):
            response = await self._handle(scope, receive, path)
            for name, value in SECURITY_HEADERS:
                response.headers[name.decode()] = value.decode()
            await response(scope, receive, send)
            return
        await self.inner(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive, path: str) -> Response:
        headers = Headers(scope=scope)
        name, port = split_host(headers.get("host", "").lower())
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
            if origin not in (None, "null") and split_host(origin.split("://", 1)[-1].lower()) != (
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
        pairs = parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True)
        form = dict(pairs)
        # a Pirate plan comes as one field per pirate (``share``): the game reads them as "a,b,c"
        shares = [value.strip() for key, value in pairs if key == "share"][:MAX_SHARES]
        if path.startswith("/session/"):
            if not self._experimenter(headers):
                return _text("the monitor needs the experimenter link", 403)
            if path == "/session/events":
                return self._stream(None, lambda: f"{self.session.version}|{self.session.finished}")
            if path == "/session/payments.csv":
                rows = participants.payments(self.session)
                return Response(participants._csv(rows, participants.PAYMENT_COLUMNS), media_type="text/csv")
            if method != "POST":
                return _text("use the monitor page's buttons", 405)
            if not hmac.compare_digest(form.get("csrf", "").encode(), monitor_csrf(self.session).encode()):
                return _text("this form is not valid (reload the monitor)", 403)
            if path == "/session/start":
                self.session.start()
            else:
                self._control(form)
            return RedirectResponse("/session", 303)
        if path.startswith("/room/"):
            return self._room(path[len("/room/") :], scope, method)
        token = path[len("/play/") :]
        events = token.endswith("/events")
        token = token.removesuffix("/events")
        slot = self.session.slot_for(token) if token and "/" not in token else None
        if slot is None:
            return _text("this link does not open a seat (check the link you were given)", 403)
        if events:
            return self._stream(slot, lambda: self.session.seat_signature(slot))
        if method == "POST" and "step" in form:
            return self._step(slot, form)
        if method == "POST":
            answer = ",".join(shares) if shares and "answer" not in form else form.get("answer", "")
            taken = self.session.submit(slot, form.get("key", ""), form.get("csrf", ""), answer)
            t = PAGES.bound(self.session.lang)
            if taken == ANSWERED:  # too late (the deadline, or the experimenter): the page says what happened
                notice = notice_text(slot.notice, self.session.lang)
                # else answered already (a second tab), or not asked again yet after a restart
                said = t("late.closed") + " " + notice if notice else t("late.not.open")
                return self._seat(slot, said + " " + t("late.moved"), 409)
            if taken == FORGED:
                return self._seat(slot, t("form.old"), 403)
            if isinstance(taken, str):  # refused: the page again, the entry kept in its field
                return self._seat(slot, taken, 400, kept=shares or [answer])
            # answered once the answer is durable: a page that says "your answer is in" never lies
            await anyio.to_thread.run_sync(taken.wait, STORE_WAIT_S)
            return RedirectResponse(f"/play/{slot.token}", 303)
        self.session.opened(slot)
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

    def _control(self, form: dict[str, str]) -> None:
        """One monitor action; a seat is named by its table (1 when the form has none) and player."""
        action = form.get("action", "")
        try:
            seat = (int(form.get("table", "1")), int(form["player"])) if "player" in form else None
        except ValueError:
            seat = None
        if action in SEAT_ACTIONS or action in SESSION_ACTIONS:
            self.session.control(action, seat)

    def _room(self, token: str, scope: Scope, method: str) -> Response:
        """The room link: an arrival (``?label=PANELID`` as panel providers pass it, or typed on the
        room page when the session lists its labels) is given a seat and sent to it."""
        session = self.session
        if session.experiment is None or not hmac.compare_digest(token.encode(), session.room_token.encode()):
            return _text("this link does not open a room (check the link you were given)", 403)
        if method != "GET":
            return _text("open the room link", 405)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("utf-8", errors="replace")))
        label = query.get("label", "").strip()
        asks = session.experiment.labels is not None
        words = {"lang": session.lang, "t": PAGES.bound(session.lang)}
        if not label and asks:
            return _page("room.html", 200, token=token, error=None, **words)
        seat = session.arrive(label or None)
        if isinstance(seat, str):
            return (
                _page("room.html", 400 if label else 409, token=token, error=seat, **words)
                if asks
                else _text(seat, 409)
            )
        return RedirectResponse(f"/play/{seat.token}", 303)

    def _step(self, slot: Any, form: dict[str, str]) -> Response:
        """A form of the steps around the game: consent, instructions and quiz, questionnaire."""
        session = self.session
        step = form.get("step", "")
        if session.experiment is None or step != session.step(slot):
            return RedirectResponse(f"/play/{slot.token}", 303)  # an old form: show where they are
        if not hmac.compare_digest(
            session.csrf(slot, f"step:{step}").encode(), form.get("csrf", "").encode()
        ):
            return _text(FORGED, 403)
        if step == "consent":
            if form.get("agree") != "yes":
                return self._seat(slot, PAGES.text(session.lang, "consent.needed"), 400)
            session.agree(slot)
        elif step == "instructions":
            given = [_quiz_answer(q, form.get(f"q{n}", "")) for n, q in enumerate(session.experiment.quiz, 1)]
            wrong = session.take_quiz(slot, given)
            if wrong:
                numbers = ", ".join(str(n) for n in wrong)
                message = PAGES.text(
                    session.lang, "quiz.wrong", wrong=len(wrong), total=len(given), numbers=numbers
                )
                return self._seat(slot, message, 400, wrong=wrong, given=given)
        elif step == "questionnaire":
            answers, problem = self._scale_answers(form)
            if problem is not None:
                return self._seat(slot, problem, 400, given=form)
            session.answer_questionnaire(slot, answers)
        return RedirectResponse(f"/play/{slot.token}", 303)

    def _scale_answers(self, form: dict[str, str]) -> tuple[dict[int, int], str | None]:
        """The questionnaire's answers of a form, each a whole number in the scale's range (the strict
        rule an imported answer meets); or why not (nothing is kept then)."""
        from ..instruments.numbers import whole_number

        scale = self.scale
        assert scale is not None
        answers: dict[int, int] = {}
        for item in scale.items:
            value = whole_number(form.get(f"i{item.index}", ""))
            if value is None or not scale.response_min <= value <= scale.response_max:
                return {}, PAGES.text(self.session.lang, "questionnaire.missing", item=item.index)
            answers[item.index] = value
        return answers, None

    def _seat(
        self,
        slot: Any,
        error: str | None,
        code: int,
        kept: list[str] | None = None,
        *,
        wrong: list[int] | None = None,
        given: Any = None,
    ) -> Response:
        session = self.session
        step = session.step(slot)
        if step != "game":
            return self._step_page(slot, step, error, code, wrong or [], given)
        pending = session.current(slot)
        lang = session.lang
        context: dict[str, Any] = {"name": slot.name, "player": slot.player, "error": error, "q": None}
        t = PAGES.bound(lang)
        context.update(game=None, more=0, final=[], lang=lang, t=t)
        context.update(paused=session.paused, removed=slot.removed)
        context.update(notice=notice_text(slot.notice, lang), signature=session.seat_signature(slot))
        if session.finished:
            state = "finished"
            context["final"] = [
                (people_title(game, lang), own_words(mine, lang))
                for game, mine in scores.own_final(session.scores, slot.player)
            ]
        elif not session.table_open(slot.table):
            state = "lobby"
            table = [s for s in session.slots.values() if s.table == slot.table]
            context["joined"] = sum(1 for s in table if s.joined)
            context["seats"] = len(table)
        elif slot.removed:
            state = "removed"
        elif pending is None:
            state = "waiting"
            last = slot.last
            if last is not None:
                context["game"] = _game(last, slot.player, lang)
        else:
            state = "question"
            o = pending.observation
            context["game"] = _game(o, slot.player, lang)
            context["more"] = max(0, len(slot.pending) - 1)
            left = None
            if pending.remaining is not None:
                left = max(0, round(pending.remaining))
            elif pending.due is not None:
                left = max(0, round(pending.due - time.time()))
            view = seat_view(o, lang)
            context["q"] = {
                "round": o.round,
                "rules": [o.rules] if view is None else view.instructions,
                "history": [_turn(m) for m in o.history]
                if view is None
                else [("report", h) for h in view.history],
                "question": o.question if view is None else view.question,
                "valid": o.valid if view is None else view.input.valid,
                "input": None if view is None else view.input,
                "kept": kept or [],
                "field": o.primary,
                "retry": o.attempt > 0,
                "key": o.key,
                "csrf": session.csrf(slot, o.key),
                "left": left,
            }
        context["state"] = state
        context["token"] = slot.token
        context["deadline"] = round(session.deadline_s)
        context["policy"] = session.policy.partition(":")[0]
        return _page("seat.html", code, **context)

    def _experimenter(self, headers: Headers) -> bool:
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is a missing one
            cookie = SimpleCookie()
        held = cookie.get(self.cookie)
        return held is not None and hmac.compare_digest(held.value.encode(), self.token.encode())

    def _step_page(
        self, slot: Any, step: str, error: str | None, code: int, wrong: list[int], given: Any
    ) -> Response:
        session = self.session
        experiment = session.experiment
        assert experiment is not None
        context: dict[str, Any] = {
            "name": slot.name,
            "step": step,
            "error": error,
            "token": slot.token,
            "csrf": session.csrf(slot, f"step:{step}"),
            "experiment": experiment,
            "instructions": self.instructions(slot.player) if step == "instructions" else "",
            "wrong": wrong,
            "given": given if isinstance(given, list | dict) else [],
            "scale": self.scale if step == "questionnaire" else None,
            "pay": None,
            "completion": session.completion_code,
            "link": None,
            "lang": session.lang,
            "t": PAGES.bound(session.lang),
            "num": lambda value: num(value, session.lang),
            "money": lambda value: money(value, session.lang),
        }
        if step == "debrief":
            rows = [
                r
                for r in participants.payments(session)
                if r["label"] == slot.label and r["table"] == slot.table
            ]
            context["pay"] = rows[0] if rows else None
            if experiment.completion_url:
                context["link"] = experiment.completion_url.replace(
                    "{code}", quote(session.completion_code, safe="")
                ).replace("{label}", quote(slot.label, safe=""))
        return _page("steps.html", code, **context)


def _quiz_answer(question: QuizQuestion, posted: str) -> str:
    """A quiz answer as given: the text of the choice whose number (from 1) was posted (a form posts the
    number, so a long choice costs no bytes), else the typed text; "" for a number that is no choice."""
    if not question.choices:
        return posted
    from ..instruments.numbers import whole_number

    number = whole_number(posted)
    return question.choices[number - 1] if number is not None and 1 <= number <= len(question.choices) else ""


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


def _game(o: Any, player: int, lang: str = "en") -> dict[str, Any]:
    """Which game and round a question belongs to (its title for people), and the player's own score so
    far in it."""
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
    name = unit.rpartition("-run")[0]
    title = people_text.title(name, lang) if name in people_text.GAMES else o.title or o.kind
    own = own_words(own, lang)
    return {"title": title, "round": o.round, "rounds": o.rounds, "unit": unit, "own": own}


def own_words(own: list[tuple[str, Any]], lang: str) -> list[tuple[str, Any]]:
    """A player's own payoffs (:func:`scores.own`, worded in English) worded in ``lang``."""
    keys = {label: f"score.{column}" for column, label in scores.OWN_SCORES.items()}
    return [(PAGES.text(lang, keys[label]) if label in keys else label, value) for label, value in own]


def people_title(title: str, lang: str) -> str:
    """A game's title (as ``seats.csv`` rows name it) for people in ``lang``."""
    from ..games import registry

    for name in people_text.GAMES:
        if registry.get(name).title == title:
            return people_text.title(name, lang)
    return title


def monitor_csrf(session: Session) -> str:
    """The form token of the monitor's start button."""
    return hmac.new(session.secret, b"start", "sha256").hexdigest()


def monitor_route(
    session: Session, links: dict[tuple[int, int], str], run_id: str, run_dir: Path, room: str = ""
) -> Route:
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
            room=room,
            tables=session.tables,
            experiment=session.experiment is not None,
            payments=participants.payments(session),
            completion=session.completion_code,
        )

    return Route("/session", monitor)

"""A hosted game session: browser seats, their tokens, the lobby, deadlines and the participants' data.

``llmpsych gamabench host`` runs the game in the same process as the web server: the run engine keeps
the main thread (its own event loop, Ctrl-C and the run lock as in ``gamabench run``) and uvicorn
serves the pages from a second thread. A web seat's question is handed to the :class:`Session` from
the engine's loop and waits on a future of that loop; the page that receives the answer resolves it with
``call_soon_threadsafe``. One process means no second copy of the run state to keep in step, and the run
engine is used exactly as ``gamabench run`` uses it.

What is kept about participants (``session.json`` in the run folder, readable by its owner only): the
seat tokens and names given by the experimenter, whether each seat joined or was removed, each seat's
last typed answer per kind of decision (the ``repeat`` policy enters it), and for every answer the
question's key, when it was shown, when it was answered, how (``typed``, ``deadline``, ``default``,
``skipped``, ``repeated``, ``stand-in``, ``never joined``), what triggered it (``deadline``, or the
experimenter's ``advance``, ``default``, ``remove``) and how many entries the form refused before it; and
every action the experimenter took on the monitor, with its time (``events``).

Deadlines and control. A question shown to a seat is due ``deadline_s`` after it appears (0: no
deadline); then the session's deadline policy answers it (:data:`POLICIES`): the game's default action,
the seat skipped this round, the seat's last answer repeated (the default action when it has none the
game accepts now) or a model role standing in. The experimenter may, per seat, move it on now (the
policy), enter the default action, give it more time, or remove it (its open and later questions get the
policy at once), and pause or resume every clock; so a person who leaves never stalls a table, with or
without a deadline. Presence is the seat's open live-update streams (:meth:`Session.connected`): a
closed tab is shown offline within one heartbeat. The answers themselves, with how they came, their
response time and the refused texts, are in the run store, like every model answer. Nothing else (no
address, no browser data).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LlmpsychError
from ..games.experiment import MAX_LABEL, SessionConfig, label_problem, parse_session_config
from ..games.observation import Observation
from ..games.parsing import InvalidAnswer
from ..games.result import answers_text
from ..games.seats import WebAnswer, WebSeat
from ..i18n import language
from ..userfiles import MAX_DATA_FILE_BYTES, parse_json, read_text
from .catalog import SESSION_FILE as SESSION_FILE  # the runs pages never list or serve it
from .i18n import PAGES
from .seat_view import seat_view

#: ``how`` as sessions before llmpsych recorded ``never joined`` wrote it
_LEGACY_HOW = {"bot": "never joined"}
#: The default seconds a participant has for one decision; then the seat's default action is taken.
DEFAULT_DEADLINE_S = 120.0
#: Longest answer accepted from a form (a pirate proposal of 10 numbers needs ~40 characters).
MAX_ANSWER_CHARS = 200
FORGED = "this form is not valid for this question (reload the page)"
ANSWERED = "this question was already answered (reload the page)"
#: The deadline policies (``--on-deadline``); ``llm`` / ``llm:<role>`` is a model stand-in.
POLICIES = ("default", "skip", "repeat", "llm[:ROLE]")
#: What each policy enters, as its ``how`` (the default action: ``deadline`` at the deadline, ``default``
#: when the experimenter triggered it).
_POLICY_HOW = {"skip": "skipped", "repeat": "repeated", "llm": "stand-in"}
#: Open live-update streams one seat may hold (a few tabs); one more is refused (429).
STREAMS_PER_SEAT = 3
#: Open live-update streams of the monitor.
MONITOR_STREAMS = 4
#: Seconds one "more time" on the monitor adds to a clock when the session's deadline is 0 (a clock
#: can still run then: none does today, the constant keeps the rule total).
EXTEND_S = 60.0
#: The monitor's actions on one seat, and on the session.
SEAT_ACTIONS = ("advance", "default", "extend", "remove")
SESSION_ACTIONS = ("pause", "resume")


def check_policy(policy: str, roles: set[str] | None = None) -> str:
    """``policy`` in its one spelling (``llm`` is ``llm:subject``); ConfigError naming the choices, or a
    stand-in role the run has no model for."""
    text = policy.strip().lower()
    if text in ("default", "skip", "repeat"):
        return text
    kind, _, role = policy.strip().partition(":")
    if kind.lower() in ("llm", "model"):
        role = role.strip() or "subject"
        if roles is not None and role not in roles:
            raise ConfigError(
                f"--on-deadline {policy}: the run has no model role {role!r}",
                f"give it with --models {role}=SPEC, or use one of {', '.join(sorted(roles))}",
            )
        return f"llm:{role}"
    raise ConfigError(f"unknown deadline policy {policy!r}", f"use one of {', '.join(POLICIES)}")


@dataclass
class Pending:
    """A question waiting for a participant."""

    observation: Observation
    future: asyncio.Future[WebAnswer]
    loop: asyncio.AbstractEventLoop
    shown_at: float | None = None
    #: the entries the form refused for this question (the game's check), in order
    refused: list[str] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None
    #: when the question is due (wall clock; None: no deadline, or the clocks are paused)
    due: float | None = None
    #: seconds left when the clocks were paused
    remaining: float | None = None
    #: set once the answer is in the run store (the page that took it waits for this)
    stored: threading.Event = field(default_factory=threading.Event)


@dataclass
class SeatSlot:
    """One browser seat."""

    player: int
    spec: str
    name: str
    token: str
    joined: bool = False
    answered: int = 0
    #: answers by how they came (``typed``, ``deadline``, ``never joined``)
    hows: dict[str, int] = field(default_factory=dict)
    last_round: int = 0
    pending: dict[str, Pending] = field(default_factory=dict)
    #: the seat's latest question (the waiting page names its game and round)
    last: Observation | None = None
    #: the table (a run of the game: ``<game>-run<table>``) of a session with several tables, else 1
    table: int = 1
    #: the participant's label (a panel id from the room link, a listed label; "" for a seat link)
    label: str = ""
    #: when the participant arrived, agreed to the consent text, passed the quiz (or read the
    #: instructions without one), finished the questionnaire and reached the debrief (Unix seconds)
    arrived_at: float | None = None
    consent_at: float | None = None
    ready_at: float | None = None
    questionnaire_at: float | None = None
    finished_at: float | None = None
    #: every quiz attempt: when, and the numbers (from 1) of the questions answered wrong
    quiz: list[dict[str, Any]] = field(default_factory=list)
    #: the questionnaire's answers (item number -> value)
    answers: dict[int, int] = field(default_factory=dict)
    #: the experimenter removed the seat: its questions get the deadline policy at once
    removed: bool = False
    #: the seat's last typed answer per kind of decision (``repeat`` enters it)
    typed: dict[str, str] = field(default_factory=dict)
    #: live-update streams open now (presence), and when the last one opened or closed
    streams: int = 0
    seen: float | None = None
    #: what the seat's page says happened to its last question when the person did not answer it: the
    #: catalog keys (``what``, ``why``) and values of :func:`notice_text`; empty: nothing to say
    notice: dict[str, Any] = field(default_factory=dict)
    notices: int = 0

    @property
    def seat(self) -> tuple[int, int]:
        """(table, player): the seat's key in :attr:`Session.slots`."""
        return (self.table, self.player)

    def stored(self) -> dict[str, Any]:
        """The slot as ``session.json`` keeps it."""
        out: dict[str, Any] = {
            "player": self.player,
            "spec": self.spec,
            "name": self.name,
            "token": self.token,
            "joined": self.joined,
            "removed": self.removed,
            "typed": self.typed,
        }
        if self.table != 1 or self.label or self.arrived_at is not None:
            out |= {"table": self.table, "label": self.label, "arrived_at": self.arrived_at}
            out |= {"consent_at": self.consent_at, "ready_at": self.ready_at, "quiz": self.quiz}
            out |= {"questionnaire_at": self.questionnaire_at, "finished_at": self.finished_at}
            out["answers"] = {str(k): v for k, v in sorted(self.answers.items())}
        return out

    @classmethod
    def from_stored(cls, s: dict[str, Any]) -> SeatSlot:
        """A slot from ``session.json`` (sessions without an experiment hold only the first seven keys)."""
        slot = cls(int(s["player"]), str(s["spec"]), str(s["name"]), str(s["token"]), bool(s["joined"]))
        slot.table = int(s.get("table", 1))
        slot.removed = bool(s.get("removed", False))
        slot.typed = {str(k): str(v) for k, v in dict(s.get("typed") or {}).items()}
        slot.label = str(s.get("label", ""))
        for name in ("arrived_at", "consent_at", "ready_at", "questionnaire_at", "finished_at"):
            value = s.get(name)
            setattr(slot, name, float(value) if value is not None else None)
        slot.quiz = [dict(a) for a in s.get("quiz", [])]
        slot.answers = {int(k): int(v) for k, v in dict(s.get("answers", {})).items()}
        return slot


def notice_text(notice: dict[str, Any], lang: str) -> str:
    """A seat's notice (:attr:`SeatSlot.notice`) in the words of a page in ``lang`` (the game's title
    for people in that language); "" for none."""
    if not notice:
        return ""
    from ..games import people_text

    t = PAGES.bound(lang)
    what = str(notice["what"])
    answer = str(notice.get("answer", ""))
    said = t(what, answer=answer, round=notice.get("round", ""))
    if what == "notice.default" and not answer:
        said = t("notice.default.none")
    if "why" not in notice:
        return said
    game = str(notice.get("game") or "")
    title = people_text.title(game, lang) if game in people_text.GAMES else str(notice.get("title") or "")
    where = (
        t("notice.where.of", round=notice["round"], title=title)
        if title
        else t("notice.where", round=notice["round"])
    )
    return t("notice.frame", why=t(str(notice["why"])), where=where, what=said)


def default_action(observation: Observation) -> str:
    """The answer a seat nobody answers for gives: the game's equilibrium action (``strategy:ne``) for this
    decision, as text the game's parser reads ("" when the game has none: the game's fallback then)."""
    strategy = observation.strategy
    if strategy is None:
        return ""
    try:
        import random

        value = strategy("ne", random.Random(observation.key))
    except Exception:  # a game without an "ne" strategy for this decision
        return ""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return "null" if value is None else str(value)


def _refusal(observation: Observation, answer: str, lang: str = "en") -> str | None:
    """Why the game cannot use ``answer`` (its own message, framed in the page's language, with the
    answers it takes as people read them), or None: the check a model's answer meets."""
    if observation.check is None:
        return None
    try:
        observation.check({observation.primary: answer})
    except InvalidAnswer as exc:
        return PAGES.text(lang, "refused", reason=exc, valid=_valid(observation, lang))
    except (ValueError, TypeError, KeyError) as exc:  # a validator that trips over a typed string
        return PAGES.text(lang, "refused.error", kind=type(exc).__name__, valid=_valid(observation, lang))
    return None


def _valid(observation: Observation, lang: str) -> str:
    """The answers ``observation`` takes, in words for people (the game's own words for a game without
    people's texts)."""
    view = seat_view(observation, lang)
    return observation.valid if view is None else view.input.valid


class Session:
    """The web seats of one hosted run (thread-safe: the engine's loop and the server's thread use it)."""

    def __init__(
        self,
        run_dir: Path,
        slots: list[SeatSlot],
        deadline_s: float,
        started: bool = False,
        lang: str = "en",
        policy: str = "default",
    ) -> None:
        self.run_dir = run_dir
        #: the language of the participants' pages (:mod:`llmpsych.i18n`)
        self.lang = language(lang)
        self.slots = {s.seat: s for s in slots}
        self.deadline_s = deadline_s
        self.policy = check_policy(policy)
        self.started = started
        #: the tables whose game started (all of them once :attr:`started`)
        self.open_tables: set[int] = set()
        self.tables = max(s.table for s in slots) if slots else 1
        self.finished = False
        #: the experiment around the game (``--session FILE``), None for a bare hosted game
        self.experiment: SessionConfig | None = None
        self.experiment_data: dict[str, Any] = {}
        self.completion_code = ""
        #: the experimenter's token and the room's: kept, so their links survive ``--resume``
        self.monitor_token = secrets.token_urlsafe(32)
        self.room_token = secrets.token_urlsafe(32)
        #: the port the session was served on (a resumed host serves on it again)
        self.port = 0
        #: the run's data folder (an official questionnaire scale is read from it)
        self.data_dir: Path | None = None
        #: each game's parameters given to the run (``-O guessing.ratio=0.5``: the instructions say them)
        self.game_options: dict[str, Any] = {}
        #: set whenever a participant reaches the debrief (the host waits for all before it exits)
        self.progressed = threading.Event()
        self.paused = False
        #: the experimenter's actions on the monitor: {"at", "action", "player"?, "seconds"?}
        self.events: list[dict[str, Any]] = []
        #: bumped on every change a page shows (live updates send it)
        self.version = 0
        #: set when the server stops: the live-update streams end
        self.closed = False
        self.monitor_streams = 0
        #: signs the form tokens; kept in session.json, so a form loaded before a restart still works
        self.secret = secrets.token_bytes(32)
        self.timings: list[dict[str, Any]] = []
        #: per-seat scores, filled when the run's analysis is written (the monitor shows them)
        self.scores: list[dict[str, Any]] = []
        #: the same averaged per model and per other seat (``seat_kinds.csv``)
        self.kinds: list[dict[str, Any]] = []
        self._lock = threading.RLock()
        self._storing: dict[str, threading.Event] = {}
        #: each game's progress (the table's partial result) by unit id, for the scores so far
        self.games: dict[str, Callable[[], dict[str, Any]]] = {}

    # -- creating and persisting ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        run_dir: Path,
        seats: list[tuple[int, str, str]],
        deadline_s: float,
        lang: str = "en",
        experiment: tuple[SessionConfig, dict[str, Any]] | None = None,
        *,
        data_dir: Path | None = None,
        policy: str = "default",
    ) -> Session:
        """A new session for ``(player, spec, name)`` web seats, each with a fresh token (at every table
        of the ``experiment``, when one is given), its pages in ``lang``, a question not answered by its
        deadline answered by ``policy`` (:data:`POLICIES`); saved at once."""
        if not seats:
            raise ConfigError("no web seats: give at least one, e.g. -O seats='[web:Ann, web:Bob, llm]'")
        tables = experiment[0].game.tables if experiment is not None else 1
        slots = [
            SeatSlot(p, spec, name or f"player {p}", secrets.token_urlsafe(32), table=t)
            for t in range(1, tables + 1)
            for p, spec, name in seats
        ]
        session = cls(run_dir, slots, deadline_s, lang=lang, policy=policy)
        if experiment is not None:
            session.experiment, session.experiment_data = experiment
            session.completion_code = experiment[0].code()
        session.data_dir = data_dir
        session.save()
        return session

    @classmethod
    def load(cls, run_dir: Path) -> Session:
        """The session saved in ``run_dir`` (a resumed host)."""
        path = run_dir / SESSION_FILE
        try:
            data = parse_json(read_text(path, "session file", MAX_DATA_FILE_BYTES), str(path))
            slots = [SeatSlot.from_stored(s) for s in data["seats"]]
            lang = str(data.get("lang", "en"))  # sessions before pages were translated: English
            policy = str(data.get("on_deadline", "default"))  # sessions before policies: the default
            session = cls(run_dir, slots, float(data["deadline_s"]), bool(data["started"]), lang, policy)
            session.timings = list(data.get("answers", []))
            session.events = list(data.get("events", []))
            session.paused = bool(data.get("paused", False))
            session.secret = bytes.fromhex(str(data["secret"]))
            session.open_tables = {int(t) for t in data.get("open_tables", [])}
            session.monitor_token = str(data.get("monitor_token") or session.monitor_token)
            session.room_token = str(data.get("room_token") or session.room_token)
            session.port = int(data.get("port", 0))
            session.data_dir = Path(data["data_dir"]) if data.get("data_dir") else None
            session.game_options = dict(data.get("game_options") or {})
            if data.get("experiment") is not None:
                session.experiment_data = dict(data["experiment"])
                session.experiment = parse_session_config(session.experiment_data, f"{path}: experiment")
                session.completion_code = str(data["completion_code"])
        except (LlmpsychError, OSError, ValueError, KeyError, TypeError) as exc:
            reason = exc.message if isinstance(exc, LlmpsychError) else exc
            raise ConfigError(f"{path} is missing or damaged ({reason}); this run was not hosted") from None
        for slot in session.slots.values():
            mine = [
                t
                for t in session.timings
                if t.get("player") == slot.player and int(t.get("table", 1)) == slot.table
            ]
            slot.answered = len(mine)
            for t in mine:
                how = _LEGACY_HOW.get(str(t.get("how")), str(t.get("how")))
                slot.hows[how] = slot.hows.get(how, 0) + 1
        return session

    def save(self) -> None:
        """Write ``session.json`` atomically, readable by its owner only (it holds the seat tokens)."""
        with self._lock:
            data: dict[str, Any] = {
                "deadline_s": self.deadline_s,
                "on_deadline": self.policy,
                "started": self.started,
                "open_tables": sorted(self.open_tables),
                "lang": self.lang,
                "paused": self.paused,
                "secret": self.secret.hex(),
                "monitor_token": self.monitor_token,
                "room_token": self.room_token,
                "port": self.port,
                "data_dir": str(self.data_dir) if self.data_dir else None,
                "seats": [s.stored() for s in self.slots.values()],
                "answers": self.timings,
                "events": self.events,
            }
            if self.experiment is not None:
                data["experiment"] = self.experiment_data
                data["completion_code"] = self.completion_code
                data["game_options"] = self.game_options
            self.version += 1
            path = self.run_dir / SESSION_FILE
            tmp = path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2)
            os.replace(tmp, path)

    # -- the browser side (server thread) ---------------------------------------------------------------
    def slot_for(self, token: str) -> SeatSlot | None:
        """The seat of ``token`` (compared in constant time), or None."""
        found = None
        for slot in self.slots.values():
            if hmac.compare_digest(slot.token.encode(), token.encode()):
                found = slot
        return found

    def join(self, slot: SeatSlot) -> None:
        """The participant opened their link (in an experiment: passed the steps before the game); the
        last one of a table to join starts the game at that table."""
        with self._lock:
            if not slot.joined:
                slot.joined = True
                self.save()
                table = [s for s in self.slots.values() if s.table == slot.table]
                if all(s.joined for s in table):
                    self.open_table(slot.table)

    def table_open(self, table: int) -> bool:
        """Whether the game started at ``table``."""
        return self.started or table in self.open_tables

    def table_of(self, observation: Observation) -> int:
        """The table a question belongs to: its run number (``guessing-run02``: 2) when the session has
        several tables, else 1 (one table plays every game and run of the session)."""
        if self.tables == 1:
            return 1
        unit = observation.sample.rpartition(":p")[0]
        try:
            return int(unit.rpartition("-run")[2])
        except ValueError:
            raise ConfigError(f"question {observation.key!r} names no table") from None

    def arrive(self, label: str | None) -> SeatSlot | str:
        """Seat an arrival from the room link: the seat already given to ``label``, else the next free
        seat in table order (tables fill one after the other: a table starts once it is full); or why not
        (a label the session does not list, a full session)."""
        experiment = self.experiment
        with self._lock:
            if label:
                if label_problem(label) is not None:
                    return self._label_words(label)
                for slot in self.slots.values():
                    if slot.label == label:
                        return slot
                if (
                    experiment is not None
                    and experiment.labels is not None
                    and label not in experiment.labels
                ):
                    return PAGES.text(self.lang, "room.unlisted")
            elif experiment is not None and experiment.labels is not None:
                return PAGES.text(self.lang, "room.need.label")
            free = [s for s in sorted(self.slots.values(), key=lambda s: s.seat) if not s.label]
            free = [s for s in free if s.arrived_at is None]
            if not free:
                return PAGES.text(self.lang, "room.full")
            slot = free[0]
            slot.label = label or f"guest-{sum(1 for s in self.slots.values() if s.label) + 1}"
            slot.name = slot.label
            slot.arrived_at = time.time()
            self.save()
            return slot

    def _label_words(self, label: str) -> str:
        """Why ``label`` (refused by :func:`label_problem`) names no participant, in the pages' language."""
        if not label:
            return PAGES.text(self.lang, "room.label.empty")
        if len(label) > MAX_LABEL:
            return PAGES.text(self.lang, "room.label.long", chars=MAX_LABEL)
        return PAGES.text(self.lang, "room.label.chars")

    def open_table(self, table: int) -> None:
        """Start the game at ``table``: its questions are shown (defaults for the seats not joined)."""
        with self._lock:
            if self.table_open(table):
                return
            self.open_tables.add(table)
            for slot in self.slots.values():
                if slot.table == table:
                    self._release(slot)
            if len(self.open_tables) >= self.tables:
                self.started = True
            self.save()

    def current(self, slot: SeatSlot) -> Pending | None:
        """The question the seat's page shows: its oldest shown one (none in the lobby)."""
        with self._lock:
            shown = [p for p in slot.pending.values() if p.shown_at is not None]
            return min(shown, key=lambda p: p.shown_at or 0.0) if shown else None

    def csrf(self, slot: SeatSlot, key: str) -> str:
        """The form token of one question of one seat (useless for any other question or seat)."""
        return hmac.new(self.secret, f"{slot.token}\n{key}".encode(), hashlib.sha256).hexdigest()

    def submit(self, slot: SeatSlot, key: str, csrf: str, answer: str) -> str | threading.Event:
        """Take a typed answer: an event set once it is stored, or an error message (nothing taken).

        The answer is checked by the game's own validation (the parser and range a model's answer meets);
        an answer it refuses is not stored, and the same question stays open with the game's reason."""
        if not hmac.compare_digest(self.csrf(slot, key).encode(), csrf.encode()):
            return FORGED
        answer = answer.strip()
        if not answer:
            return PAGES.text(self.lang, "empty")
        if len(answer) > MAX_ANSWER_CHARS:
            return PAGES.text(self.lang, "too.long", chars=MAX_ANSWER_CHARS)
        with self._lock:
            pending = slot.pending.get(key)
            if pending is None or pending.shown_at is None:
                return ANSWERED
            refusal = _refusal(pending.observation, answer, self.lang)
            if refusal is not None:
                pending.refused.append(answer)  # kept: the decision's row says what was refused
                return refusal
            slot.typed[pending.observation.kind] = answer
            slot.notice = {}
            self._resolve(slot, key, answer, "typed")
        return pending.stored

    def start(self) -> None:
        """The experimenter starts: seats that did not join are played by the default action."""
        with self._lock:
            if self.started:
                return
            self.started = True
            for slot in self.slots.values():
                if slot.table not in self.open_tables:
                    self._release(slot)
            self.open_tables = set(range(1, self.tables + 1))
            self.save()

    def _release(self, slot: SeatSlot) -> None:
        for key in list(slot.pending):
            if slot.removed:
                self._by_policy(slot, key, "remove")
            elif slot.joined:
                self._show(slot, key)
            else:
                observation = slot.pending[key].observation
                self._resolve(slot, key, default_action(observation), "never joined")

    def all_joined(self) -> bool:
        """Whether every web seat opened its link."""
        return all(s.joined for s in self.slots.values())

    # -- the engine side (the run's event loop) ---------------------------------------------------------
    async def answer(self, seat: WebSeat, observation: Observation) -> WebAnswer:
        """The broker of :class:`~llmpsych.games.seats.WebSeat`: wait for the participant's answer (and
        how it came: ``typed``, ``deadline``, or ``never joined`` for a seat nobody opened)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[WebAnswer] = loop.create_future()
        with self._lock:
            slot = self.slots.get((self.table_of(observation), observation.player))
            if slot is None:
                raise ConfigError(f"player {observation.player} has no web seat in this session")
            slot.last_round = observation.round
            slot.last = observation
            self._track(observation)
            slot.pending[observation.key] = Pending(observation, future, loop)
            if self.table_open(slot.table):
                if slot.removed:
                    self._by_policy(slot, observation.key, "remove")
                elif slot.joined:
                    self._show(slot, observation.key)
                else:
                    self._resolve(slot, observation.key, default_action(observation), "never joined")
            self.version += 1
        return await future

    def saved(self, observation: Observation) -> None:
        """The engine stored the answer to ``observation``: the page waiting on it may answer."""
        with self._lock:
            self._track(observation)
            event = self._storing.pop(observation.key, None)
        if event is not None:
            event.set()

    def _track(self, observation: Observation) -> None:
        if observation.progress is not None:
            self.games[observation.sample.rpartition(":p")[0]] = observation.progress

    def progress(self) -> list[dict[str, Any]]:
        """Every game of this session so far (partial unit results, in the order they started)."""
        with self._lock:
            games = list(self.games.values())
        out = []
        for so_far in games:
            for _ in range(3):  # the engine's thread may be adding a round record right now: look again
                try:
                    out.append(copy.deepcopy(so_far()))
                    break
                except RuntimeError:
                    continue
        return out

    # -- both (holding the lock) -------------------------------------------------------------------------
    def _show(self, slot: SeatSlot, key: str) -> None:
        pending = slot.pending[key]
        pending.shown_at = time.time()
        if self.deadline_s > 0:
            if self.paused:
                pending.remaining = self.deadline_s
            else:
                self._arm(slot, key, pending, self.deadline_s)

    def _arm(self, slot: SeatSlot, key: str, pending: Pending, seconds: float) -> None:
        """(Re)start the question's clock: due ``seconds`` from now."""
        pending.due = time.time() + seconds
        pending.remaining = None

        def arm() -> None:  # on the engine's loop, in the order armed: the newest clock wins
            if pending.timer is not None:
                pending.timer.cancel()
            pending.timer = pending.loop.call_later(seconds, self._expire, slot, key, pending)

        pending.loop.call_soon_threadsafe(arm)

    def _expire(self, slot: SeatSlot, key: str, pending: Pending) -> None:
        with self._lock:
            if slot.pending.get(key) is pending and not self.paused:
                due, now = pending.due, time.time()
                if due is not None and due > now + 0.05:  # the wall clock lags the loop's: wait the rest
                    self._arm(slot, key, pending, due - now)
                    return
                self._by_policy(slot, key, "deadline")

    def _by_policy(self, slot: SeatSlot, key: str, trigger: str) -> None:
        """Answer the seat's question by the deadline policy; ``trigger``: ``deadline``, or the
        experimenter's ``advance`` / ``remove``. The seat's page then says what was entered."""
        o = slot.pending[key].observation
        fallback = default_action(o)
        default_how = "deadline" if trigger == "deadline" else "default"
        kind = self.policy.partition(":")[0]
        # the page says it in its language (:mod:`llmpsych.web.i18n`, keys ``notice.*``)
        game = o.sample.rpartition(":p")[0].rpartition("-run")[0]
        where = {"why": f"notice.{trigger}", "round": o.round, "title": o.title, "game": game}
        if kind == "skip":
            self._resolve(slot, key, "", "skipped", trigger)
            slot.notice = {**where, "what": "notice.skipped"}
        elif kind == "repeat" and (last := slot.typed.get(o.kind)) and _refusal(o, last) is None:
            self._resolve(slot, key, last, "repeated", trigger)
            slot.notice = {**where, "what": "notice.repeated", "answer": last}
        elif kind == "llm":
            role = self.policy.partition(":")[2]
            self._resolve(slot, key, fallback, "stand-in", trigger, role=role, otherwise=default_how)
            slot.notice = {**where, "what": "notice.stand-in"}
        else:
            self._resolve(slot, key, fallback, default_how, trigger)
            slot.notice = {**where, "what": "notice.default", "answer": fallback}
        slot.notices += 1

    # -- the experimenter's controls (server thread) ----------------------------------------------------
    def control(self, action: str, seat: tuple[int, int] | None = None) -> str:
        """Carry out one monitor action (:data:`SEAT_ACTIONS` on the ``(table, player)`` seat,
        :data:`SESSION_ACTIONS` on every table); what it did, in words (stored as an event when it did
        something)."""
        with self._lock:
            now = time.time()
            if action in SESSION_ACTIONS:
                done = self._pause(now) if action == "pause" else self._resume(now)
                if done:
                    self._event(now, action)
                return done or f"the clocks were already {'paused' if action == 'pause' else 'running'}"
            slot = self.slots.get(seat) if seat is not None else None
            if slot is None or action not in SEAT_ACTIONS:
                return "no such seat or action"
            shown = [k for k, p in slot.pending.items() if p.shown_at is not None]
            if action == "remove":
                if slot.removed:
                    return f"{slot.name}'s seat is already closed"
                slot.removed = True
                for key in shown:
                    self._by_policy(slot, key, "remove")
                self._event(now, action, slot)
                return f"{slot.name}'s seat is closed: its questions get the deadline policy from now on"
            if not shown:
                return f"{slot.name} has no question open now"
            if action == "extend":
                clocked = [
                    k for k in shown if (p := slot.pending[k]).due is not None or p.remaining is not None
                ]
                if not clocked:
                    return f"{slot.name}'s question has no deadline: there is no time to add"
                seconds = self.deadline_s if self.deadline_s > 0 else EXTEND_S
                for key in clocked:
                    pending = slot.pending[key]
                    if pending.remaining is not None:
                        pending.remaining += seconds
                    else:
                        left = max(0.0, (pending.due or now) - now)
                        self._arm(slot, key, pending, left + seconds)
                self._event(now, action, slot, seconds)
                return f"{slot.name} has {seconds:.0f} s more"
            for key in shown:
                if action == "advance":
                    self._by_policy(slot, key, "advance")
                else:
                    o = slot.pending[key].observation
                    fallback = default_action(o)
                    self._resolve(slot, key, fallback, "default", "default")
                    slot.notice = {"what": "notice.entered", "round": o.round, "answer": fallback}
                    slot.notices += 1
            self._event(now, action, slot)
            return f"{slot.name}: {action} done"

    def _pause(self, now: float) -> str:
        if self.paused:
            return ""
        self.paused = True
        for slot in self.slots.values():
            for pending in slot.pending.values():
                if pending.due is not None:
                    pending.remaining = max(0.0, pending.due - now)
                    pending.due = None
        return "paused: no clock runs until you resume"

    def _resume(self, now: float) -> str:
        if not self.paused:
            return ""
        self.paused = False
        for slot in self.slots.values():
            for key, pending in list(slot.pending.items()):
                if pending.remaining is not None:
                    self._arm(slot, key, pending, pending.remaining)
        return "resumed: the clocks run again"

    def _event(
        self, now: float, action: str, slot: SeatSlot | None = None, seconds: float | None = None
    ) -> None:
        event: dict[str, Any] = {"at": now, "action": action}
        if slot is not None:
            event["player"] = slot.player
            if self.tables > 1:
                event["table"] = slot.table
        if seconds is not None:
            event["seconds"] = seconds
        self.events.append(event)
        self.save()

    # -- presence and live updates (server thread) ------------------------------------------------------
    def open_stream(self, slot: SeatSlot | None) -> bool:
        """Count one more live-update stream of ``slot`` (None: the monitor); False past the cap."""
        with self._lock:
            if slot is None:
                if self.monitor_streams >= MONITOR_STREAMS:
                    return False
                self.monitor_streams += 1
                return True
            if slot.streams >= STREAMS_PER_SEAT:
                return False
            slot.streams += 1
            slot.seen = time.time()
            self.version += 1
            return True

    def close_stream(self, slot: SeatSlot | None) -> None:
        """One live-update stream of ``slot`` (None: the monitor) ended (the tab closed, or the server)."""
        with self._lock:
            if slot is None:
                self.monitor_streams = max(0, self.monitor_streams - 1)
                return
            slot.streams = max(0, slot.streams - 1)
            slot.seen = time.time()
            self.version += 1

    def seat_signature(self, slot: SeatSlot) -> str:
        """What the seat's page shows, in short: it changes exactly when the page should (its state, its
        question and clock, the lobby's count, a notice), so the page updates without losing a typed
        answer."""
        with self._lock:
            pending = self.current(slot)
            joined = sum(1 for s in self.slots.values() if s.joined and s.table == slot.table)
            step = self.step(slot)
            if step != "game":  # a step around the game (its page waits for nobody: it changes on a form)
                state = f"step-{step}"
            elif self.finished:
                state = "finished"
            elif not self.table_open(slot.table):
                state = f"lobby-{joined}"
            elif pending is None:
                state = f"waiting-{slot.answered}"  # the next change is its next question (or the end)
            else:
                clock = f"due {pending.due:.0f}" if pending.due is not None else f"left {pending.remaining}"
                state = f"question-{pending.observation.key}-{clock}"
            return f"{state}|{self.paused}|{slot.removed}|{slot.notices}"

    def _resolve(
        self,
        slot: SeatSlot,
        key: str,
        answer: str,
        how: str,
        trigger: str = "",
        *,
        role: str = "",
        otherwise: str = "deadline",
    ) -> None:
        pending = slot.pending.pop(key)
        self._storing[key] = pending.stored
        now = time.time()
        o = pending.observation
        seconds = None if pending.shown_at is None else round(now - pending.shown_at, 3)
        self.timings.append(
            {
                "player": slot.player,
                **({"table": slot.table} if self.tables > 1 else {}),
                "key": key,
                "round": o.round,
                "attempt": o.attempt,
                "shown_at": pending.shown_at,
                "answered_at": now,
                "how": how,
                "refused": len(pending.refused),
                **({"trigger": trigger} if trigger else {}),
            }
        )
        slot.answered += 1
        slot.hows[how] = slot.hows.get(how, 0) + 1
        self.save()
        given = WebAnswer(answer, how, seconds, tuple(pending.refused), role, otherwise)

        def settle() -> None:
            if pending.timer is not None:
                pending.timer.cancel()
            if not pending.future.done():
                pending.future.set_result(given)

        pending.loop.call_soon_threadsafe(settle)

    @property
    def stand_in(self) -> str | None:
        """The model role standing in at a deadline (the ``llm:<role>`` policy), else None."""
        kind, _, role = self.policy.partition(":")
        return role if kind == "llm" else None

    def answer_log(self) -> list[dict[str, Any]]:
        """Every answer of the web seats so far, in order: player, question key, how it came, seconds
        from the question being shown ("–" when it never was) and the entries the form refused."""
        with self._lock:
            timings = list(self.timings)
        out = []
        for t in timings:
            shown, answered = t.get("shown_at"), t.get("answered_at")
            seconds = (
                f"{answered - shown:.1f}"
                if isinstance(shown, int | float) and isinstance(answered, int | float)
                else "–"
            )
            how = str(t.get("how"))
            out.append(
                {
                    "table": t.get("table", 1),
                    "player": t.get("player"),
                    "key": t.get("key"),
                    "how": _LEGACY_HOW.get(how, how),
                    "trigger": t.get("trigger", "deadline" if how == "deadline" else ""),
                    "seconds": seconds,
                    "refused": t.get("refused", "?"),
                }
            )
        return out

    def status(self) -> list[dict[str, Any]]:
        """One row per web seat for the monitor."""
        with self._lock:
            return [
                {
                    "table": s.table,
                    "player": s.player,
                    "label": s.label,
                    "step": self.step(s),
                    "name": s.name,
                    "spec": s.spec,
                    "joined": s.joined,
                    "online": s.streams > 0,
                    "seen": s.seen,
                    "removed": s.removed,
                    "open": any(p.shown_at is not None for p in s.pending.values()),
                    "due": [
                        max(0, round(p.due - time.time())) if p.due is not None else None
                        for p in s.pending.values()
                        if p.shown_at is not None
                    ],
                    "answered": s.answered,
                    "answers": answers_text(s.hows),
                    "round": s.last_round,
                    "waiting": [
                        f"{p.observation.title}, round {p.observation.round}"
                        + (f" of {p.observation.rounds}" if p.observation.rounds else "")
                        for p in s.pending.values()
                        if p.shown_at is not None
                    ],
                }
                for s in sorted(self.slots.values(), key=lambda s: s.seat)
            ]

    # -- the experiment around the game (server thread) ------------------------------------------------
    def step(self, slot: SeatSlot) -> str:
        """Where the participant is: ``consent``, ``instructions`` (with the quiz), ``game`` (lobby,
        questions, waiting), ``questionnaire`` or ``debrief``; always ``game`` without an experiment."""
        experiment = self.experiment
        if experiment is None:
            return "game"
        if experiment.consent is not None and slot.consent_at is None:
            return "consent"
        if slot.ready_at is None:
            return "instructions"
        if not self.finished:
            return "game"
        if experiment.questionnaire is not None and slot.questionnaire_at is None:
            return "questionnaire"
        return "debrief"

    def opened(self, slot: SeatSlot) -> None:
        """The seat's page was opened: its arrival is recorded (an experiment's seat joins the game only
        once it passed the steps before it)."""
        with self._lock:
            if self.experiment is None:
                self.join(slot)
                return
            if slot.arrived_at is None:
                slot.arrived_at = time.time()
                self.save()
            if self.step(slot) == "debrief" and slot.finished_at is None:
                slot.finished_at = time.time()
                self.save()
                self.progressed.set()

    def agree(self, slot: SeatSlot) -> None:
        """The participant agreed to the consent text (the time is kept)."""
        with self._lock:
            if slot.consent_at is None:
                slot.consent_at = time.time()
                self.save()

    def take_quiz(self, slot: SeatSlot, given: list[str]) -> list[int]:
        """Grade one quiz attempt (kept with the numbers of the wrong answers); the wrong ones' numbers
        (from 1). All right: the participant is ready and joins the game."""
        experiment = self.experiment
        assert experiment is not None
        questions = experiment.quiz
        wrong = [
            n
            for n, q in enumerate(questions, start=1)
            if n > len(given) or not q.right(given[n - 1][:MAX_ANSWER_CHARS])
        ]
        with self._lock:
            if slot.ready_at is not None:
                return []
            if questions:
                slot.quiz.append({"at": time.time(), "wrong": wrong})
            if not wrong:
                slot.ready_at = time.time()
            self.save()
        if not wrong:
            self.join(slot)
        return wrong

    def answer_questionnaire(self, slot: SeatSlot, answers: dict[int, int]) -> None:
        """Keep the questionnaire's answers (checked by the caller against the scale)."""
        with self._lock:
            if slot.questionnaire_at is None:
                slot.answers = dict(answers)
                slot.questionnaire_at = time.time()
                self.save()

    def all_done(self) -> bool:
        """Whether every participant who played (passed the steps before the game) reached the debrief."""
        with self._lock:
            return all(s.finished_at is not None for s in self.slots.values() if s.ready_at is not None)

"""``llmpsych gamabench host``: a GAMA-Bench run with browser seats, served while it plays.

One process (see :mod:`.session` for why): uvicorn serves from a second thread; the run engine plays in
the main thread exactly as ``gamabench run`` does, its web seats answered through the session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from importlib import import_module
from pathlib import Path
from typing import Any

import uvicorn

from ..errors import ConfigError, LlmpsychError, RunInterrupted
from ..games.experiment import SessionConfig
from ..games.seats import WebSeat, build_seats, set_web_broker
from ..i18n import language
from ..runs import RunOutcome
from ..runs.config import RunConfig
from ..serving.hosts import host_names
from ..serving.listen import bind, is_loopback, public_name, server_config, url_host
from . import participants, scores
from .app import create_app
from .catalog import _run_id
from .seat_pages import SessionApp, monitor_route
from .security import TOKEN_PARAM
from .session import SESSION_FILE, Session, check_policy


def web_seats(config: RunConfig) -> list[tuple[int, str, str]]:
    """``(player, spec, name)`` of each ``web`` seat of a GAMA-Bench config."""
    options = config.options if isinstance(config.options, dict) else {}
    players = int(options.get("players", 10))
    seats = build_seats(options.get("seats"), players, load=False)
    return [(i, s.spec, s.name) for i, s in enumerate(seats) if isinstance(s, WebSeat)]


def host_run(
    run: Callable[[], RunOutcome],
    run_dir: Path,
    session: Session,
    *,
    host: str,
    port: int,
    announce: Callable[[str], None],
    linger: bool,
    on_ready: Callable[[dict[int, str], str, str], None] | None = None,
) -> RunOutcome:
    """Serve ``session`` (and the runs pages of ``run_dir``'s folder) while ``run()`` plays the game;
    ``on_ready(links, monitor, room)`` is told the first table's seat links, the monitor's and the room's
    (empty without a session file) once the server listens (the bots of a dry run start there).

    The experimenter's token, the room's and the seats' are the session's (``session.json``), and a
    resumed host listens on the session's port unless ``--port`` names another: every link handed out
    works again after ``--resume``. With an experiment around the game, the host stays up after the game
    until every participant who played reached the debrief (or Ctrl+C), then writes ``payments.csv``,
    ``participants.csv`` and the scored questionnaire (:mod:`.participants`)."""
    # the scores pages read (pandas, the games' analysis): imported now, before the links are given, not
    # by the first 30 seat pages at once (measured: the seat pages' p95 went from 1.7 s to 0.3 s in
    # benchmarks/web_people.py)
    import_module("llmpsych.games.analysis")
    sock = bind(host, port or session.port)
    port = sock.getsockname()[1]
    if session.port != port:
        session.port = port
        session.save()
    token = session.monitor_token
    base = f"http://{url_host(host)}:{port}"
    public = base
    if not is_loopback(host):
        public = f"http://{url_host(public_name(host))}:{port}"
    links = {s.seat: f"{public}/play/{s.token}" for s in session.slots.values()}
    experiment = session.experiment
    room = f"{public}/room/{session.room_token}" if experiment is not None else ""
    data_dir = session.data_dir
    scale = None
    if experiment is not None and experiment.questionnaire is not None:
        scale = participants.questionnaire_scale(experiment, data_dir)
    inner = create_app(
        [run_dir.parent],
        token=token,
        port=port,
        hosts=host_names(host),
        extra_routes=[monitor_route(session, links, _run_id(0, run_dir.name), run_dir, room)],
    )
    app = SessionApp(
        session,
        inner,
        token=token,
        port=port,
        hosts=host_names(host),
        instructions=lambda player: instructions(session, player),
        scale=scale,
    )
    server = uvicorn.Server(server_config(app))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    announce(f"llmpsych gamabench host: session in {run_dir}")
    if is_loopback(host):
        announce(
            "only this machine can reach it (loopback); use --host to let participants on a network join"
        )
    else:
        announce(
            f"WARNING: bound to {host}: anyone who can reach this machine on port {port} can connect; "
            "each page still needs its token, but the connection is plain HTTP (not encrypted): use it "
            "only on a network you trust"
        )
    announce("join links (one per participant; each admits its seat only):")
    for slot in sorted(session.slots.values(), key=lambda s: s.seat):
        at = f"table {slot.table} " if session.tables > 1 else ""
        announce(f"  {at}player {slot.player} ({slot.name}): {links[slot.seat]}")
    if room:
        announce(f"room (one link for everyone; a panel appends ?label=ID): {room}")
    monitor = f"{public}/session?{TOKEN_PARAM}={token}"
    announce(f"monitor (experimenter only): {monitor}")
    set_web_broker(session)
    if on_ready is not None:  # the bots of a dry run (with a session file they arrive through the room)
        on_ready({s.player: links[s.seat] for s in session.slots.values() if s.table == 1}, monitor, room)
    try:
        try:
            outcome = run()
        except RunInterrupted as exc:  # the session resumes with this command, not `llmpsych run`
            hint = (
                f"continue with: llmpsych gamabench host --resume {run_dir} (participants keep their links)"
            )
            raise RunInterrupted(exc.message, hint) from None
        session.scores, session.kinds = scores.final(run_dir)
        session.finished = True
        announce(f"the game is over; the report is on {public}/run/{_run_id(0, run_dir.name)}")
        if experiment is not None:
            participants.write_tables(session, scale, data_dir, score=False)
            if not linger:
                announce("waiting for every participant to reach the debrief (Ctrl+C stops now)")
                while not session.all_done():  # woken by each participant reaching the debrief
                    session.progressed.wait(0.5)
                    session.progressed.clear()
        if linger:
            announce("stop the server with Ctrl+C")
            while thread.is_alive():  # joined in steps, so Ctrl+C reaches this thread
                thread.join(0.5)
        return outcome
    finally:
        set_web_broker(None)
        session.closed = True  # the live-update streams end, so the server can stop
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        if experiment is not None:
            try:
                written = participants.write_tables(session, scale, data_dir, score=True)
            except LlmpsychError as exc:  # said, without hiding why the host stops (session.json has all)
                announce(f"error: the participants' tables were not all written: {exc.message}")
                written = []
            for path in written:
                if path.parent == run_dir or path.name == "report.md":  # not every table of the import
                    announce(f"wrote {path}")


def instructions(session: Session, player: int) -> str:
    """What the participant at ``player`` reads before the game: the session's text, else the game's
    instructions for people (:func:`llmpsych.games.people_text.instructions`, with the run's game
    options) and what the session adds: who the others are, the deadline, the money per point."""
    experiment = session.experiment
    if experiment is None:
        return ""
    if experiment.instructions is not None:
        return experiment.instructions
    return default_instructions(experiment, session.game_options, player, session.lang, session.policy)


def default_instructions(
    experiment: SessionConfig, options: dict[str, Any], player: int, lang: str = "en", policy: str = "default"
) -> str:
    """Our default instructions (see :func:`instructions`) in ``lang``, paragraphs separated by a blank
    line; what happens at a deadline is the deadline ``policy``'s."""
    from ..games import people_text
    from .i18n import PAGES, money

    t = PAGES.bound(lang)

    g = experiment.game
    games = [g.game] if isinstance(g.game, str) else list(g.game)
    lines: list[str] = []
    for game in games:
        params = options.get(game)
        lines += people_text.instructions(
            game,
            params if isinstance(params, dict) else None,
            players=g.players,
            rounds=g.rounds,
            player=player,
            lang=lang,
        )
    seats = build_seats(g.seats, g.players, load=False)
    people = sum(isinstance(s, WebSeat) for s in seats)
    machines = len(seats) - people
    others = t("table.people", people=people - 1) if people > 1 else t("table.nobody")
    if machines:
        others = t("table.machines", others=others, machines=machines)
    lines.append(t("table.others", others=others))
    if g.deadline > 0:
        then = t("deadline.then." + policy.partition(":")[0])
        lines.append(t("instructions.deadline", deadline=round(g.deadline), then=then))
    pay = experiment.payment
    stakes = []
    if pay.per_point > 0:  # the rate as given (0.125 stays 0.125), in the language's decimal sign
        rate = f"{pay.per_point:g}".replace(".", "," if lang == "de" else ".")
        stakes.append(t("instructions.per.point", rate=rate, currency=pay.currency))
    if pay.fee > 0:
        stakes.append(t("instructions.fee", fee=money(pay.fee, lang), currency=pay.currency))
    if stakes:
        lines.append(t("instructions.payment", stakes="; ".join(stakes)))
    return "\n\n".join(lines)


class WebHost:
    """The web app as ``gamabench host``'s people host (:mod:`llmpsych.games.hosting`)."""

    def prepare(
        self,
        config: RunConfig,
        run_dir: Path,
        deadline_s: float,
        lang: str = "en",
        experiment: object = None,
        on_deadline: str = "default",
    ) -> Session:
        assert experiment is None or isinstance(experiment, tuple)
        return prepare(config, run_dir, deadline_s, lang, experiment, on_deadline)

    def load(self, run_dir: Path) -> Session:
        return Session.load(run_dir)

    def serve(
        self,
        play: Callable[[], RunOutcome],
        run_dir: Path,
        session: object,
        *,
        host: str,
        port: int,
        announce: Callable[[str], None],
        linger: bool,
    ) -> RunOutcome:
        assert isinstance(session, Session)
        return host_run(play, run_dir, session, host=host, port=port, announce=announce, linger=linger)

    def scripted_models(self) -> AbstractContextManager[str]:
        from .bots import scripted_models

        return scripted_models()

    def dry_run(
        self,
        play: Callable[[], RunOutcome],
        run_dir: Path,
        session: object,
        *,
        host: str,
        port: int,
        announce: Callable[[str], None],
    ) -> RunOutcome:
        from .bots import dry_run, report

        assert isinstance(session, Session)
        outcome, checks = dry_run(
            play, run_dir, session, serve=host_run, host=host, port=port, announce=announce
        )
        report(checks, announce)
        return outcome


def prepare(
    config: RunConfig,
    run_dir: Path,
    deadline_s: float,
    lang: str = "en",
    experiment: tuple[SessionConfig, dict[str, Any]] | None = None,
    on_deadline: str = "default",
) -> Session:
    """A new session in ``run_dir`` for the web seats of ``config``, its pages in ``lang`` (refused
    without any, or with a stand-in role the config has no model for), a question not answered by its
    deadline answered by ``on_deadline``, with the ``experiment`` around the game when one is given (its
    questionnaire's scale is loaded now: a bad one is refused before anybody arrives)."""
    if config.task != "gamabench":
        raise ConfigError("only GAMA-Bench runs can be hosted")
    lang = language(lang)  # before anything is written
    seats = web_seats(config)
    if not seats:
        raise ConfigError(
            "this run has no web seats", "seat participants with e.g. -O seats='[web:Ann, web:Bob, llm, llm]'"
        )
    policy = check_policy(on_deadline, set(config.roles()))
    if (run_dir / SESSION_FILE).exists():
        raise ConfigError(f"{run_dir} already holds a session", "continue it with --resume")
    if experiment is not None and experiment[0].questionnaire is not None:
        participants.questionnaire_scale(experiment[0], config.data_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    options = config.options if isinstance(config.options, dict) else {}
    session = Session.create(
        run_dir, seats, deadline_s, lang, experiment, data_dir=config.data_dir, policy=policy
    )
    if experiment is not None:
        session.game_options = {k: v for k, v in options.items() if isinstance(v, dict)}
        session.save()
    return session

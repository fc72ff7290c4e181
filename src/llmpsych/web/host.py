"""``llmpsych gamabench host``: a GAMA-Bench run with browser seats, served while it plays.

One process (see :mod:`.session` for why): uvicorn serves from a second thread; the run engine plays in
the main thread exactly as ``gamabench run`` does, its web seats answered through the session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

import uvicorn

from ..errors import ConfigError, RunInterrupted
from ..games.seats import WebSeat, build_seats, set_web_broker
from ..runs import RunOutcome
from ..runs.config import RunConfig
from . import scores
from .app import create_app
from .catalog import _run_id
from .seat_pages import SessionApp, monitor_route
from .security import TOKEN_PARAM, host_names, new_token
from .server import bind, is_loopback, public_name, server_config, url_host
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
) -> RunOutcome:
    """Serve ``session`` (and the runs pages of ``run_dir``'s folder) while ``run()`` plays the game."""
    # the scores pages read (pandas, the games' analysis): imported now, before the links are given, not
    # by the first 30 seat pages at once (measured: the seat pages' p95 went from 1.7 s to 0.3 s in
    # benchmarks/web_people.py)
    import_module("llmpsych.games.analysis")
    sock = bind(host, port)
    port = sock.getsockname()[1]
    token = new_token()
    base = f"http://{url_host(host)}:{port}"
    public = base
    if not is_loopback(host):
        public = f"http://{url_host(public_name(host))}:{port}"
    links = {s.player: f"{public}/play/{s.token}" for s in session.slots.values()}
    inner = create_app(
        [run_dir.parent],
        token=token,
        port=port,
        hosts=host_names(host),
        extra_routes=[monitor_route(session, links, _run_id(0, run_dir.name), run_dir)],
    )
    app = SessionApp(session, inner, token=token, port=port, hosts=host_names(host))
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
    for slot in sorted(session.slots.values(), key=lambda s: s.player):
        announce(f"  player {slot.player} ({slot.name}): {links[slot.player]}")
    announce(f"monitor (experimenter only): {public}/session?{TOKEN_PARAM}={token}")
    set_web_broker(session)
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


class WebHost:
    """The web app as ``gamabench host``'s people host (:mod:`llmpsych.games.hosting`)."""

    def prepare(
        self, config: RunConfig, run_dir: Path, deadline_s: float, on_deadline: str = "default"
    ) -> Session:
        return prepare(config, run_dir, deadline_s, on_deadline)

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


def prepare(config: RunConfig, run_dir: Path, deadline_s: float, on_deadline: str = "default") -> Session:
    """A new session in ``run_dir`` for the web seats of ``config`` (refused without any, or with a
    stand-in role the config has no model for)."""
    if config.task != "gamabench":
        raise ConfigError("only GAMA-Bench runs can be hosted")
    seats = web_seats(config)
    if not seats:
        raise ConfigError(
            "this run has no web seats", "seat participants with e.g. -O seats='[web:Ann, web:Bob, llm, llm]'"
        )
    policy = check_policy(on_deadline, set(config.roles()))
    if (run_dir / SESSION_FILE).exists():
        raise ConfigError(f"{run_dir} already holds a session", "continue it with --resume")
    run_dir.mkdir(parents=True, exist_ok=True)
    return Session.create(run_dir, seats, deadline_s, policy)

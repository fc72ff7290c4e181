"""The hook ``gamabench host`` serves its browser seats through: games never import the web app (a layer
above them), so the web app registers its host here (:func:`register_host`) and the command asks for it
(:func:`people_host`). The top-level command line wires the two when it mounts the games commands; a
program that hosts people without it registers the host itself, or is refused in one line."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..runs.config import RunConfig
    from ..runs.runner import RunOutcome


class PeopleHost(Protocol):
    """Serves a GAMA-Bench run's ``web`` seats to people in browsers while the run plays."""

    def prepare(
        self,
        config: RunConfig,
        run_dir: Path,
        deadline_s: float,
        lang: str = "en",
        experiment: object = None,
        on_deadline: str = "default",
    ) -> object:
        """A new session in ``run_dir`` for the config's web seats, its pages in ``lang`` (ConfigError
        without any); with the experiment of a session file
        (:func:`llmpsych.games.experiment.load_session_config`) around it; a question not answered by its
        deadline gets the policy ``on_deadline`` (``default``, ``skip``, ``repeat``, ``llm[:ROLE]``)."""
        ...

    def load(self, run_dir: Path) -> object:
        """The session saved in ``run_dir`` (a resumed host)."""
        ...

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
        """Serve ``session`` while ``play()`` plays the game; its outcome."""
        ...

    def scripted_models(self) -> AbstractContextManager[str]:
        """A loopback model server answering every game request validly (its base URL): the model seats
        of a dry run without ``--model``."""
        ...

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
        """Play ``session`` with bots in its browser seats through the served pages, then check the data
        it exported (a failed check is an error)."""
        ...


_HOST: list[Callable[[], PeopleHost]] = []


def register_host(host: Callable[[], PeopleHost]) -> None:
    """Make ``host()`` (called when a game is hosted, so its imports wait until then) the people host."""
    _HOST[:] = [host]


def people_host() -> PeopleHost:
    """The registered people host; ConfigError when none is."""
    if not _HOST:
        raise ConfigError(
            "no web host is registered to serve browser seats",
            "run `llmpsych gamabench host` from the command line (it wires the web app in)",
        )
    return _HOST[0]()

"""The ``gamabench`` task: one work unit per (game, run); each unit plays one whole game.

``llmpsych run --task gamabench -O game=guessing -O players=3 -O rounds=2 -O runs=1`` plays a short game;
the paper's protocol is the default (10 players, 20 rounds, 5 runs; pass ``--temperature 1``).
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ConfigError, DataError
from ..models.chat_context import ChatContext
from ..models.cipher import DEFAULT_SHIFT, CipherContext
from ..models.types import GenerationParams
from ..runs.languages import OFFICIAL_LANGUAGE, resolve_language
from ..runs.optionfields import NameOrNames, off_switch
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable, range_text, require_columns
from ..runs.task import Task, WorkUnit
from . import registry
from .engine import Game, Table, table_context
from .prompts import PromptSet
from .result import GamaBenchResult
from .seats import LLMSeat, build_seats, stand_in_roles
from .template_sets import TemplateSetOption

if TYPE_CHECKING:
    from ..runs.calls import StoredCall
    from ..runs.config import RunConfig

#: The registered games by engine name (a live view of :mod:`llmpsych.games.registry`).
GAMES = registry.SCORING_NAMES


#: Recorded with every result: where this engine departs from the reference code (docs/games-engine.md).
DEVIATIONS = [
    "bounded re-asks (max_reasks), then a logged fallback action; the reference retried without limit",
    "answers validated strictly against the game's range or choices",
    "the JSON-format instruction and result phrases are llmpsych's own words in both prompt modes",
]


def _score_ranges(table: Any, path: Path, record: RunRecord) -> Any:
    """``games.csv`` with each row's score range, from its game's scoring (the thesis version the
    analysis scores with: 0-100 for every game)."""
    require_columns(table, path, ("game",))
    ranges = {}
    for name in table["game"].dropna().unique():
        try:
            ranges[name] = range_text(*game_class(str(name)).score_bounds("thesis"))
        except ConfigError:
            raise DataError(f"{path}: unknown game {str(name)[:40]!r}") from None
    return table.assign(range=table["game"].map(ranges))


def game_class(name: str) -> type[Game[Any]]:
    """Resolve a game name to its registered class."""
    try:
        return registry.get(name)
    except KeyError:
        raise ConfigError(
            f"unknown game {name!r}", f"available games: {', '.join(registry.names())}, or all"
        ) from None


class GamaBenchOptions(BaseModel):
    """Options of the gamabench task (``-O key=value``)."""

    game: NameOrNames = Field(
        default="guessing",
        description="a game, several (a list or comma-separated, e.g. guessing,pirate), or all",
    )
    runs: int = Field(
        default=5, ge=1, le=1000, description="independent games per game name (one work unit each)"
    )
    players: int = Field(default=10, ge=2, le=100, description="seats at the table")
    rounds: int = Field(
        default=20,
        ge=1,
        le=1000,
        description="rounds of the simultaneous games; the shot cap of Battle Royale; unused by the "
        "Pirate Game",
    )
    seats: list[str] | dict[int, str] | None = Field(
        default=None,
        description="a list with one seat per player (llm, web[:NAME], python:MODULE:FUNCTION), or "
        "{index: seat} (the others stay llm); default: every seat llm",
    )
    prompts: Literal["builtin", "official"] = Field(
        default="builtin",
        description="builtin (our wording) or official (the authors' templates, read from the data "
        "directory)",
    )
    prompt_version: int = Field(
        default=1,
        ge=1,
        le=5,
        description="official template version 1-5 (the GPT-4 rephrasings of the robustness study)",
    )
    persona: int | None = Field(
        default=None,
        ge=1,
        le=3,
        description="1 cooperative, 2 selfish, 3 game theorist (a sentence before the rules)",
    )
    cot: int | None = Field(
        default=None,
        ge=1,
        le=5,
        description="1-5: chain-of-thought trigger; the JSON then also asks for explanation",
    )
    cipher: bool = Field(
        default=False, description="CipherChat-style Caesar-cipher jailbreak (thesis §6.6.2)"
    )
    cipher_shift: int = Field(default=DEFAULT_SHIFT, ge=1, le=25, description="the cipher's shift, 1-25")
    template_set: TemplateSetOption | None = Field(
        default=None, description="a rephrased template set (`gamabench rephrase`): PATH or PATH#VERSION"
    )
    language: str | None = Field(
        default=None,
        max_length=60,
        description="the run's language (default: the template set's; en for the built-in and official "
        "prompts); one that contradicts the template set or the English prompts is refused",
    )
    max_reasks: int = Field(
        default=10,
        ge=0,
        le=100,
        description="re-asks of an unreadable or invalid answer before the logged fallback",
    )
    reask: Literal["repeat", "feedback"] = Field(
        default="repeat",
        description="repeat sends the same request again (as the reference did); feedback shows the model "
        "its answer and why it was rejected",
    )
    max_tokens: int | None = Field(
        default=1024, ge=1, description="answer limit per decision when the run's params.max_tokens is unset"
    )
    published: bool = Field(
        default=False,
        description="published: score Pirate votes and Diner answers as the published code did; corrected "
        "(the default): llmpsych's documented corrections (a game you run is measured, not a published "
        "table reproduced)",
        json_schema_extra=off_switch("corrected"),
    )
    # Each game's parameters: ``-O guessing.ratio=0.5`` (a table named after a registered game, checked
    # against the game's Params when the task is built).
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, dict[str, Any]] = Field(init=False)

    @model_validator(mode="after")
    def _game_tables(self) -> GamaBenchOptions:
        for key in self.model_extra or {}:
            if key not in registry.names():
                raise ValueError(f"unknown option {key!r} (not a game: {', '.join(registry.names())})")
        return self

    @model_validator(mode="after")
    def _language(self) -> GamaBenchOptions:
        """Resolve ``language`` from the template set (:func:`~llmpsych.runs.languages.resolve_language`),
        so a stored config and a planned one read alike."""
        named: dict[str, str | None]
        if self.template_set is None:  # the built-in and the official prompts are English
            named = {
                "built-in prompts" if self.prompts == "builtin" else "official prompts": OFFICIAL_LANGUAGE
            }
        else:  # a set naming no language (a rephrasing, or one written by hand): language says which
            named = {"template set": self.template_set.language}
        self.language = resolve_language(self.language, named)
        return self

    def game_params(self, game: str) -> dict[str, Any]:
        """The parameters given for ``game`` (empty when none)."""
        return dict((self.model_extra or {}).get(game) or {})

    def games(self) -> list[str]:
        """The selected game names."""
        names = [self.game] if isinstance(self.game, str) else list(self.game)
        if names == ["all"]:
            return registry.names()
        for name in names:
            game_class(name)
        return names


class GamaBenchTask(Task[GamaBenchOptions]):
    """GAMA-Bench: eight N-player multi-round games."""

    name = "gamabench"
    not_settings = frozenset({"game", "runs", "published"})
    Options = GamaBenchOptions
    Result = GamaBenchResult
    score_tables = (ScoreTable("games.csv", group="game", repeat="run", prepare=_score_ranges),)
    options: GamaBenchOptions

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.params = {name: self._params(name) for name in self.options.games()}
        config.options["language"] = self.options.language  # resolved from the template set: for reports
        if self.options.template_set:  # the stored config keeps the texts: the run is self-contained
            config.options["template_set"] = self.options.template_set.check_games(
                list(self.params)
            ).model_dump()
        roles = config.role_specs()
        # Fail early on a bad seat, importing nothing: a task is also built to re-analyse a run someone
        # sent, and that must not run its python: seats (a run imports them, after naming them).
        for seat in build_seats(self.options.seats, self.options.players, load=False):
            if isinstance(seat, LLMSeat) and seat.role not in roles:
                raise ConfigError(
                    f"seat {seat.spec!r}: no model role {seat.role!r}",
                    f'add it to the config, e.g. models = {{{seat.role} = "openai/gpt-4o-mini"}}',
                )

    @classmethod
    def validate_options(cls, options: dict[str, Any], source: str | None = None) -> BaseModel:
        """As every task's, with a key that is neither an option nor a registered game named on its own."""
        for key in options if isinstance(options, dict) else ():
            if key not in GamaBenchOptions.model_fields and key not in registry.names():
                prefix = f"{source}: " if source else ""
                valid = ", ".join(GamaBenchOptions.model_fields)
                raise ConfigError(
                    f"{prefix}unknown option {key!r} for task {cls.name!r}",
                    f"valid options: {valid}; a game's parameters go under its name: "
                    f"{', '.join(registry.names())}",
                )
        return super().validate_options(options, source)

    @classmethod
    def code_imports(cls, config: Any) -> list[str]:
        """The ``python:<module>:<function>`` seats of the config: building the seats imports them."""
        seats = config.options.get("seats") if isinstance(config.options, dict) else None
        specs = seats.values() if isinstance(seats, dict) else seats if isinstance(seats, list) else []
        return [
            f"seat {spec!r} imports {spec.split(':', 1)[1]!r}"
            for spec in specs
            if isinstance(spec, str) and spec.strip().lower().startswith("python:")
        ]

    def model_roles(self) -> set[str]:
        """The roles of the model seats: a game without one loads no model. Called when a run executes,
        it also imports the ``python:`` seats (a bad one stops the run before any unit)."""
        seats = build_seats(self.options.seats, self.options.players)
        return {seat.role for seat in seats if isinstance(seat, LLMSeat)} | stand_in_roles()

    def _params(self, game: str) -> BaseModel:
        cls = game_class(game)
        try:
            return cls.Params.model_validate(self.options.game_params(game))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"options for game {game!r}: {where}: {first['msg']}") from None

    def prompt_set(self, game: str) -> PromptSet:
        """The prompts of ``game`` under the chosen source and version."""
        cls = game_class(game)
        if self.options.template_set:
            return self.options.template_set.prompt_set(game, cls.folder, cls.builtin)
        return PromptSet(
            cls.folder, cls.builtin, self.options.prompts, self.options.prompt_version, self.config.data_dir
        )

    def data_files(self) -> list[Path]:
        return [path for game in self.params for path in self.prompt_set(game).files()]

    def units(self) -> list[WorkUnit]:
        return [
            WorkUnit(f"{game}-run{run:02d}", {"game": game, "run": run})
            for game in self.params
            for run in range(1, self.options.runs + 1)
        ]

    def generation_params(self) -> GenerationParams:
        """The task's defaults for a decision: its ``max_tokens`` (the run's and the role's parameters
        win over it, runs/params.py)."""
        if self.options.max_tokens is None:
            return GenerationParams()
        return GenerationParams(max_tokens=self.options.max_tokens)

    def new_game(self, name: str, rng: Any) -> Game[Any]:
        """A fresh game object with this task's options."""
        o = self.options
        return game_class(name)(
            self.params[name], o.players, o.rounds, self.prompt_set(name), rng, o.persona, o.cot
        )

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        name = unit.payload["game"]
        game = self.new_game(name, ctx.rng)
        seats = build_seats(self.options.seats, self.options.players)
        table = Table(
            game,
            seats,
            table_context(CipherContext(ctx, self.options.cipher_shift) if self.options.cipher else ctx),
            self.generation_params(),
            unit.unit_id,
            self.options.max_reasks,
            self.options.reask,
            game.truncate_after,
        )
        await game.play(table)
        return {
            "game": name,
            "run": unit.payload["run"],
            "players": self.options.players,
            "rounds_planned": self.options.rounds,
            "params": game.info(),
            "prompts": self.options.template_set.label
            if self.options.template_set
            else f"{self.options.prompts}-v{self.options.prompt_version}",
            "seats": [seat.spec for seat in seats],
            "fallbacks": table.fallbacks,
            "reasks": {"max": self.options.max_reasks, "mode": self.options.reask},
            "deviations": DEVIATIONS,
            "summary": game.summary(),
            "rounds": game.stored_rounds(),
        }  # the conversations are the stored calls (games/transcripts.py renders them)

    def analyze(self, record: RunRecord) -> list[Path]:
        from .analysis import analyze_record

        return analyze_record(record, self)

    @classmethod
    def conversations(
        cls, config: RunConfig, result: Any, calls: list[StoredCall]
    ) -> tuple[dict[int, Hashable], dict[Hashable, str]] | None:
        """Each call of a finished game by its player (a seat spec shared by several non-model seats:
        that spec), titled ``Player 2: `llm` (model `m`)``: :func:`.transcripts.player_keys`."""
        from .transcripts import player_keys, seat_title

        if not isinstance(result, dict):
            return None
        game = GamaBenchResult.model_validate(result)
        seats = game.seat_info(config.role_specs())
        keys = player_keys(game, calls, seats)
        return keys, {key: seat_title(key, seats) for key in dict.fromkeys(keys.values())}


def console_lines(run_dir: Path) -> list[str]:
    """What ``llmpsych run --task gamabench`` prints after its summary: each game's 0-100 score over its
    runs, with n, and how many decisions were the fallback action rather than the seats' own answers
    (the quickstart prints the same for its short game). Nothing when ``games.csv`` is absent."""
    import csv
    import statistics

    path = run_dir / "games.csv"
    if not path.is_file():
        return []
    rows: dict[str, list[dict[str, str]]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            rows.setdefault(row.get("game", "?"), []).append(row)
    decisions: dict[str, int] = {}
    decisions_path = run_dir / "decisions.csv"
    if decisions_path.is_file():
        with decisions_path.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                game = row.get("game", "?")
                decisions[game] = decisions.get(game, 0) + 1
    lines = []
    for game, runs in rows.items():
        scores = [float(r["score"]) for r in runs if r.get("score") not in (None, "", "nan")]
        if scores:
            # one run has no sd: shown without "± 0.0", which would read as runs that agreed
            spread = f" ± {statistics.stdev(scores):.1f}" if len(scores) > 1 else ""
            n = f"n = {len(scores)} of {len(runs)} runs scored"
            text = f"{statistics.mean(scores):.1f}{spread} / 100 ({n})"
        else:
            text = f"not computable (0 of {len(runs)} runs scored)"
        fallbacks = sum(int(float(r.get("fallbacks") or 0)) for r in runs)
        line = f"{game}: score {text}"
        if fallbacks:
            total = decisions.get(game)
            of = f" of {total}" if total else ""
            line += f"; {fallbacks}{of} decisions were the fallback action (no usable answer), not played"
        lines.append(line)
    return lines

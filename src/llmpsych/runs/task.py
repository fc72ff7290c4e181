"""What a benchmark provides to the run engine: units to run, how to run one, how to analyse."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import ConfigError
from ..registry import Registry, subclass_check
from .config import RunConfig, parse_run_config, read_config_file
from .scores import ScoreTable

if TYPE_CHECKING:
    from ..models.chat_context import ChatContext
    from .calls import StoredCall
    from .items import Administration
    from .record import RunRecord


@dataclass(frozen=True, slots=True)
class WorkUnit:
    """An independent piece of work; its payload must be JSON and determine its behaviour (slots: a run
    holds every unit while it runs, 50,000 for a large one)."""

    unit_id: str
    payload: dict[str, Any] = field(default_factory=dict)


class TaskUnits:
    """A task's units, to be read as many times as a run needs (count, check, register, execute) without
    holding them all: a list (or other sequence) the task built is read again; anything else (a generator)
    is asked for again each time, which :meth:`Task.units` being deterministic allows."""

    def __init__(self, task: Task[Any]) -> None:
        self._task = task
        first = task.units()
        self._sequence: Sequence[WorkUnit] | None = first if isinstance(first, Sequence) else None
        self._first: Iterable[WorkUnit] | None = None if self._sequence is not None else first

    def __iter__(self) -> Iterator[WorkUnit]:
        if self._sequence is not None:
            return iter(self._sequence)
        if self._first is not None:
            first, self._first = self._first, None
            return iter(first)
        return iter(self._task.units())

    def __len__(self) -> int:
        return len(self._sequence) if self._sequence is not None else sum(1 for _ in self)

    def ids(self) -> Iterator[str]:
        """The units' ids, in order."""
        return (unit.unit_id for unit in self)


class NoOptions(BaseModel):
    """For tasks without options."""

    model_config = ConfigDict(extra="forbid")


OptionsT = TypeVar("OptionsT", bound=BaseModel)


class Task(ABC, Generic[OptionsT]):
    """A benchmark as the run engine sees it, generic over its options model
    (``class PsychoBenchTask(Task[PsychoBenchOptions])``: ``self.options`` is typed).

    ``Options`` is the options model itself (validated from the config); ``Result`` the type of one
    unit's stored result, which :meth:`RunRecord.results <llmpsych.runs.record.RunRecord.results>` parses;
    ``score_tables`` the tables :meth:`analyze` writes scores into, which :func:`llmpsych.load_runs` reads.
    """

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = NoOptions
    Result: ClassVar[Any] = Any
    score_tables: ClassVar[tuple[ScoreTable, ...]] = ()
    #: Options that do not change what one unit measures (how many repetitions, which units, switches of
    #: the analysis only): a comparison pools runs that differ only in these (:mod:`llmpsych.runs.settings`).
    not_settings: ClassVar[frozenset[str]] = frozenset()
    #: Whether its units record valid answers out of those asked (a questionnaire's items): the run
    #: summary then says so when a finished run recorded none.
    answers_counted: ClassVar[bool] = False

    options: OptionsT

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.options = cast(OptionsT, self.validate_options(config.options))

    @classmethod
    def validate_options(cls, options: dict[str, Any], source: str | None = None) -> BaseModel:
        """The task's options from a mapping; ConfigError naming ``source`` (e.g. the config file)."""
        try:
            return cls.Options.model_validate(options)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            prefix = f"{source}: " if source else ""
            raise ConfigError(f"{prefix}options for task {cls.name!r}: {where}: {first['msg']}") from None

    @classmethod
    def score_factor_columns(cls) -> tuple[str, ...]:
        """The factor columns its score rows carry in the scores frame (a perturbation grid's ``template``,
        ``language``, ``persona``, ...): those its :attr:`score_tables` declare, in order, each once."""
        return tuple(dict.fromkeys(f for table in cls.score_tables for f in table.factors))

    @classmethod
    def language(cls, options: BaseModel) -> str | None:
        """The language of a run's texts, from its validated options (reports, ``compare`` and
        :func:`~llmpsych.load_runs` show it): by default its ``language`` option if it has one; None: not
        known."""
        language = getattr(options, "language", None)
        return language if isinstance(language, str) else None

    @classmethod
    def code_imports(cls, config: RunConfig) -> list[str]:
        """Python code the config makes the run import and execute (``python:`` game seats), named
        before anything is imported: a run printed it on start and on resume."""
        return []

    def model_roles(self) -> set[str] | None:
        """The model roles this run asks (only they are opened, so no unused model is loaded); None:
        every role of the config."""
        return None

    def data_files(self) -> list[Path]:
        """Data files the run reads (their sha256 goes into the manifest)."""
        return []

    @abstractmethod
    def units(self) -> Iterable[WorkUnit]:
        """Expand the config into work units (deterministic for a given config): a list, or a generator
        that makes them one at a time (the run then never holds them all: it asks again for each pass it
        needs, see :class:`TaskUnits`)."""

    @abstractmethod
    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        """Do one unit's work through ``ctx.chat`` and return a JSON-ready result."""

    def calls_per_unit(self) -> float | None:
        """Model calls a unit usually makes, for the progress bar's ETA before the first unit finishes."""
        return None

    def unit_calls(self, unit: WorkUnit) -> float | None:
        """Model calls ``unit`` is expected to make, for the ETA. A task whose units differ (short
        questionnaires, then a long game) sizes each, or the ETA takes the game for a questionnaire; None
        (the default): the mean of the finished units, before any: :meth:`calls_per_unit`."""
        return None

    def administrations(self, record: RunRecord) -> list[Administration]:
        """Every administration of a scale the run holds, item by item, for the item-level long format
        (:mod:`llmpsych.runs.items`; ``load_runs(...).items``); [] for a task that administers no scale.
        May read the run's scale definitions (its data directory, or the scale files' stored text)."""
        return []

    def analyze(self, record: RunRecord) -> list[Path]:
        """Write tables and reports from the run record into ``record.run_dir``; return the files written."""
        return []

    @classmethod
    def conversations(
        cls, config: RunConfig, result: Any, calls: list[StoredCall]
    ) -> tuple[dict[int, Hashable], dict[Hashable, str]] | None:
        """Who each of a finished unit's calls (in seq order) belongs to, when their messages do not chain
        (a game's seats are sent the game's summary of their answers, not their replies): the key of each
        call by ``seq`` and a title per key (the web unit page and the transcripts group by them). None
        (the default): calls are grouped by their messages (:func:`llmpsych.report.transcripts.threads`)."""
        return None


#: The tasks by name, each imported when first asked for, so the CLI starts fast (:mod:`llmpsych.registry`).
TASKS: Registry[type[Task[Any]]] = Registry("task", subclass_check(Task, "llmpsych.runs.Task", "name"))
TASKS.add("quickstart", "llmpsych.quickstart.task:QuickstartTask")
TASKS.add("echo", "llmpsych.testing.echo_task:EchoTask")
TASKS.add("psychobench", "llmpsych.psychobench.task:PsychoBenchTask")
TASKS.add("gamabench", "llmpsych.games.task:GamaBenchTask")
TASKS.add("gamabench-rephrase", "llmpsych.games.rephrase:RephraseTask")
TASKS.add("reliability", "llmpsych.reliability.task:ReliabilityTask")
TASKS.add("reliability-grid", "llmpsych.reliability.custom_grid:CustomGridTask")
TASKS.add("emotionbench", "llmpsych.emotion.task:EmotionBenchTask")
TASKS.add("mas", "llmpsych.collab.task:MasTask")
TASKS.add("faults", "llmpsych.faults.task:FaultsTask")
TASKS.add("validity", "llmpsych.psychobench.validity:ValidityTask")
TASKS.add("translate", "llmpsych.translate:TranslateTask")


def register_task(name: str, target: str | type[Task[Any]]) -> None:
    """Make a task available under ``name`` (``target``: ``module:Class`` or the class); the class is
    imported and checked now, so a task that is no :class:`Task` is refused here, in one line."""
    TASKS.register(name, target)


def task_class(name: str) -> type[Task[Any]]:
    """Resolve a task name to its class."""
    return TASKS.get(name)


def load_run_config(path: Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Load a config file and apply command-line overrides (which win); the task's options are checked."""
    data = read_config_file(path)
    named = (overrides or {}).get("task") or data.get("task")
    if isinstance(named, str) and isinstance(data.get("options"), dict):  # old option names: the new ones
        from .optionfields import new_names

        try:
            renamed = getattr(task_class(named).Options, "renamed_options", ())
            data["options"] = new_names(data["options"], renamed)
        except ValueError as exc:
            raise ConfigError(f"{path}: options: {exc}") from None
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key in {"options", "params"}:
            if not isinstance(data.get(key, {}), dict):
                raise ConfigError(
                    f"{path}: {key}: must be a table of settings, not {type(data[key]).__name__}"
                )
            data[key] = {**data.get(key, {}), **value}
        else:
            data[key] = value
    config = parse_run_config(data, str(path))
    try:
        task_class(config.task).validate_options(config.options, str(path))
    except ConfigError as exc:
        if str(path) in exc.message:
            raise
        raise ConfigError(f"{path}: {exc.message}", exc.hint) from None
    return config

"""What a benchmark provides to the run engine: units to run, how to run one, how to analyse."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import ConfigError
from ..registry import Registry, subclass_check
from .scores import ScoreTable

if TYPE_CHECKING:
    from ..models.chat_context import ChatContext
    from .config import RunConfig
    from .record import RunRecord


@dataclass(frozen=True)
class WorkUnit:
    """An independent piece of work; its payload must be JSON and determine its behaviour."""

    unit_id: str
    payload: dict[str, Any] = field(default_factory=dict)


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
    def units(self) -> list[WorkUnit]:
        """Expand the config into work units (deterministic for a given config)."""

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

    def analyze(self, record: RunRecord) -> list[Path]:
        """Write tables and reports from the run record into ``record.run_dir``; return the files written."""
        return []


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
TASKS.add("validity", "llmpsych.psychobench.validity:ValidityTask")
TASKS.add("translate", "llmpsych.instruments.translate:TranslateTask")


def register_task(name: str, target: str | type[Task[Any]]) -> None:
    """Make a task available under ``name`` (``target``: ``module:Class`` or the class); the class is
    imported and checked now, so a task that is no :class:`Task` is refused here, in one line."""
    TASKS.register(name, target)


def task_class(name: str) -> type[Task[Any]]:
    """Resolve a task name to its class."""
    return TASKS.get(name)

"""The translation kit: ``translate``, the run-engine task behind every translate command.

A translate run translates one source of texts: a scale file (``llmpsych scales translate``, the kit's own
source), or the texts a benchmark registers with the kit (:class:`TranslatableSource`,
:func:`register_source`): the option that holds them, how to read their texts, how a prompt names each kind
of text and how to write the translated file back. The kit names no benchmark; each registers its texts in
its own package, and :mod:`llmpsych.translate` (the task as runs and the commands find it) imports them.

The work is one unit per text of the source (for a scale file: each item, the title, the instructions, the
system prompt, each response label), so the run store, cache, resume, progress bar and failure summary are
the engine's. A unit asks the ``subject`` model for the translation, then asks the ``back`` model (or the
same model) to translate it back, and scores the agreement of the back-translation with the source
(:func:`agreement`). In paraphrase mode (a source that :attr:`~TranslatableSource.paraphrases`: a scale
file) a unit asks for ``N`` new wordings of an item in the same language, one after another, each different
from the source and the earlier ones.

Model replies are hostile input; :func:`clean_reply` states the rule, and a source may add its own check
(:meth:`TranslatableSource.check`). A reply that stays unusable is re-asked in the same conversation (at
most ``max_reasks`` times); a unit without a usable reply fails, naming the text, and the command exits 1.
The translated file is written (:meth:`TranslatableSource.write`) only when every unit is done.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import unicodedata
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from ..errors import ConfigError, LlmpsychError
from ..models.chat_context import ChatContext
from ..models.types import GenerationParams, Message
from ..registry import Registry
from ..report.files import atomic_write_text
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.languages import language_name
from ..runs.optionfields import no_flag
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable
from ..runs.task import Task, WorkUnit
from .native import ScaleFile, load_scale_text, write_scale_file
from .scale import Item, NormGroup, Scale, Subscale, Translation

#: How agreement is measured (recorded in the translated file and the report).
MEASURE = "character 3-gram Dice similarity of casefolded, NFKC-normalised text without punctuation (0-1)"

#: The role that back-translates when ``--back-model`` is given (otherwise the subject does).
BACK_ROLE = "back"
#: A cleaned reply longer than this many times the source (plus :data:`LENGTH_SLACK` characters) is invalid.
LENGTH_FACTOR = 4
LENGTH_SLACK = 40

_QUOTES = {
    '"': '"',
    "'": "'",
    "“": "”",
    "„": "“",
    "«": "»",
    "»": "«",
    "‹": "›",
    "「": "」",
    "『": "』",
    "”": "”",
}
_MARKER = re.compile(r"^\s*(?:\(?\d{1,3}[.):]|[-*•])\s+")
#: Placeholders a translation must keep exactly (a text's fill-ins): ``{name}`` and ``{}`` fields and
#: ``!<NAME k>!`` markers. A source adds its own (:attr:`TranslatableSource.placeholders`).
PLACEHOLDERS = re.compile(r"!<[A-Za-z][A-Za-z0-9_ ]{0,40}>!|\{[A-Za-z0-9_]*\}")


# -- pure cores ---------------------------------------------------------------------------------------------
def clean_reply(
    reply: str, source: str, *, paragraphs: bool = False, placeholders: re.Pattern[str] = PLACEHOLDERS
) -> tuple[str | None, str | None]:
    """The usable text of a model reply, or ``(None, reason)``.

    The rule, in order: drop code-fence lines and blank lines; drop leading lines that end with ``:``
    (a preface such as "Here is the translation:") when more lines follow; when the source is one line,
    keep only the first remaining line; strip a leading list marker (``1.``, ``2)``, ``-``, ``*``, ``•``)
    and one pair of enclosing quotes when the source has none. The result is invalid when empty, or
    longer than ``4 x`` the source's length plus 40 characters, or when its ``placeholders`` (by default
    :data:`PLACEHOLDERS`: ``{name}``, ``{}``, ``!<NAME k>!``) differ from the source's.

    With ``paragraphs`` (a source of multi-paragraph texts), blank lines between paragraphs are kept (a run
    of them as one).
    """
    lines = [ln.strip() for ln in reply.replace("\r\n", "\n").split("\n")]
    lines = _paragraphs([ln for ln in lines if (ln or paragraphs) and not ln.startswith("```")])
    while sum(1 for ln in lines if ln) > 1 and lines[0].endswith(":"):
        lines = _paragraphs(lines[1:])
    if not lines:
        return None, "empty reply"
    if "\n" not in source.strip():
        lines = lines[:1]
    text = "\n".join(lines)
    if not _MARKER.match(source):
        text = _MARKER.sub("", text, count=1)
    stripped = source.strip()
    if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1] and not (stripped and stripped[0] in _QUOTES):
        text = text[1:-1].strip()
    if not text:
        return None, "empty reply"
    expected, found = Counter(placeholders.findall(source)), Counter(placeholders.findall(text))
    if expected != found:
        changed = sorted((expected - found) + (found - expected))
        return None, f"placeholders changed ({', '.join(changed)}): keep them exactly as in the source"
    limit = LENGTH_FACTOR * len(stripped) + LENGTH_SLACK
    if len(text) > limit:
        return (
            None,
            f"{len(text)} characters, more than {LENGTH_FACTOR}x the source's "
            f"{len(stripped)} + {LENGTH_SLACK}",
        )
    return text, None


def _paragraphs(lines: list[str]) -> list[str]:
    """``lines`` without leading or trailing blank lines, each run of blank lines made one."""
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return out[:-1] if out and not out[-1] else out


def _grams(text: str, n: int = 3) -> Counter[str]:
    normal = unicodedata.normalize("NFKC", text).casefold()
    words = " ".join(re.sub(r"[\W_]+", " ", normal).split())
    padded = f" {words} "
    return Counter(padded[i : i + n] for i in range(max(0, len(padded) - n + 1)))


def agreement(source: str, back: str) -> float:
    """Character 3-gram Dice similarity (0-1) of two texts after NFKC normalisation, casefolding and
    removing punctuation: ``2 |A ∩ B| / (|A| + |B|)`` over the multisets of 3-grams of the space-padded
    words. Deterministic and language-neutral (no tokenizer); 1 for the same words, about 0.5 for a
    sentence with half its words changed."""
    a, b = _grams(source), _grams(back)
    total = sum(a.values()) + sum(b.values())
    if total == 0:
        return 1.0
    return 2 * sum((a & b).values()) / total


# -- what is translated -------------------------------------------------------------------------------------
def scale_texts(scale: Scale, *, items_only: bool = False) -> list[tuple[str, str, str]]:
    """``(key, kind, text)`` for every text of ``scale``: ``item N``, then ``title``, ``instructions``,
    ``system_prompt`` and ``label N`` (only items with ``items_only``)."""
    out = [(f"item {i.index}", "item", i.text) for i in scale.items]
    if items_only:
        return out
    for key in ("title", "instructions", "system_prompt"):
        value = getattr(scale, key)
        if value:
            out.append((key, key, value))
    out += [(f"label {level}", "label", text) for level, text in sorted(scale.level_labels.items())]
    return out


# -- prompts ------------------------------------------------------------------------------------------------
SYSTEM_PROMPT = (
    "You translate and reword psychological questionnaires. Keep each text's meaning, register and "
    "grammatical person, keep numbers and placeholders as they are, and reply with the requested text only."
)


def _translate_prompt(what: str, source: str, target: str, text: str) -> str:
    origin = f" from {source}" if source else ""
    return (
        f"Translate this questionnaire {what}{origin} into {target}. "
        f"Reply with the translation only.\n\n{text}"
    )


# -- what a source is ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceText:
    """One text of a source: its ``group`` (a scale's name; the first part of its unit id and the ``scale``
    column of ``agreement.csv``), its ``key`` within the group (``item 3``), its ``kind`` (a key of its
    source's :attr:`~TranslatableSource.kinds`) and the text."""

    group: str
    key: str
    kind: str
    text: str


class SourceValue(Protocol):
    """An option's value as a run config stores it: where it came from and the sha256 of what was read
    (a translated file records both)."""

    @property
    def path(self) -> str: ...

    @property
    def sha256(self) -> str: ...


V = TypeVar("V", bound=SourceValue)


class TranslatableSource(ABC, Generic[V]):
    """Texts the ``translate`` task translates, registered by the package that owns them
    (:func:`register_source`; a subclass instance, one per option).

    The source declares the task option that holds it (:attr:`option`: its stored spelling, and its flag
    unless :attr:`flag` is False, then a command's FILE argument sets it; ``-O`` and a config file reach
    it either way) and the model its value is validated into (:attr:`value_type`, from what the option is
    given: a path, a list of names). It cuts the value into texts
    (:meth:`texts`), says how a prompt names each kind of text (:attr:`kinds`), what language the value is
    in (:meth:`language`), and writes the translated file when every text is done (:meth:`write`). The
    prompts, the reply checks and the report's sentences have the kit's defaults, which a source may
    override.
    """

    #: the task option holding the source (a Python name, e.g. ``scale_file``)
    option: ClassVar[str]
    #: the model the option's value is validated into (a :class:`SourceValue`)
    value_type: ClassVar[type[Any]]
    #: how an error names the source ("a scale file")
    what: ClassVar[str]
    #: the option's help (its flag's, when it has one)
    description: ClassVar[str]
    #: kind -> the words a prompt names a text of that kind with ("statement")
    kinds: ClassVar[Mapping[str, str]]
    #: whether the option has a flag of its own (False: a command's FILE argument sets it)
    flag: ClassVar[bool] = False
    #: whether ``--paraphrase N`` applies (new wordings of items, stored as the items' versions)
    paraphrases: ClassVar[bool] = False
    #: whether ``--name-suffix`` applies (it renames the scales of a scale file)
    renames: ClassVar[bool] = False
    #: the system message of every translation request
    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    #: whether a reply keeps its blank lines between paragraphs (:func:`clean_reply`)
    paragraphs: ClassVar[bool] = False
    #: the placeholders a translation must keep exactly (:func:`clean_reply`)
    placeholders: ClassVar[re.Pattern[str]] = PLACEHOLDERS
    #: the title of the run's report
    report_title: ClassVar[str] = "llmpsych translation report"
    #: what the report's n counts, one sentence ("n = items.")
    counted: ClassVar[str] = "n = texts."

    def annotation(self) -> Any:
        """The option's type: :attr:`value_type` or None (a source may add validators)."""
        return self.value_type | None

    def field(self) -> tuple[Any, Any]:
        """The option as a field of the task's options model: its type, default None, its help, no flag
        unless :attr:`flag`."""
        extra = None if self.flag else no_flag()
        return self.annotation(), Field(default=None, description=self.description, json_schema_extra=extra)

    @abstractmethod
    def texts(self, value: V, *, paraphrase: bool) -> list[SourceText]:
        """The texts to translate, in order (with ``paraphrase``: the texts to reword)."""

    @abstractmethod
    def write(self, value: V, done: Finished) -> Path:
        """Write the translated file into ``done.run_dir`` and return its path."""

    def language(self, value: V, group: str | None) -> str | None:
        """The language the value names for its texts (of ``group``, or of the whole value for None);
        None: it names none (``--source-language`` gives it)."""
        return None

    def require_language(self, value: V) -> None:
        """Refuse a translation without ``--source-language`` when the value names no language."""
        if self.language(value, None) is None:
            raise ConfigError(
                f"{value.path} ({self.what}) names no language",
                "give the source language with --source-language (e.g. --source-language en)",
            )

    def data_files(self, value: V) -> list[Path]:
        """The files the run read (their sha256 goes into the manifest): the value's path, if a file."""
        path = Path(value.path)
        return [path] if path.is_file() else []

    def prompt(self, what: str, source: str, target: str, text: str) -> str:
        """The request to translate ``text`` (a ``what``) from ``source`` into ``target`` (language names;
        ``source`` may be empty)."""
        return _translate_prompt(what, source, target, text)

    def check(self, original: str, candidate: str) -> str | None:
        """Why the cleaned reply ``candidate`` cannot stand for ``original`` (None: it can), beyond
        :func:`clean_reply`'s rule; the reason is sent back when the text is re-asked."""
        return None

    def name(self, group: str, key: str) -> str:
        """How the summary and the console name a text (its key)."""
        return key

    def reads_it(self, file: Path) -> str:
        """What reads the translated ``file`` back, for the report ("`llmpsych scales validate` accepts
        it")."""
        return "in the run folder"


@dataclass(frozen=True)
class Finished:
    """A translate run with every text done, as its source writes the translated file from it."""

    task: TranslateTask
    #: (group, key) -> the text's result
    results: Mapping[tuple[str, str], TextResult]
    #: how the new file was made (:func:`translation_record`), to record in it
    record: Translation
    run_dir: Path

    @property
    def options(self) -> TranslateOptions:
        return self.task.options


# -- the kit's own source: scale files ----------------------------------------------------------------------
class ScaleFileTexts(TranslatableSource[ScaleFile]):
    """A scale file (``scales translate``): one text per item, the title, the instructions, the system
    prompt and each response label (the items only, when paraphrased); the new file is a scale file, its
    norms marked with the language of the population they come from."""

    option = "scale_file"
    value_type = ScaleFile
    what = "a scale file"
    description = "a scale file to translate"
    kinds = {
        "title": "title",
        "instructions": "instructions",
        "system_prompt": "system prompt",
        "label": "answer-option label",
        "item": "statement",
    }
    paraphrases = True
    renames = True
    report_title = "llmpsych scale translation report"
    counted = (
        "Norms in the new file come from the source-language population (each norm's `language`). "
        "n = texts (items, title, instructions, labels)."
    )

    def texts(self, value: ScaleFile, *, paraphrase: bool) -> list[SourceText]:
        return [
            SourceText(scale.name, key, kind, text)
            for scale in _scales(value)
            for key, kind, text in scale_texts(scale, items_only=paraphrase)
        ]

    def language(self, value: ScaleFile, group: str | None) -> str | None:
        return next((s.language for s in _scales(value) if s.name == group), None)

    def require_language(self, value: ScaleFile) -> None:
        for scale in _scales(value):
            if not scale.language:
                raise ConfigError(
                    f"{value.path}: scale {scale.name!r} names no language",
                    "give the source language with --source-language (e.g. --source-language en), or add "
                    "language: to the file",
                )

    def write(self, value: ScaleFile, done: Finished) -> Path:
        new = [
            translated_scale(s, {k: r for (name, k), r in done.results.items() if name == s.name}, done)
            for s in _scales(value)
        ]
        out_file = write_scale_file(new, done.run_dir / output_name(Path(value.path), done.options))
        load_scale_text(out_file.read_text(encoding="utf-8"), origin=str(out_file), suffix=out_file.suffix)
        return out_file

    def reads_it(self, file: Path) -> str:
        return "`llmpsych scales validate` accepts it"


@lru_cache(maxsize=8)
def _scales(value: ScaleFile) -> tuple[Scale, ...]:
    """The scales of a stored scale file, parsed once (a unit asks for its scale's language)."""
    return tuple(value.scales())


# -- the registry -------------------------------------------------------------------------------------------
def _source_check(target: object) -> list[str]:
    if not isinstance(target, TranslatableSource):
        return [f"{target!r} is not a TranslatableSource instance"]
    required = ("option", "value_type", "what", "description", "kinds")
    missing = [attr for attr in required if not hasattr(target, attr)]
    if missing:
        return [f"it does not define {', '.join(missing)}"]
    if not (isinstance(target.option, str) and target.option.isidentifier()):
        return [f"its option {target.option!r} is not a Python name"]
    if target.option in TranslateOptions.model_fields:
        return [f"{target.option!r} is an option of every translation"]
    if not target.kinds:
        return ["it names no kind of text"]
    return []


#: The sources of texts the translate task takes, by option (registration order is the options' order).
SOURCES: Registry[TranslatableSource[Any]] = Registry("translatable source", _source_check)


def register_source(source: TranslatableSource[Any]) -> None:
    """Make ``translate`` take ``source`` (checked now, so a half-written source is refused here, in one
    line): its option joins the task's options model, and a run, a resume and every translate command
    take it. An option already held by another source is refused."""
    problems = _source_check(source)
    if problems:  # before anything is read off it
        named = getattr(source, "option", type(source).__name__)
        raise ConfigError(f"translatable source {named!r} cannot be registered: {'; '.join(problems)}")
    if source.option in SOURCES:
        held, new = _class_name(SOURCES.get(source.option)), _class_name(source)
        if held != new:  # the same source registered again (a module reloaded) replaces itself
            raise ConfigError(f"translatable source {source.option!r} is already registered by {held}")
    SOURCES.register(source.option, source)
    TranslateTask.Options = options_model()


def _class_name(source: object) -> str:
    return f"{type(source).__module__}.{type(source).__qualname__}"


def unregister_source(option: str) -> None:
    """Forget the source registered for ``option`` (sources defined at run time, e.g. in tests)."""
    SOURCES.remove(option)
    TranslateTask.Options = options_model()


def sources() -> list[TranslatableSource[Any]]:
    """The registered sources, in registration order."""
    return [SOURCES.get(name) for name in SOURCES]


def options_model() -> type[TranslateOptions]:
    """:class:`TranslateOptions` with one option per registered source, those first (a source's flag
    leads the task's flags in ``--help``)."""
    registered = tuple(sources())
    holders = create_model(  # type: ignore[call-overload]  # fields named at run time
        "TranslateSources",
        __config__=ConfigDict(extra="forbid"),
        **{s.option: s.field() for s in registered},
    )
    namespace = {"__module__": __name__, "__doc__": TranslateOptions.__doc__, "sources": registered}
    return type("TranslateOptions", (TranslateOptions, holders), namespace)


# -- the task -----------------------------------------------------------------------------------------------
class TranslateOptions(BaseModel):
    """What to translate, into what, and how hard to insist on a usable reply.

    The source is the option of one registered source (:func:`register_source`); the task's ``Options``
    is this model with those options first (:func:`options_model`)."""

    model_config = ConfigDict(extra="forbid")

    #: the registered sources whose options the model holds
    sources: ClassVar[tuple[TranslatableSource[Any], ...]] = ()

    to: str | None = Field(default=None, max_length=60, description="target language (ISO code or a name)")
    source_language: str | None = Field(
        default=None, max_length=60, description="the source language, when the file names none"
    )
    paraphrase: int = Field(default=0, ge=0, le=20, description="new wordings per item (0: translate)")
    max_reasks: int = Field(
        default=2, ge=0, le=10, description="times an unusable reply is asked again, with the reason"
    )
    max_tokens: int = Field(default=512, ge=16, description="answer limit of a translation")
    lowest: int = Field(
        default=10, ge=1, le=1000, description="the texts of lowest agreement listed for review"
    )
    name_suffix: str = Field(
        default="",
        max_length=40,
        description="appended to each scale's name in the new file (e.g. -de), so that a run can hold "
        "the source and the translation side by side",
    )

    @model_validator(mode="after")
    def _mode(self) -> TranslateOptions:
        """One source; exactly one of ``to`` and ``paraphrase`` (where the source paraphrases); a
        translation needs the source's language.

        Raised as :class:`ConfigError` (not wrapped by pydantic) so the line reads as written."""
        given = [s for s in type(self).sources if getattr(self, s.option, None) is not None]
        if len(given) != 1:
            whats = [s.what for s in type(self).sources]
            listed = ", ".join(whats[:-1]) + f" or {whats[-1]}" if len(whats) > 1 else "".join(whats)
            raise ConfigError(f"give one of {listed} to translate")
        source = given[0]
        if self.name_suffix and not source.renames:  # a flag of every translate command: never ignored
            raise ConfigError("--name-suffix renames the scales of a scale file: it takes a scale file")
        if self.paraphrase and not source.paraphrases:
            raise ConfigError("--paraphrase writes item versions: it takes a scale file")
        if self.paraphrase and self.to is not None:
            raise ConfigError("give either a target language (--to) or --paraphrase N, not both")
        if not self.paraphrase and not (self.to and self.to.strip()):
            or_paraphrase = ", or --paraphrase N" if source.paraphrases else ""
            raise ConfigError(f"give a target language (--to LANGUAGE){or_paraphrase}")
        if not self.paraphrase and not self.source_language:
            source.require_language(getattr(self, source.option))
        return self

    def given(self) -> tuple[TranslatableSource[Any], Any]:
        """The source to translate and its value."""
        for source in type(self).sources:
            value = getattr(self, source.option, None)
            if value is not None:
                return source, value
        raise ConfigError("no source to translate")  # the validator refuses that first

    @property
    def source(self) -> SourceValue:
        """The value of the source to translate (a scale file, a benchmark's texts)."""
        value: SourceValue = self.given()[1]
        return value


class TextResult(BaseModel):
    """One translated (or paraphrased) text."""

    model_config = ConfigDict(extra="allow")

    scale: str
    key: str
    source: str
    text: str | None = None
    back_translation: str | None = None
    versions: list[str] = Field(default_factory=list)
    agreement: float
    asks: int
    rejected: list[str] = Field(default_factory=list)


class TranslationFailed(LlmpsychError):
    """No usable reply for a text after the allowed re-asks."""


class TranslateTask(Task[TranslateOptions]):
    """Translate the texts of one source (a scale file, or the texts a benchmark registered), or paraphrase
    a scale's items, one unit per text."""

    name = "translate"
    #: replaced by the model with an option per registered source (:func:`register_source`)
    Options = TranslateOptions
    Result = TextResult
    score_tables = (
        ScoreTable(
            "agreement.csv",
            group="scale",
            repeat=None,
            item="text",
            keys=(
                "scale",
                "text",
                "source",
                "translation",
                "back_translation",
                "versions",
                "asks",
                "rejected",
            ),
        ),
    )

    @cached_property
    def source(self) -> TranslatableSource[Any]:
        """The source translated."""
        return self.options.given()[0]

    @cached_property
    def value(self) -> Any:
        """Its value, as the run config stores it."""
        return self.options.given()[1]

    @cached_property
    def _languages(self) -> dict[str | None, str | None]:
        return {}

    def data_files(self) -> list[Path]:
        return self.source.data_files(self.value)

    def calls_per_unit(self) -> float | None:
        return float(self.options.paraphrase or 2)

    def source_language(self, group: str | None) -> str | None:
        """The language the texts of ``group`` are in (``--source-language`` wins over the source)."""
        if self.options.source_language:
            return self.options.source_language
        if group not in self._languages:
            self._languages[group] = self.source.language(self.value, group)
        return self._languages[group]

    def units(self) -> list[WorkUnit]:
        return [
            WorkUnit(
                f"{t.group}/{t.key.replace(' ', '-')}",
                {"scale": t.group, "key": t.key, "kind": t.kind, "text": t.text},
            )
            for t in self.source.texts(self.value, paraphrase=bool(self.options.paraphrase))
        ]

    def _params(self) -> GenerationParams:
        return GenerationParams(max_tokens=self.options.max_tokens)  # a default: the user's wins

    def _check(self, original: str) -> Callable[[str], str | None]:
        """The source's check of a reply that stands for ``original``."""
        return lambda text: self.source.check(original, text)

    async def _ask(
        self,
        ctx: ChatContext,
        messages: list[Message],
        source: str,
        role: str,
        check: Callable[[str], str | None] | None = None,
    ) -> tuple[str, int, list[str]]:
        """A usable reply to ``messages`` (re-asked in the conversation), its number of asks and the
        rejected replies' reasons; :class:`TranslationFailed` when none is usable."""
        rejected: list[str] = []
        kit = self.source
        for attempt in range(self.options.max_reasks + 1):
            result = await ctx.chat(messages, self._params(), role=role)
            text, reason = clean_reply(
                result.text, source, paragraphs=kit.paragraphs, placeholders=kit.placeholders
            )
            if text is not None and check is not None:
                reason = check(text)
            if text is not None and reason is None:
                return text, attempt + 1, rejected
            rejected.append(str(reason))
            messages = [
                *messages,
                {"role": "assistant", "content": result.text},
                {
                    "role": "user",
                    "content": f"That reply cannot be used ({reason}). Reply with only the requested text, "
                    "as a single line if the original is one line, without quotes, numbering or comments.",
                },
            ]
        raise TranslationFailed(
            f"no usable reply after {self.options.max_reasks + 1} asks ({'; '.join(rejected)})",
            "re-run with a larger -O max_reasks=N, or another model",
        )

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        p = unit.payload
        kit = self.source
        what = kit.kinds[p["kind"]]
        if self.options.paraphrase:
            return await self._paraphrase(ctx, p, what)
        source_lang = language_name(self.source_language(p["scale"]) or "")
        target = language_name(self.options.to or "")
        system: Message = {"role": "system", "content": kit.system_prompt}
        ask = [system, {"role": "user", "content": kit.prompt(what, source_lang, target, p["text"])}]
        text, asks, rejected = await self._ask(ctx, ask, p["text"], "subject", self._check(p["text"]))
        role = BACK_ROLE if BACK_ROLE in ctx.clients else "subject"
        back_ask = [system, {"role": "user", "content": kit.prompt(what, target, source_lang, text)}]
        back, back_asks, back_rejected = await self._ask(ctx, back_ask, text, role, self._check(text))
        return TextResult(
            scale=p["scale"],
            key=p["key"],
            source=p["text"],
            text=text,
            back_translation=back,
            agreement=agreement(p["text"], back),
            asks=asks + back_asks,
            rejected=rejected + back_rejected,
        ).model_dump()

    async def _paraphrase(self, ctx: ChatContext, p: dict[str, Any], what: str) -> Any:
        named = self.source.language(self.value, p["scale"])
        language = language_name(named or self.options.source_language or "the same language")
        versions: list[str] = []
        asks = 0
        rejected: list[str] = []

        def new(text: str) -> str | None:
            seen = [p["text"], *versions]
            return "repeats an earlier wording" if _norm(text) in {_norm(s) for s in seen} else None

        for _ in range(self.options.paraphrase):
            prompt = _paraphrase_prompt(what, language, p["text"], versions)
            system: Message = {"role": "system", "content": SYSTEM_PROMPT}
            text, n, why = await self._ask(
                ctx, [system, {"role": "user", "content": prompt}], p["text"], "subject", new
            )
            versions.append(text)
            asks, rejected = asks + n, rejected + why
        return TextResult(
            scale=p["scale"],
            key=p["key"],
            source=p["text"],
            versions=versions,
            agreement=min(agreement(p["text"], v) for v in versions),
            asks=asks,
            rejected=rejected,
        ).model_dump()

    def analyze(self, record: RunRecord) -> list[Path]:
        return analyze_translation(self, record)


def _paraphrase_prompt(what: str, language: str, text: str, earlier: list[str]) -> str:
    avoid = "".join(f"\n- {v}" for v in earlier)
    also = f"\n\nIt must also differ from these wordings:{avoid}" if earlier else ""
    return (
        f"Write one new wording of this questionnaire {what} in {language}, with the same meaning, "
        f"that a respondent would answer the same way. Reply with the new wording only.\n\n{text}{also}"
    )


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).split())


# -- analysis -----------------------------------------------------------------------------------------------
def output_name(source: Path, options: TranslateOptions) -> str:
    """``my.yaml`` -> ``my.de.yaml`` (translation) or ``my.paraphrased.yaml``."""
    tag = "paraphrased" if options.paraphrase else re.sub(r"[^\w-]+", "_", options.to or "").strip("_")
    return f"{source.stem}.{tag or 'translated'}{source.suffix or '.yaml'}"


def translation_record(task: TranslateTask, model: str, back_model: str | None) -> Translation:
    """What the new file records about how it was made."""
    o = task.options
    return Translation(
        mode="paraphrase" if o.paraphrase else "translate",
        model=model,
        back_model=None if o.paraphrase else back_model,
        date=_dt.date.today().isoformat(),
        source_file=Path(o.source.path).name,
        source_sha256=o.source.sha256,
        measure=MEASURE,
    )


def translated_scale(scale: Scale, results: Mapping[str, TextResult], done: Finished) -> Scale:
    """``scale`` with its texts replaced by the translations (or its items given the new versions),
    norms marked with the language of the population they come from, and the translation recorded."""
    o = done.options
    record = done.record
    if o.paraphrase:
        items = tuple(
            Item(
                i.index,
                i.text,
                i.reverse,
                (*i.versions, *results[f"item {i.index}"].versions),
                i.back_translation,
            )
            for i in scale.items
        )
        return _replace(scale, name=scale.name + o.name_suffix, items=items, translation=record)

    def text(key: str) -> str:
        return str(results[key].text)

    items = tuple(
        Item(i.index, text(f"item {i.index}"), i.reverse, (), results[f"item {i.index}"].back_translation)
        for i in scale.items
    )
    from_language = done.task.source_language(scale.name)
    subscales = tuple(
        Subscale(
            s.name,
            s.item_indices,
            tuple(
                NormGroup(g.label, g.mean, g.sd, g.n, g.citation, g.language or from_language)
                for g in s.norms
            ),
        )
        for s in scale.subscales
    )
    back = {k: str(r.back_translation) for k, r in results.items() if not k.startswith("item ")}
    record = Translation(**{**record.__dict__, "back_translations": back})
    texts = {
        k: text(k) if getattr(scale, k) else getattr(scale, k)
        for k in ("title", "instructions", "system_prompt")
    }
    labels = {level: text(f"label {level}") for level in scale.level_labels}
    return _replace(
        scale,
        name=scale.name + o.name_suffix,
        items=items,
        subscales=subscales,
        level_labels=labels,
        language=o.to,
        translated_from=from_language,
        translation=record,
        **texts,
    )


def _replace(scale: Scale, **changes: Any) -> Scale:
    from dataclasses import replace

    return replace(scale, **changes)


def analyze_translation(task: TranslateTask, record: RunRecord) -> list[Path]:
    """Write the agreement table and report, and (when every text is done) the translated file."""
    o, run_dir, source = task.options, record.run_dir, task.source
    done = {(r.scale, r.key): r for _, r in record.results(TextResult)}
    failed = [u.unit_id for u in record.failed()]
    roles = record.config.role_specs()
    model, back_model = roles.get("subject", "?"), roles.get(BACK_ROLE)
    rows = [
        {
            "scale": r.scale,
            "text": r.key,
            "source": r.source,
            **(
                {"versions": " | ".join(r.versions), "lowest_similarity": r.agreement}
                if o.paraphrase
                else {"translation": r.text, "back_translation": r.back_translation, "agreement": r.agreement}
            ),
            "asks": r.asks,
            "rejected": "; ".join(r.rejected),
        }
        for r in done.values()
    ]
    frame = pd.DataFrame(rows)
    score = "lowest_similarity" if o.paraphrase else "agreement"
    written: list[Path] = []
    out_file: Path | None = None
    if not failed and len(done) == len(record.units):
        finished = Finished(task, done, translation_record(task, model, back_model), run_dir)
        out_file = source.write(task.value, finished)
        written.append(out_file)
    lowest = frame.nsmallest(o.lowest, score) if not frame.empty else frame
    summary = {
        "mode": "paraphrase" if o.paraphrase else "translate",
        "to": o.to,
        "texts": len(record.units),
        "done": len(done),
        "failed": failed,
        "file": None if out_file is None else str(out_file),
        f"mean_{score}": None if frame.empty else float(frame[score].mean()),
        f"min_{score}": None if frame.empty else float(frame[score].min()),
        "lowest": []
        if frame.empty
        else [source.name(str(g), str(k)) for g, k in zip(lowest["scale"], lowest["text"], strict=True)],
        "measure": MEASURE,
    }
    atomic_write_text(run_dir / "translation.json", json.dumps(summary, indent=1, ensure_ascii=False))
    written.append(run_dir / "translation.json")
    sections = _sections(task, frame, score, summary, model, back_model)
    return written + write_run_report(run_dir, source.report_title, sections, tables=[("agreement", frame)])


def _sections(
    task: TranslateTask,
    frame: pd.DataFrame,
    score: str,
    summary: dict[str, Any],
    model: str,
    back_model: str | None,
) -> list[tuple[str, str]]:
    o = task.options
    source = Path(o.source.path)
    if o.paraphrase:
        what = (
            f"Model `{model}` wrote {o.paraphrase} new wording(s) of each item of `{source.name}` "
            f"(sha256 {o.source.sha256[:12]}), stored as the items' `versions`. "
            f"Similarity of each new wording to the source: {MEASURE}; a low value may be a changed "
            "meaning, a value near 1 a near copy. n = items."
        )
    else:
        back = f"`{back_model}`" if back_model else "the same model"
        what = (
            f"Model `{model}` translated `{source.name}` (sha256 {o.source.sha256[:12]}) into "
            f"{language_name(o.to or '')} (`{o.to}`); {back} translated each text back. Agreement of the "
            f"back-translation with the source: {MEASURE}. It flags texts for a human to review; it is "
            "not a validation of the translation. " + task.source.counted
        )
    sections = [("What was done", what)]
    if not frame.empty:
        stats = frame[score].describe()
        sections.append(
            (
                "Agreement" if not o.paraphrase else "Similarity to the source",
                f"n = {int(stats['count'])} texts; mean {stats['mean']:.2f}, median {stats['50%']:.2f}, "
                f"lowest {stats['min']:.2f}.",
            )
        )
        lowest = frame.nsmallest(o.lowest, score)
        sections.append((f"Lowest {score.replace('_', ' ')}: review these first", table(lowest)))
    if summary["failed"]:
        sections.append(
            (
                "Failed texts",
                "No usable reply after the allowed re-asks for: "
                + ", ".join(f"`{u}`" for u in summary["failed"])
                + ". The new file is written only when every text is done; "
                "`llmpsych run --resume <run dir>` asks the failed texts again.",
            )
        )
    else:
        file = Path(str(summary["file"]))
        sections.append(("The new file", f"`{file.name}` ({task.source.reads_it(file)})."))
    sections.append(
        ("Files", "agreement.csv (one row per text), translation.json (summary), run.sqlite (every request).")
    )
    return sections


def console_lines(run_dir: Path) -> list[str]:
    """What ``scales translate`` prints after the run summary."""
    path = run_dir / "translation.json"
    if not path.is_file():
        return []
    s = json.loads(path.read_text(encoding="utf-8"))
    lines = []
    key = "lowest_similarity" if s["mode"] == "paraphrase" else "agreement"
    if s.get(f"mean_{key}") is not None:
        lines.append(
            f"{key.replace('_', ' ')}: mean {s[f'mean_{key}']:.2f}, lowest {s[f'min_{key}']:.2f} "
            f"(review first: {', '.join(s['lowest'][:5])})"
        )
    if s["failed"]:
        lines.append(f"failed texts (no usable reply): {', '.join(s['failed'])}")
    if s["file"]:
        lines.append(
            f"Translated file: {s['file']}" if s["mode"] == "translate" else f"New file: {s['file']}"
        )
    return lines


register_source(ScaleFileTexts())

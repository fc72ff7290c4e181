"""``llmpsych scales translate``: translate (or paraphrase) a scale file through a model, back-translated.

The work is a small run-engine task (``translate``): one unit per text of the file (each item, the
title, the instructions, the system prompt, each response label), so the run store, cache, resume,
progress bar and failure summary are the engine's. A unit asks the ``subject`` model for the
translation, then asks the ``back`` model (or the same model) to translate it back, and scores the
agreement of the back-translation with the source (:func:`agreement`). In paraphrase mode a unit asks
for ``N`` new wordings of an item in the same language, one after another, each different from the
source and the earlier ones.

Model replies are hostile input; :func:`clean_reply` states the rule. A reply that stays unusable is
re-asked in the same conversation (at most ``max_reasks`` times); a unit without a usable reply fails,
naming the text, and the command exits 1. The translated file is written only when every unit is done.

EmotionBench situations files (``llmpsych emotionbench translate``) go through the same task: one unit
per situation, and the new file keeps the situations file's JSON shape.

GAMA-Bench's built-in prompt templates (``llmpsych gamabench translate``) too: one unit per user turn of
each game's templates (the texts ``gamabench rephrase`` rewrites; the player's own answer turn is kept), a
reply that breaks a ``!<INPUT k>!`` placeholder or adds template syntax is re-asked, and the new texts are
written as a template set (``template_set.json``) that a run names with ``-O template_set=FOLDER#1``.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar, Protocol, cast

import pandas as pd
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ..errors import ConfigError, DataError, LlmpsychError
from ..models.chat_context import ChatContext
from ..models.types import GenerationParams, Message
from ..report.files import atomic_write_text
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.languages import language_name
from ..runs.optionfields import names_or_all, no_flag
from ..runs.record import RunRecord
from ..runs.scores import ScoreTable
from ..runs.task import Task, WorkUnit
from ..userfiles import parse_json
from .native import (
    MAX_SCALE_FILE_BYTES,
    ScaleFile,
    StoredText,
    load_scale_text,
    read_text_file,
    sha256_text,
    translation_to_native,
    write_scale_file,
)
from .scale import Item, NormGroup, Scale, Subscale, Translation

#: How agreement is measured (recorded in the translated file and the report).
MEASURE = "character 3-gram Dice similarity of casefolded, NFKC-normalised text without punctuation (0-1)"

#: The role that back-translates when ``--back-model`` is given (otherwise the subject does).
BACK_ROLE = "back"
#: A cleaned reply longer than this many times the source (plus :data:`LENGTH_SLACK` characters) is invalid.
LENGTH_FACTOR = 4
LENGTH_SLACK = 40

_KINDS = {
    "title": "title",
    "instructions": "instructions",
    "system_prompt": "system prompt",
    "label": "answer-option label",
    "item": "statement",
    "situation": "situation (a scenario the respondent imagines being in)",
    "template": "game prompt passage",
}

#: The pseudo-scale name of a situations file's units.
SITUATIONS = "situations"
#: What a template-set translation records as its source file; the built-in templates are in English.
GAME_TEMPLATES = "gamabench built-in templates"
GAME_TEMPLATES_LANGUAGE = "en"
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
#: Placeholders a translation must keep exactly: ``{name}``/``{}`` fields and the game templates'
#: ``!<INPUT k>!`` inputs and ``<part>///</part>`` turn separators.
_PLACEHOLDERS = re.compile(r"!<INPUT \d+>!|<part>///</part>|\{[A-Za-z0-9_]*\}")


# -- pure cores ---------------------------------------------------------------------------------------------
def clean_reply(reply: str, source: str, *, paragraphs: bool = False) -> tuple[str | None, str | None]:
    """The usable text of a model reply, or ``(None, reason)``.

    The rule, in order: drop code-fence lines and blank lines; drop leading lines that end with ``:``
    (a preface such as "Here is the translation:") when more lines follow; when the source is one line,
    keep only the first remaining line; strip a leading list marker (``1.``, ``2)``, ``-``, ``*``, ``•``)
    and one pair of enclosing quotes when the source has none. The result is invalid when empty, or
    longer than ``4 x`` the source's length plus 40 characters, or when its placeholders (``{name}``,
    ``{}``, ``!<INPUT k>!``, ``<part>///</part>``) differ from the source's.

    With ``paragraphs`` (game templates), blank lines between paragraphs are kept (a run of them as one).
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
    expected, found = Counter(_PLACEHOLDERS.findall(source)), Counter(_PLACEHOLDERS.findall(text))
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


# -- the texts research packages register -------------------------------------------------------------------
class SituationTexts(Protocol):
    """How a benchmark's situations file (its JSON form) is cut into texts and written back translated."""

    def texts(self, data: Any, origin: str) -> list[tuple[str, str]]:
        """``(key, text)`` of every situation (``Anger-1/s03``), read by the benchmark's own loader."""
        ...

    def translated(self, data: Any, done: Mapping[str, tuple[str | None, str]]) -> dict[str, Any]:
        """``data`` with each situation whose key is in ``done`` replaced by its translation and the
        back-translations recorded beside the texts (``done``: key -> (translation, back-translation))."""
        ...


class TemplateTexts(Protocol):
    """A benchmark's built-in prompt templates: their names, texts, turn separator and checks."""

    #: the separator between the turns of one template (the odd turns are the player's own answer)
    part: str
    #: the file name and ``format`` of a template set the benchmark reads back
    set_file: str
    set_format: str

    def names(self) -> list[str]:
        """The names whose templates there are (in registration order)."""
        ...

    def builtin(self, name: str) -> dict[str, str]:
        """Kind -> template text of ``name``."""
        ...

    def check_turn(self, original: str, candidate: str) -> str | None:
        """Why ``candidate`` cannot replace the user turn ``original`` (None: it can)."""
        ...

    def check_template(self, original: str, candidate: str) -> str | None:
        """Why the whole template ``candidate`` cannot replace ``original`` (None: it can)."""
        ...


#: the kinds of texts besides scale files, each registered by the research package that owns them
SITUATION_TEXTS = "situations"
TEMPLATE_TEXTS = "game templates"

#: kind -> its kit, or ``"module:attribute"`` imported the first time the kind is translated (as tasks
#: are, :data:`~llmpsych.runs.task.TASKS`), so a stored run resumes without its package imported first.
_TEXTS: dict[str, object] = {
    SITUATION_TEXTS: "llmpsych.emotion.translation:SITUATION_TEXTS",
    TEMPLATE_TEXTS: "llmpsych.games.translation:TEMPLATE_TEXTS",
}


def register_texts(kind: str, kit: SituationTexts | TemplateTexts | str) -> None:
    """Make ``translate`` read texts of ``kind`` with ``kit`` (or ``"module:attribute"``, imported lazily)."""
    _TEXTS[kind] = kit


def _kit(kind: str) -> object:
    try:
        kit = _TEXTS[kind]
    except KeyError:
        raise ConfigError(f"no texts of kind {kind!r} are registered for translation") from None
    if isinstance(kit, str):
        module, _, attribute = kit.partition(":")
        kit = _TEXTS[kind] = getattr(importlib.import_module(module), attribute)
    return kit


def situation_texts() -> SituationTexts:
    """The registered situations kit."""
    return cast(SituationTexts, _kit(SITUATION_TEXTS))


def template_texts() -> TemplateTexts:
    """The registered game templates kit."""
    return cast(TemplateTexts, _kit(TEMPLATE_TEXTS))


class SituationsSource(StoredText):
    """An EmotionBench situations file (the JSON form) as the run config stores it; a path is read once."""

    what: ClassVar[str] = "situations file"

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if isinstance(value, str | Path):
            file = Path(value)
            if file.suffix.lower() != ".json":
                raise DataError(f"{file}: only the JSON form of a situations file translates", "convert it")
            path, sha256, text = read_text_file(file, cls.what, MAX_SCALE_FILE_BYTES)
            return {"path": path, "sha256": sha256, "content": text}
        return value

    def check(self) -> None:
        self.situations()

    def data(self) -> Any:
        """The parsed JSON."""
        return parse_json(self.content, self.path)

    def situations(self) -> list[tuple[str, str]]:
        """``(key, text)`` of every situation (``Anger-1/s03``), read by the registered loader."""
        return situation_texts().texts(self.data(), self.path)

    def language(self) -> str | None:
        """The file's ``language`` field, if it has one (a translated file does)."""
        value = self.data().get("language")
        return value if isinstance(value, str) and value.strip() else None


class GameTemplatesSource(BaseModel):
    """The built-in prompt templates of the chosen games (game -> kind -> text, in the official
    ``!<INPUT k>!`` mechanics) as the run config stores them; given as game names or ``"all"``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = GAME_TEMPLATES
    sha256: str
    templates: dict[str, dict[str, str]]

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if not isinstance(value, str | list):
            return value
        kit = template_texts()
        known = kit.names()
        names = known if value == "all" else value
        if isinstance(names, str) or not names:
            raise ConfigError(f"game templates: give game names or 'all', not {value!r}")
        for game in names:
            if not isinstance(game, str) or game not in known:
                raise ConfigError(f"unknown game {game!r} (games: {', '.join(known)})")
        templates = {game: kit.builtin(game) for game in dict.fromkeys(names)}
        return {"sha256": _templates_sha256(templates), "templates": templates}

    @model_validator(mode="after")
    def _intact(self) -> GameTemplatesSource:
        if _templates_sha256(self.templates) != self.sha256:
            raise ConfigError("the stored game templates do not match their sha256")
        return self

    def texts(self) -> list[tuple[str, str, str]]:
        """``(game, key, text)`` of every user turn: key ``request``, or ``report turn 3`` for a turn of
        a template with several (the odd turns, the player's own answer, are kept as they are)."""
        part = template_texts().part
        out = []
        for game, kinds in self.templates.items():
            for kind, text in kinds.items():
                turns = text.split(part)
                for t, turn in enumerate(turns):
                    if t % 2 == 0:
                        out.append((game, kind if len(turns) == 1 else f"{kind} turn {t + 1}", turn.strip()))
        return out


def _templates_sha256(templates: dict[str, dict[str, str]]) -> str:
    return sha256_text(json.dumps(templates, sort_keys=True, ensure_ascii=False))


class TranslateOptions(BaseModel):
    """What to translate, into what, and how hard to insist on a usable reply."""

    model_config = ConfigDict(extra="forbid")

    # the file is the FILE argument of `scales translate` / `emotionbench translate` (no flag of its own)
    scale_file: ScaleFile | None = Field(
        default=None, description="a scale file to translate", json_schema_extra=no_flag()
    )
    situations_file: SituationsSource | None = Field(
        default=None,
        description="an EmotionBench situations file (JSON) to translate instead",
        json_schema_extra=no_flag(),
    )
    game_templates: Annotated[GameTemplatesSource | None, BeforeValidator(names_or_all)] = Field(
        default=None,
        description="GAMA-Bench games whose built-in prompt templates to translate (a list or "
        "comma-separated), or all (`gamabench translate`: all unless given)",
    )
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
        """Exactly one of ``to`` and ``paraphrase``; a translation needs each scale's source language.

        Raised as :class:`ConfigError` (not wrapped by pydantic) so the line reads as written."""
        given = [s for s in (self.scale_file, self.situations_file, self.game_templates) if s is not None]
        if len(given) != 1:
            raise ConfigError("give one of a scale file, a situations file or game templates to translate")
        if self.name_suffix and self.scale_file is None:  # a flag of every translate command: never ignored
            raise ConfigError("--name-suffix renames the scales of a scale file: it takes a scale file")
        if self.game_templates is not None:
            if self.paraphrase:
                raise ConfigError("--paraphrase writes item versions: it takes a scale file")
            if not (self.to and self.to.strip()):
                raise ConfigError("give a target language (--to LANGUAGE)")
            return self
        if self.situations_file is not None:
            if self.paraphrase:
                raise ConfigError("--paraphrase writes item versions: it takes a scale file")
            if not (self.to and self.to.strip()):
                raise ConfigError("give a target language (--to LANGUAGE)")
            if not (self.source_language or self.situations_file.language()):
                raise ConfigError(
                    f"{self.situations_file.path}: the situations file names no language",
                    "give the source language with --source-language (e.g. --source-language en)",
                )
            return self
        assert self.scale_file is not None
        if self.paraphrase and self.to is not None:
            raise ConfigError("give either a target language (--to) or --paraphrase N, not both")
        if not self.paraphrase and not (self.to and self.to.strip()):
            raise ConfigError("give a target language (--to LANGUAGE), or --paraphrase N")
        if not self.paraphrase:
            for scale in self.scale_file.scales():
                if not (self.source_language or scale.language):
                    raise ConfigError(
                        f"{self.scale_file.path}: scale {scale.name!r} names no language",
                        "give the source language with --source-language (e.g. --source-language en), or add "
                        "language: to the file",
                    )
        return self

    @property
    def source(self) -> ScaleFile | SituationsSource | GameTemplatesSource:
        """The file (or the game templates) to translate."""
        source = self.scale_file or self.situations_file or self.game_templates
        assert source is not None  # checked by _mode
        return source


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
    """Translate the texts of a scale file or an EmotionBench situations file (or paraphrase a scale's
    items), one unit per text."""

    name = "translate"
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

    def data_files(self) -> list[Path]:
        if self.options.game_templates is not None:
            return []  # the templates are in the package and stored in the run config
        path = Path(self.options.source.path)
        return [path] if path.is_file() else []

    def calls_per_unit(self) -> float | None:
        return float(self.options.paraphrase or 2)

    def source_language(self, scale: Scale | None) -> str | None:
        """The language the source texts are in (``--source-language`` wins over the file)."""
        if self.options.source_language:
            return self.options.source_language
        if scale is not None:
            return scale.language
        if self.options.game_templates is not None:
            return GAME_TEMPLATES_LANGUAGE
        return self._situations_language

    @cached_property
    def _situations_language(self) -> str | None:
        return self.options.situations_file.language() if self.options.situations_file else None

    def scales(self) -> list[Scale]:
        """The source file's scales (none for a situations file), parsed once per task."""
        return self._scales

    @cached_property
    def _scales(self) -> list[Scale]:
        return self.options.scale_file.scales() if self.options.scale_file else []

    def units(self) -> list[WorkUnit]:
        if self.options.situations_file is not None:
            return [
                WorkUnit(
                    f"{SITUATIONS}/{key}",
                    {"scale": SITUATIONS, "key": key, "kind": "situation", "text": text},
                )
                for key, text in self.options.situations_file.situations()
            ]
        if self.options.game_templates is not None:
            return [
                WorkUnit(
                    f"{game}/{key.replace(' ', '-')}",
                    {"scale": game, "key": key, "kind": "template", "text": text},
                )
                for game, key, text in self.options.game_templates.texts()
            ]
        units = []
        for scale in self.scales():
            for key, kind, text in scale_texts(scale, items_only=bool(self.options.paraphrase)):
                payload = {"scale": scale.name, "key": key, "kind": kind, "text": text}
                units.append(WorkUnit(f"{scale.name}/{key.replace(' ', '-')}", payload))
        return units

    def _params(self) -> GenerationParams:
        return GenerationParams(max_tokens=self.options.max_tokens)  # a default: the user's wins

    async def _ask(
        self,
        ctx: ChatContext,
        messages: list[Message],
        source: str,
        role: str,
        check: Any = None,
        *,
        paragraphs: bool = False,
    ) -> tuple[str, int, list[str]]:
        """A usable reply to ``messages`` (re-asked in the conversation), its number of asks and the
        rejected replies' reasons; :class:`TranslationFailed` when none is usable."""
        rejected: list[str] = []
        for attempt in range(self.options.max_reasks + 1):
            result = await ctx.chat(messages, self._params(), role=role)
            text, reason = clean_reply(result.text, source, paragraphs=paragraphs)
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
        scale = next((s for s in self.scales() if s.name == p["scale"]), None)
        what = _KINDS[p["kind"]]
        if self.options.paraphrase:
            return await self._paraphrase(ctx, p, scale, what)
        source_lang = language_name(self.source_language(scale) or "")
        target = language_name(self.options.to or "")
        game = p["kind"] == "template"
        prompt = _template_prompt if game else _translate_prompt
        system: Message = {"role": "system", "content": GAME_SYSTEM_PROMPT if game else SYSTEM_PROMPT}
        ask = [system, {"role": "user", "content": prompt(what, source_lang, target, p["text"])}]
        check = _template_check(game, p["text"])
        text, asks, rejected = await self._ask(ctx, ask, p["text"], "subject", check, paragraphs=game)
        role = BACK_ROLE if BACK_ROLE in ctx.clients else "subject"
        back_ask = [system, {"role": "user", "content": prompt(what, target, source_lang, text)}]
        check = _template_check(game, text)
        back, back_asks, back_rejected = await self._ask(ctx, back_ask, text, role, check, paragraphs=game)
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

    async def _paraphrase(self, ctx: ChatContext, p: dict[str, Any], scale: Scale | None, what: str) -> Any:
        assert scale is not None  # paraphrases take a scale file
        language = language_name(scale.language or self.options.source_language or "the same language")
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


GAME_SYSTEM_PROMPT = (
    "You translate the instructions of economic games played by several players. Keep each text's meaning, "
    "every rule and every number, keep every marker such as !<INPUT 3>! exactly as written, and reply with "
    "the requested text only."
)


def _template_prompt(what: str, source: str, target: str, text: str) -> str:
    origin = f" from {source}" if source else ""
    return (
        f"Translate this {what}{origin} into {target}. Markers such as !<INPUT 3>! are filled in later: copy "
        f"each exactly as written and add none. Reply with the translation only.\n\n{text}"
    )


def _template_check(game: bool, source: str) -> Callable[[str], str | None] | None:
    """For a game template turn: the rephrasing rule (no placeholder lost or added, no added syntax)."""
    if not game:
        return None
    kit = template_texts()
    return lambda text: kit.check_turn(source, text)


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


def translated_situations(
    task: TranslateTask, results: dict[str, TextResult], model: str, back_model: str | None
) -> dict[str, Any]:
    """The situations file with each situation translated, each factor's ``back_translations`` (in the
    order of its ``scenarios``), and ``language``, ``translated_from`` and ``translation`` at the top;
    EmotionBench reads it like the source (it ignores the added fields)."""
    assert task.options.situations_file is not None
    done = {k: (r.text, r.back_translation or "") for k, r in results.items()}
    data = situation_texts().translated(task.options.situations_file.data(), done)
    return {
        "language": task.options.to,
        "translated_from": task.source_language(None),
        "translation": translation_to_native(translation_record(task, model, back_model)),
        **{k: v for k, v in data.items() if k not in ("language", "translated_from", "translation")},
    }


def translated_template_set(
    task: TranslateTask, results: dict[tuple[str, str], TextResult], model: str, back_model: str | None
) -> dict[str, Any]:
    """The translated game templates as a template set (the format ``-O template_set=DIR#1`` reads):
    one version, ``language``, ``translated_from`` and the translation record with every turn's
    back-translation. Each new template is checked against its source as a run would check it."""
    kit = template_texts()
    source = task.options.game_templates
    assert source is not None
    templates: dict[str, dict[str, str]] = {}
    for game, kinds in source.templates.items():
        for kind, text in kinds.items():
            turns = text.split(kit.part)
            new = [
                str(results[(game, kind if len(turns) == 1 else f"{kind} turn {t + 1}")].text)
                if t % 2 == 0
                else turn.strip()
                for t, turn in enumerate(turns)
            ]
            candidate = f"\n{kit.part}\n".join(new)
            reason = kit.check_template(text, candidate)
            if reason:  # each turn passed the same check when it was accepted
                raise DataError(f"translated template {game} {kind}: {reason}")
            templates.setdefault(game, {})[kind] = candidate
    back = {f"{game}/{key}": str(r.back_translation) for (game, key), r in results.items()}
    record = Translation(
        **{**translation_record(task, model, back_model).__dict__, "back_translations": back}
    )
    return {
        "format": kit.set_format,
        "model": model,
        "source": "built-in templates",
        "language": task.options.to,
        "translated_from": task.source_language(None),
        "translation": translation_to_native(record),
        "request": {
            "system": GAME_SYSTEM_PROMPT,
            "user": _template_prompt(_KINDS["template"], "SOURCE", "TARGET", "TEXT"),
            "max_reasks": task.options.max_reasks,
        },
        "versions": {"1": templates},
        "failed": [],
    }


def translated_scale(
    scale: Scale, results: dict[str, TextResult], task: TranslateTask, model: str, back_model: str | None
) -> Scale:
    """``scale`` with its texts replaced by the translations (or its items given the new versions),
    norms marked with the language of the population they come from, and the translation recorded."""
    o = task.options
    record = translation_record(task, model, back_model)
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
    from_language = task.source_language(scale)
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
    """Write the agreement table and report, and (when every text is done) the new scale file."""
    o, run_dir = task.options, record.run_dir
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
    source_path = Path(o.source.path)
    out_file: Path | None = None
    scales = task.scales()
    if not failed and len(done) == len(record.units) and o.game_templates is not None:
        out_file = run_dir / template_texts().set_file
        text = json.dumps(
            translated_template_set(task, done, model, back_model), indent=1, ensure_ascii=False
        )
        atomic_write_text(out_file, text + "\n")
        written.append(out_file)
    elif not failed and len(done) == len(record.units) and o.situations_file is not None:
        out_file = run_dir / output_name(source_path, o)
        situations = {k: r for (_, k), r in done.items()}
        text = json.dumps(
            translated_situations(task, situations, model, back_model), indent=1, ensure_ascii=False
        )
        atomic_write_text(out_file, text + "\n")
        written.append(out_file)
    elif not failed and len(done) == len(record.units):
        new = [
            translated_scale(
                s, {k: r for (name, k), r in done.items() if name == s.name}, task, model, back_model
            )
            for s in scales
        ]
        out_file = write_scale_file(new, run_dir / output_name(source_path, o))
        load_scale_text(out_file.read_text(encoding="utf-8"), origin=str(out_file), suffix=out_file.suffix)
        written.append(out_file)
    summary = {
        "mode": "paraphrase" if o.paraphrase else "translate",
        "to": o.to,
        "texts": len(record.units),
        "done": len(done),
        "failed": failed,
        "file": None if out_file is None else str(out_file),
        f"mean_{score}": None if frame.empty else float(frame[score].mean()),
        f"min_{score}": None if frame.empty else float(frame[score].min()),
        "lowest": [] if frame.empty else _names(frame.nsmallest(o.lowest, score), bool(o.game_templates)),
        "measure": MEASURE,
    }
    atomic_write_text(run_dir / "translation.json", json.dumps(summary, indent=1, ensure_ascii=False))
    written.append(run_dir / "translation.json")
    sections = _sections(task, frame, score, summary, model, back_model, source_path)
    title = (
        "llmpsych game template translation report"
        if o.game_templates
        else "llmpsych scale translation report"
    )
    return written + write_run_report(run_dir, title, sections, tables=[("agreement", frame)])


def _names(rows: pd.DataFrame, games: bool) -> list[str]:
    """How the summary names texts: the key, or ``game/key`` for game templates."""
    return [f"{g}/{k}" if games else str(k) for g, k in zip(rows["scale"], rows["text"], strict=True)]


def _sections(
    task: TranslateTask,
    frame: pd.DataFrame,
    score: str,
    summary: dict[str, Any],
    model: str,
    back_model: str | None,
    source: Path,
) -> list[tuple[str, str]]:
    o = task.options
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
            "not a validation of the translation. "
            + (
                "n = situations."
                if o.situations_file
                else "n = template passages (each user turn of each game's templates; the player's own "
                "answer turn is kept as it is)."
                if o.game_templates
                else "Norms in the new file come from the source-language population (each norm's "
                "`language`). n = texts (items, title, instructions, labels)."
            )
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
        name = Path(str(summary["file"])).name
        checked = (
            "EmotionBench reads it with `--situations`"
            if o.situations_file
            else f"a gamabench run plays it with `-O template_set={Path(str(summary['file'])).parent}#1`"
            if o.game_templates
            else "`llmpsych scales validate` accepts it"
        )
        sections.append(("The new file", f"`{name}` ({checked})."))
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

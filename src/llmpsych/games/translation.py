"""GAMA-Bench's built-in prompt templates as the translation kit translates them (``llmpsych gamabench
translate``): one text per user turn of each chosen game's templates (the texts ``gamabench rephrase``
rewrites; the player's own answer turn is kept), a reply that breaks a ``!<INPUT k>!`` placeholder or adds
template syntax re-asked, and the new texts written as a template set (``template_set.json``) that a run
names with ``-O template_set=FOLDER#1``. Importing this module registers the source with
:mod:`llmpsych.instruments.translate` (:mod:`llmpsych.translate` does, for every run and command); the
games' registry is imported only when templates are read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator

from ..errors import ConfigError, DataError
from ..instruments.native import sha256_text, translation_to_native
from ..instruments.scale import Translation
from ..instruments.translate import (
    PLACEHOLDERS,
    Finished,
    SourceText,
    TranslatableSource,
    register_source,
)
from ..report.files import atomic_write_text
from ..runs.optionfields import names_or_all
from .prompts import PART, TEMPLATE_SET_FILE, TEMPLATE_SET_FORMAT, check_rephrased, check_template

#: What a template-set translation records as its source file; the built-in templates are in English.
GAME_TEMPLATES = "gamabench built-in templates"
GAME_TEMPLATES_LANGUAGE = "en"

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
        from . import registry
        from .template_sets import builtin_templates

        known = registry.names()
        names = known if value == "all" else value
        if isinstance(names, str) or not names:
            raise ConfigError(f"game templates: give game names or 'all', not {value!r}")
        for game in names:
            if not isinstance(game, str) or game not in known:
                raise ConfigError(f"unknown game {game!r} (games: {', '.join(known)})")
        templates = {game: builtin_templates(game) for game in dict.fromkeys(names)}
        return {"sha256": _templates_sha256(templates), "templates": templates}

    @model_validator(mode="after")
    def _intact(self) -> GameTemplatesSource:
        if _templates_sha256(self.templates) != self.sha256:
            raise ConfigError("the stored game templates do not match their sha256")
        return self

    def texts(self) -> list[tuple[str, str, str]]:
        """``(game, key, text)`` of every user turn: key ``request``, or ``report turn 3`` for a turn of
        a template with several (the odd turns, the player's own answer, are kept as they are)."""
        out = []
        for game, kinds in self.templates.items():
            for kind, text in kinds.items():
                turns = text.split(PART)
                for t, turn in enumerate(turns):
                    if t % 2 == 0:
                        out.append((game, kind if len(turns) == 1 else f"{kind} turn {t + 1}", turn.strip()))
        return out


def _templates_sha256(templates: dict[str, dict[str, str]]) -> str:
    return sha256_text(json.dumps(templates, sort_keys=True, ensure_ascii=False))


class TemplateTexts(TranslatableSource[GameTemplatesSource]):
    """The built-in templates of the chosen games (the option ``game_templates``, the flag
    ``--game-templates``): each user turn a text, checked as a run checks a rephrased turn; the new
    templates are written as a template set of one version, each checked as a whole against its source."""

    option = "game_templates"
    value_type = GameTemplatesSource
    what = "game templates"
    description = (
        "GAMA-Bench games whose built-in prompt templates to translate (a list or comma-separated), or all "
        "(`gamabench translate`: all unless given)"
    )
    kinds = {"template": "game prompt passage"}
    flag = True
    system_prompt = GAME_SYSTEM_PROMPT
    paragraphs = True
    placeholders = re.compile(f"{PLACEHOLDERS.pattern}|{re.escape(PART)}")
    report_title = "llmpsych game template translation report"
    counted = (
        "n = template passages (each user turn of each game's templates; the player's own answer turn is "
        "kept as it is)."
    )

    def annotation(self) -> Any:
        return Annotated[GameTemplatesSource | None, BeforeValidator(names_or_all)]

    def texts(self, value: GameTemplatesSource, *, paraphrase: bool) -> list[SourceText]:
        return [SourceText(game, key, "template", text) for game, key, text in value.texts()]

    def language(self, value: GameTemplatesSource, group: str | None) -> str | None:
        return GAME_TEMPLATES_LANGUAGE

    def data_files(self, value: GameTemplatesSource) -> list[Path]:
        return []  # the templates are in the package and stored in the run config

    def prompt(self, what: str, source: str, target: str, text: str) -> str:
        return _template_prompt(what, source, target, text)

    def check(self, original: str, candidate: str) -> str | None:
        return check_rephrased(original, candidate)  # no placeholder lost or added, no added syntax

    def name(self, group: str, key: str) -> str:
        return f"{group}/{key}"

    def reads_it(self, file: Path) -> str:
        return f"a gamabench run plays it with `-O template_set={file.parent}#1`"

    def write(self, value: GameTemplatesSource, done: Finished) -> Path:
        out_file = done.run_dir / TEMPLATE_SET_FILE
        text = json.dumps(translated_template_set(self, value, done), indent=1, ensure_ascii=False)
        atomic_write_text(out_file, text + "\n")
        return out_file


def translated_template_set(
    kit: TemplateTexts, source: GameTemplatesSource, done: Finished
) -> dict[str, Any]:
    """The translated game templates as a template set (the format ``-O template_set=DIR#1`` reads):
    one version, ``language``, ``translated_from`` and the translation record with every turn's
    back-translation. Each new template is checked against its source as a run would check it."""
    results = done.results
    templates: dict[str, dict[str, str]] = {}
    for game, kinds in source.templates.items():
        for kind, text in kinds.items():
            turns = text.split(PART)
            new = [
                str(results[(game, kind if len(turns) == 1 else f"{kind} turn {t + 1}")].text)
                if t % 2 == 0
                else turn.strip()
                for t, turn in enumerate(turns)
            ]
            candidate = f"\n{PART}\n".join(new)
            reason = check_template(text, candidate)
            if reason:  # each turn passed the same check when it was accepted
                raise DataError(f"translated template {game} {kind}: {reason}")
            templates.setdefault(game, {})[kind] = candidate
    back = {f"{game}/{key}": str(r.back_translation) for (game, key), r in results.items()}
    record = Translation(**{**done.record.__dict__, "back_translations": back})

    return {
        "format": TEMPLATE_SET_FORMAT,
        "model": done.record.model,
        "source": "built-in templates",
        "language": done.options.to,
        "translated_from": done.task.source_language(None),
        "translation": translation_to_native(record),
        "request": {
            "system": kit.system_prompt,
            "user": kit.prompt(kit.kinds["template"], "SOURCE", "TARGET", "TEXT"),
            "max_reasks": done.options.max_reasks,
        },
        "versions": {"1": templates},
        "failed": [],
    }


TEMPLATE_TEXTS = TemplateTexts()
register_source(TEMPLATE_TEXTS)

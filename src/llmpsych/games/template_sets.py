"""Template sets: rephrased (or translated) versions of the games' built-in prompt templates, as a run
config names them (``-O template_set=FOLDER#1``), checked against the registered games' built-in
templates. Above the registry (it asks the registered games); the template texts and their checks are in
:mod:`.prompts`, below the games."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from ..errors import ConfigError
from . import registry
from .prompts import (
    TEMPLATE_SET_FILE,
    Builtin,
    PromptSet,
    builtin_template,
    check_template,
    read_template_set,
)


def builtin_templates(game: str) -> dict[str, str]:
    """The built-in templates of a registered game, in the official mechanics (the rephrasing source)."""
    return {kind: builtin_template(spec) for kind, spec in registry.get(game).builtin.items()}


class TemplateSetOption(BaseModel):
    """One version of a rephrased template set, as a run config stores it: given as ``PATH`` or
    ``PATH#VERSION`` (version 1 by default), read once; the texts are checked against each game's
    built-in templates whenever they are read (the file, or a stored run, may have been edited)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    sha256: str
    version: int
    model: str
    templates: dict[str, dict[str, str]]  # game -> kind -> template text
    language: str | None = None  # the set's ``language`` (a translated set names it; None: English)

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if not isinstance(value, str | Path):
            return value
        text = str(value)
        where, _, version = text.rpartition("#") if re.search(r"#\d+$", text) else (text, "", "1")
        data, sha256 = read_template_set(Path(where))
        versions = data.get("versions")
        if not isinstance(versions, dict) or version not in versions:
            have = ", ".join(sorted(versions)) if isinstance(versions, dict) else "none"
            raise ConfigError(f"template set {where} has no version {version} (versions: {have})")
        return {
            "path": str(Path(where).resolve()),
            "sha256": sha256,
            "version": int(version),
            "model": str(data.get("model", "")),
            "templates": versions[version],
            **({"language": data["language"]} if isinstance(data.get("language"), str) else {}),
        }

    @model_validator(mode="after")
    def _safe(self) -> TemplateSetOption:
        for game, kinds in self.templates.items():
            if game not in registry.names():
                raise ConfigError(f"template set {self.path}: unknown game {game!r}")
            originals = builtin_templates(game)
            for kind, text in kinds.items():
                if kind not in originals:
                    raise ConfigError(f"template set {self.path}: {game} has no template {kind!r}")
                reason = check_template(originals[kind], text)
                if reason:
                    raise ConfigError(f"template set {self.path}: {game} {kind} v{self.version}: {reason}")
        return self

    @property
    def label(self) -> str:
        """How results and reports name it: ``set:<folder>-v<version>``."""
        where = Path(self.path)
        return f"set:{(where.parent if where.name == TEMPLATE_SET_FILE else where).name}-v{self.version}"

    def check_games(self, games: list[str]) -> TemplateSetOption:
        """This set, after checking that it holds every template of ``games`` (ConfigError otherwise)."""
        for game in games:
            missing = sorted(set(builtin_templates(game)) - set(self.templates.get(game, {})))
            if missing:
                raise ConfigError(
                    f"template set {self.path} v{self.version} lacks {game}: {', '.join(missing)}",
                    "rephrase that game again (`gamabench rephrase --games ...`), or leave it out of the run",
                )
        return self

    def prompt_set(self, game: str, folder: str, builtin: Mapping[str, Builtin]) -> PromptSet:
        """The game's prompts from this set (persona and CoT sentences stay the built-in ones)."""
        return PromptSet(folder, builtin, "builtin", self.version, texts=self.templates.get(game))

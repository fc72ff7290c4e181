"""New prompt versions of the games, rephrased by a model you choose (spec §4.5): the ``gamabench-rephrase``
task and the template set it writes.

The thesis's V2-V5 are GPT-4 rewrites of each game's V1 template, checked by hand. Here the source is each
game's built-in template (our wording); a model rewrites every user turn of it, one request per turn and
version (the player's own answer turn, canonical JSON, is kept). A rewrite is model output and so hostile:
it is accepted only when every ``!<INPUT k>!`` placeholder survives, none is added and no template syntax
appears that the original lacks (:func:`~llmpsych.games.prompts.check_rephrased`). A refused rewrite is
asked again with the reason, at most ``max_reasks`` times; then that template fails and its game is left
out of that version.

It runs through the run engine (every request stored, an interrupted run resumed), and its analysis writes
``template_set.json`` (:data:`~llmpsych.games.prompts.TEMPLATE_SET_FORMAT`: the model, the request, the
versions) and ``report.md`` into the run folder. A gamabench run names the set with
``-O template_set=FOLDER`` (version 1) or ``FOLDER#K``; its stored config then holds the texts.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError
from ..models.chat_context import ChatContext
from ..models.types import GenerationParams, Message
from ..report.files import atomic_write_text
from ..report.markdown import table, write_report
from ..runs.optionfields import NamesOrAll
from ..runs.params import merge_params
from ..runs.record import RunRecord
from ..runs.task import Task, WorkUnit
from . import registry
from .parsing import JSON_SCAN_CHARS, json_objects
from .prompts import PART, TEMPLATE_SET_FILE, TEMPLATE_SET_FORMAT, check_rephrased
from .template_sets import builtin_templates

#: The rephrasing request (our wording; the authors' meta-prompt is described in spec §4.5).
SYSTEM = "You rewrite passages of text in other words without changing what they say."
REQUEST = """Rewrite the passage between the two lines of dashes in your own words. Keep its meaning, \
every rule and every number, and keep it about as long.

Markers such as !<INPUT 3>! are filled in with values later. Copy each of them exactly as it is written, \
and do not add any marker, curly brace or other template syntax that the passage does not already have.

Reply with one JSON object and nothing else: {"text": "the rewritten passage"}

----------
PASSAGE
----------"""
FEEDBACK = (
    "That rewrite cannot be used: {reason}. Rewrite the passage again, following the rules, and reply with "
    "the JSON object only."
)


class RephraseOptions(BaseModel):
    """Options of the ``gamabench-rephrase`` task."""

    model_config = ConfigDict(extra="forbid")

    games: NamesOrAll = Field(
        default="all", description="games whose templates to rephrase (a list or comma-separated), or all"
    )
    versions: int = Field(default=4, ge=1, le=50, description="new versions of every template")
    max_reasks: int = Field(
        default=3,
        ge=0,
        le=20,
        description="times a rewrite that breaks a placeholder or the rules is asked again",
    )
    max_tokens: int = Field(default=2048, ge=1, description="answer limit of a rewrite")

    @field_validator("games")
    @classmethod
    def _known(cls, value: list[str] | str) -> list[str] | str:
        for game in [] if value == "all" else value:
            if game not in registry.names():
                raise ValueError(f"unknown game {game!r} (games: {', '.join(registry.names())})")
        return value

    def game_names(self) -> list[str]:
        """The selected games."""
        return registry.names() if self.games == "all" else list(self.games)


def read_rewrite(text: str) -> str | None:
    """The ``text`` string of the last JSON object in a reply that has one (None: there is none)."""
    found = [o["text"] for o in json_objects(text[-JSON_SCAN_CHARS:]) if isinstance(o.get("text"), str)]
    return found[-1] if found else None


class RephraseFailure(BaseModel):
    """A template turn no accepted rewrite was found for: the last reason and the asks made."""

    kind: str
    turn: int
    reason: str
    asks: int


class RephraseResult(BaseModel):
    """One game's templates rewritten for one version (``templates`` holds only complete ones)."""

    game: str
    version: int
    templates: dict[str, str] = Field(default_factory=dict)
    failures: list[RephraseFailure] = Field(default_factory=list)
    asks: int = 0


class RephraseTask(Task[RephraseOptions]):
    """Rephrase each game's templates into new versions with the run's model."""

    name = "gamabench-rephrase"
    Options = RephraseOptions
    Result = RephraseResult
    score_tables = ()  # it writes prompt templates, not scores
    options: RephraseOptions

    def units(self) -> list[WorkUnit]:
        return [
            WorkUnit(f"{game}-v{version}", {"game": game, "version": version})
            for game in self.options.game_names()
            for version in range(1, self.options.versions + 1)
        ]

    def calls_per_unit(self) -> float | None:
        return 5.0

    def _params(self) -> GenerationParams:
        # defaults (the user's --temperature wins): temperature 1, so that the versions differ
        return GenerationParams(max_tokens=self.options.max_tokens, temperature=1.0)

    async def rephrase(self, passage: str, version: int, label: str, ctx: ChatContext) -> dict[str, Any]:
        """One turn rewritten (``text``), or the last reason it was refused (``error``); ``asks`` made."""
        messages: list[Message] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": REQUEST.replace("PASSAGE", passage.strip())},
        ]
        reason = ""
        for attempt in range(self.options.max_reasks + 1):
            # the version is part of the sample index: identical requests of two versions stay two samples
            result = await ctx.chat(messages, self._params(), sample=f"{label}:v{version}:{attempt}")
            candidate = read_rewrite(result.text)
            if candidate is None:
                reason = 'the reply holds no JSON object with a "text" string'
            else:
                candidate = candidate.strip()
                reason = check_rephrased(passage, candidate) or ""
                if not reason:
                    return {"text": candidate, "asks": attempt + 1}
            messages = [
                *messages,
                {"role": "assistant", "content": result.text},
                {"role": "user", "content": FEEDBACK.format(reason=reason)},
            ]
        return {"error": reason, "asks": self.options.max_reasks + 1}

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        game, version = unit.payload["game"], unit.payload["version"]
        jobs: list[tuple[str, int, str]] = []
        sources = builtin_templates(game)
        for kind, text in sources.items():
            for turn, passage in enumerate(text.split(PART)):
                if turn % 2 == 0:  # odd turns are the player's own answer: kept
                    jobs.append((kind, turn, passage))
        answers = await asyncio.gather(
            *(self.rephrase(passage, version, f"{kind}.{turn}", ctx) for kind, turn, passage in jobs)
        )
        done = {(kind, turn): a for (kind, turn, _), a in zip(jobs, answers, strict=True)}
        templates: dict[str, str] = {}
        failures = []
        for kind, text in sources.items():
            turns = text.split(PART)
            new = [done[(kind, t)] if t % 2 == 0 else {"text": p.strip()} for t, p in enumerate(turns)]
            errors = [(t, a) for t, a in enumerate(new) if "text" not in a]
            for t, a in errors:
                failures.append({"kind": kind, "turn": t + 1, "reason": a["error"], "asks": a["asks"]})
            if not errors:
                templates[kind] = f"\n{PART}\n".join(a["text"] for a in new)
        return {
            "game": game,
            "version": version,
            "templates": templates,
            "failures": failures,
            "asks": sum(a["asks"] for a in answers),
        }

    def sent_params(self, record: RunRecord) -> GenerationParams:
        """What each request of the run sent: this task's defaults merged with the run's and the role's."""
        role = record.config.roles()["subject"].params
        return merge_params(self._params(), record.config.params, role)

    def template_set(self, record: RunRecord) -> dict[str, Any]:
        """The template set of a finished (or partly finished) run: only complete games per version."""
        versions: dict[str, dict[str, dict[str, str]]] = {}
        failed = []
        for _, result in record.results(RephraseResult):
            game, version = result.game, str(result.version)
            if result.failures:
                failed += [
                    {"game": game, "version": result.version, **f.model_dump()} for f in result.failures
                ]
            else:
                versions.setdefault(version, {})[game] = result.templates
        return {
            "format": TEMPLATE_SET_FORMAT,
            "model": self.config.model,
            "source": "built-in templates",
            "request": {
                "system": SYSTEM,
                "user": REQUEST,
                "feedback": FEEDBACK,
                "params": self.sent_params(record).model_dump(mode="json", exclude_none=True),
                "max_reasks": self.options.max_reasks,
            },
            "versions": {k: versions[k] for k in sorted(versions, key=int)},
            "failed": failed,
        }

    def analyze(self, record: RunRecord) -> list[Path]:
        data = self.template_set(record)
        if not data["versions"] and not data["failed"]:
            raise ConfigError(f"{record.run_dir}: no finished rephrasing to write a template set from")
        path = record.run_dir / TEMPLATE_SET_FILE
        atomic_write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        rows = [
            {"version": int(v), "games": ", ".join(sorted(games))} for v, games in data["versions"].items()
        ]
        sections = [
            (
                "Template set",
                f"Rephrased by `{self.config.model}` from the built-in templates; "
                f"use it with `-O template_set={record.run_dir}#K`.",
            ),
            ("Complete games per version", table(pd.DataFrame(rows, columns=["version", "games"]))),
        ]
        if data["failed"]:
            sections.append(("Refused after every re-ask", table(pd.DataFrame(data["failed"]))))
        return [path, write_report(record.run_dir / "report.md", "GAMA-Bench rephrased templates", sections)]

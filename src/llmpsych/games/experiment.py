"""The session config of an experiment with people (``llmpsych gamabench host --session FILE``).

A TOML or YAML file (read by :func:`llmpsych.runs.config.read_config_file`: size capped, nesting and
aliases bounded) declaring what a participant goes through, in order: consent (they must agree), the
instructions (default: the game's text for people, stating the stakes), an optional comprehension quiz
(every answer right to continue; each attempt counted), the game itself, an optional questionnaire (any
scale file llmpsych can administer, so people and models answer the same instrument) and a debrief with
the payment and the completion code for the panel provider. Validated here by pydantic; a bad file is
one line naming the field (``session file s.toml: quiz.0.answer: ...``).

Example (``session.toml``)::

    [game]
    game = "guessing"
    players = 4
    rounds = 3
    seats = ["web", "web", "llm", "llm"]
    tables = 2                      # the game is played at 2 tables; arrivals fill them in turn

    [consent]
    text = "This study is run by ... You may stop at any time."

    [[quiz]]
    question = "How many rounds will you play?"
    choices = ["1", "3", "10"]
    answer = "3"

    [questionnaire]
    scale_file = "wellbeing.yaml"   # relative to this file

    [payment]
    currency = "EUR"
    per_point = 0.10
    fee = 2.50

    debrief = "Thank you. The study looked at ..."
    completion_url = "https://app.example.org/complete?cc={code}"
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError

#: Longest text a page of the session shows (consent, instructions, debrief): ~10 printed pages.
MAX_TEXT = 20_000
#: Most tables one session seats.
MAX_TABLES = 50
#: The characters a participant label may hold (panel providers' ids are letters, digits, - and _).
LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
MAX_LABEL = 64


def label_problem(label: str) -> str | None:
    """Why ``label`` cannot name a participant (None: it can)."""
    if not label:
        return "a participant label cannot be empty"
    if len(label) > MAX_LABEL:
        return f"a participant label has at most {MAX_LABEL} characters"
    if not set(label) <= LABEL_CHARS:
        return "a participant label holds letters, digits, '-', '_' and '.' only"
    return None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GamePart(_Strict):
    """The game and its tables: the options of ``gamabench host`` (``seats`` as ``-O seats=``)."""

    game: str | list[str] = "guessing"
    #: who sits where (``web`` seats are the participants'), as ``-O seats=``; required: the
    #: instructions tell participants who the others are
    players: int = Field(default=5, ge=2, le=20)
    rounds: int = Field(default=5, ge=1, le=1000)
    seats: list[str] = Field(min_length=2, max_length=20)
    tables: int = Field(default=1, ge=1, le=MAX_TABLES)
    #: seconds a participant has per decision (0: none)
    deadline: float = Field(default=120.0, ge=0)


class Consent(_Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    agree: str = Field(default="I have read the above and agree to take part.", min_length=1, max_length=500)


class QuizQuestion(_Strict):
    question: str = Field(min_length=1, max_length=2000)
    #: the answers offered (radio buttons); none: the participant types the answer
    choices: list[str] = Field(default_factory=list, max_length=20)
    answer: str = Field(min_length=1, max_length=200)

    @model_validator(mode="after")
    def _answer_offered(self) -> QuizQuestion:
        if self.choices and self.answer not in self.choices:
            raise ValueError(f"the correct answer {self.answer!r} is not one of the choices")
        return self

    def right(self, given: str) -> bool:
        """Whether ``given`` is the correct answer (typed answers: spaces and case ignored)."""
        if self.choices:
            return given == self.answer
        return " ".join(given.split()).casefold() == " ".join(self.answer.split()).casefold()


class Questionnaire(_Strict):
    """A scale to answer after the game: a scale file (relative to the session file) or an official
    PsychoBench scale by name (read from the data folder)."""

    scale_file: str | None = None
    scale: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Questionnaire:
        if (self.scale_file is None) == (self.scale is None):
            raise ValueError("give one of scale_file or scale")
        return self


class Payment(_Strict):
    """Points to money: ``per_point`` per game point plus ``fee`` for taking part (after consent)."""

    currency: str = Field(default="EUR", min_length=1, max_length=10)
    per_point: float = Field(default=0.0, ge=0, le=1e6)
    fee: float = Field(default=0.0, ge=0, le=1e6)
    #: the seats.csv column paid as points (default: "total gain" where the game has it, else "rounds won")
    points: str | None = None


class SessionConfig(_Strict):
    """A whole session (see the module's docstring)."""

    game: GamePart
    consent: Consent | None = None
    #: what a participant reads before the game (default: the game's text for people)
    instructions: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    quiz: list[QuizQuestion] = Field(default_factory=list, max_length=50)
    questionnaire: Questionnaire | None = None
    payment: Payment = Field(default_factory=lambda: Payment())
    debrief: str = Field(default="Thank you for taking part.", min_length=1, max_length=MAX_TEXT)
    #: the participant labels the room admits (none: any label the link gives, else one is numbered)
    labels: list[str] | None = Field(default=None, max_length=10_000)
    #: the code a participant gets at the end for the panel provider (default: a random one)
    completion_code: str | None = Field(default=None, min_length=1, max_length=64)
    #: a link shown at the end, ``{code}`` and ``{label}`` filled in (e.g. the panel's completion page)
    completion_url: str | None = Field(default=None, max_length=2000)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        for label in value:
            problem = label_problem(label)
            if problem is not None:
                raise ValueError(f"{label[:40]!r}: {problem}")
        if len(set(value)) != len(value):
            raise ValueError("a label is listed twice")
        return value

    @field_validator("completion_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError("the completion link must start with https:// or http://")
        return value

    def code(self) -> str:
        """The completion code given (or a new random one: the session stores it once)."""
        return self.completion_code or secrets.token_hex(4).upper()

    def options(self) -> dict[str, Any]:
        """The GAMA-Bench task options of the game part (``runs``: one per table)."""
        g = self.game
        return {"game": g.game, "players": g.players, "rounds": g.rounds, "runs": g.tables, "seats": g.seats}


def load_session_config(path: Path) -> tuple[SessionConfig, dict[str, Any]]:
    """The session file at ``path``, validated, and its data with the questionnaire's scale file made
    absolute (the session keeps that data, so a resumed host needs no file); one ConfigError line when
    it is not a valid session."""
    from ..runs.config import _validation_message, read_config_file

    data = read_config_file(path)
    source = f"session file {path}"
    try:
        config = SessionConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message(exc, source)) from None
    if config.questionnaire is not None and config.questionnaire.scale_file is not None:
        scale = (path.parent / config.questionnaire.scale_file).resolve()
        if not scale.is_file():
            raise ConfigError(f"{source}: questionnaire.scale_file: {scale} is not a file")
        data = {**data, "questionnaire": {"scale_file": str(scale)}}
        config = SessionConfig.model_validate(data)
    return config, data


def parse_session_config(data: Any, source: str) -> SessionConfig:
    """A stored session's config (from ``session.json``)."""
    try:
        return SessionConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_message(exc, source)) from None


def _message(exc: ValidationError, source: str) -> str:
    from ..runs.config import _validation_message

    return _validation_message(exc, source)

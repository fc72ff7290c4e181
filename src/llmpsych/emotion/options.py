"""EmotionBench's options and unit result, apart from the task so that analysis reads them without
importing the task (which loads the scales and situations)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import LlmpsychError
from ..instruments.native import MAX_SCALE_FILE_BYTES, ScaleFile
from ..instruments.official import read_json
from ..runs.languages import OFFICIAL_LANGUAGE, resolve_language
from ..runs.optionfields import NODE_PATH, CommaList, off_switch


class EmotionBenchOptions(BaseModel):
    """What to administer and how (``docs/emotionbench.md``)."""

    model_config = ConfigDict(extra="forbid")

    scale: str = Field(
        default="PANAS",
        description="PANAS or AGQ, DASS-21, BDI, FDS, MJS, GASP, FSS, BFNE (the emotion measure)",
    )
    scale_file: ScaleFile | None = Field(
        default=None, description="your own scale file as the emotion measure (its scale, or `scale` of it)"
    )
    emotions: CommaList | None = Field(
        default=None, description="emotions to test (default: all for PANAS, the scale's own otherwise)"
    )
    factors: CommaList | None = Field(default=None, description="only these factor ids, e.g. Anger-1")
    situations_per_factor: int | None = Field(
        default=5, ge=1, description="situations per factor (0 or None: every situation)"
    )
    runs: int = Field(default=10, ge=1, le=1000, description="evoked runs per situation")
    default_runs: int | None = Field(
        default=None, ge=2, le=10_000, description="default runs (None: 50 for PANAS, else 10)"
    )
    shuffle: bool = Field(default=True, description="shuffle items per run (False: original order)")
    prompt: Literal["official", "v2"] = Field(
        default="official", description="official (the released code's wording) or v2"
    )
    template: Literal["romero", "serapio-1", "serapio-2"] | None = Field(
        default=None,
        description="a built-in alternative wording (000:2004; llmpsych's own words), instead of prompt",
    )
    stable: bool = Field(default=False, description="ask the model to keep its emotions stable")
    situation_template: str | None = Field(
        default=None,
        description="your own situation sentence (placeholder {situation}); wins over template's",
    )
    system_template: str | None = Field(
        default=None, description="your own system message (placeholders {min}, {max}, {levels})"
    )
    instructions_template: str | None = Field(
        default=None,
        description="your own instructions (placeholders {situation}, {min}, {max}, {levels}); wins over "
        "template's",
    )
    situations_file: Annotated[str | None, NODE_PATH] = Field(
        default=None, description="own situations (JSON or CSV)"
    )
    positive: Annotated[str | None, NODE_PATH] = Field(
        default=None, description="positive rewrites file (RQ2)"
    )
    language: str | None = Field(
        default=None,
        max_length=60,
        description="the run's language (default: the one the situations file or scale file names; en "
        "for the official data); one that contradicts a file, or the English official data, is refused",
    )
    experiment: Literal["scales", "describe", "heldout"] = Field(
        default="scales",
        description="scales: the questionnaire benchmark; describe: beyond questionnaires (refusals to "
        "describe demographic groups, Fig. 5.8); heldout: the 400 held-out humans' situations (Table 5.9)",
    )
    groups: CommaList | None = Field(
        default=None, description="describe: the groups to describe (default: the thesis's 20)"
    )
    select_from: str | None = Field(
        default=None,
        description="describe: an analysed PANAS run whose select_n highest-NA and lowest-PA situations "
        "are the negative ones (the thesis's choice)",
    )
    select_n: int = Field(default=5, ge=1, le=100, description="describe: situations per criterion")
    refusal_patterns: list[str] | None = Field(
        default=None, description="describe: own refusal patterns (regular expressions), added to ours"
    )
    split_seed: int = Field(default=0, ge=0, description="heldout: seed of the 866/400 split of crowd.xlsx")
    test_size: int = Field(default=400, ge=1, description="heldout: people held out (400 in the thesis)")
    max_reasks: int = Field(default=2, ge=0, le=10, description="re-asks of an unreadable answer")
    alpha: float = Field(default=0.01, gt=0, lt=1, description="significance level")
    published: bool = Field(
        default=False,
        description="published: score and test as the original code did (plain sums, no reverse keys, the "
        "F-test with 1e-8); corrected (the default): see docs/statistics.md, 'Published or corrected'",
        json_schema_extra=off_switch("corrected"),
    )

    @field_validator("situations_per_factor", mode="before")
    @classmethod
    def _zero_is_every(cls, value: Any) -> Any:
        """0 situations per factor means every situation (the flag's spelling of None)."""
        return None if value == 0 and not isinstance(value, bool) else value

    @model_validator(mode="before")
    @classmethod
    def _old_switches(cls, data: Any) -> Any:
        """Configs stored before ``published`` had ``scoring`` (paper/corrected) and ``published_test``:
        ``scoring`` decides (it moves the numbers most); ``published_test`` alone is taken as it is."""
        if not isinstance(data, dict) or ("scoring" not in data and "published_test" not in data):
            return data
        data = dict(data)
        scoring = data.pop("scoring", None)
        published_test = data.pop("published_test", None)
        if "published" in data:
            return data
        if scoring is not None:
            if scoring not in ("paper", "corrected"):
                raise ValueError(f"unknown scoring {scoring!r} (use paper or corrected)")
            data["published"] = scoring == "paper"
        elif published_test is not None:
            data["published"] = published_test
        return data

    @model_validator(mode="after")
    def _language(self) -> EmotionBenchOptions:
        """Resolve ``language`` from the files (:func:`~llmpsych.runs.languages.resolve_language`), so a
        stored config and a planned one read alike; a file that cannot be read names none here (the task
        reports it when it loads the file). A run of official texts only is English; with an own file
        that names no language, ``language`` says which it is."""
        named = {
            "situations file": _situations_language(self.situations_file),
            "scale file": _scale_language(self.scale_file, self.scale),
        }
        if not self.situations_file and self.scale_file is None:  # only official texts: English
            named = {"official data": OFFICIAL_LANGUAGE}
        self.language = resolve_language(self.language, named)
        return self


def _situations_language(path: str | None) -> str | None:
    """The ``language`` a JSON situations file names at its top (a translated file does)."""
    if not path or Path(path).suffix.lower() == ".csv":
        return None
    try:
        data = read_json(Path(path), MAX_SCALE_FILE_BYTES, "situations file")
    except (LlmpsychError, OSError):
        return None
    value = data.get("language") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def _scale_language(scale_file: ScaleFile | None, name: str) -> str | None:
    """The language of the scale a run takes from ``scale_file`` (its only one, or the one named)."""
    if scale_file is None:
        return None
    try:
        scales = scale_file.scales()
    except LlmpsychError:
        return None
    chosen = [s for s in scales if s.name.lower() == name.strip().lower()] if len(scales) > 1 else scales
    return chosen[0].language if chosen else None


class EmotionBenchResult(BaseModel):
    """One unit's stored result: one administration in a situation (``kind`` default, evoked, negative or
    positive). The answers are checked where they are scored, with messages naming the situation."""

    model_config = ConfigDict(extra="allow")

    kind: str
    run: int
    factor: Any = ""
    situation: Any = None
    text: Any = ""
    answers: dict[str, Any] | None = None

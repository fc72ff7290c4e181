"""PsychoBench's options and unit result, apart from the task so that analysis reads them without
importing the task (which imports the administration, the scales and the personas)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import ConfigError
from ..instruments.native import ScaleFile
from ..runs.optionfields import CommaList, Renamed, new_names, no_flag, off_switch
from .cipher import DEFAULT_SHIFT
from .personas import resolve_persona
from .variants import CotWording, SystemPrompt, Template

#: The t-test's names (and the alias ``paper``): the values an old ``method`` option held.
T_TESTS = frozenset({"f-test", "welch", "student", "paper"})


class PsychoBenchOptions(BaseModel):
    """What to administer and how (``docs/psychobench.md``)."""

    model_config = ConfigDict(extra="forbid")
    #: Old option names (stored runs and configs, ``-O``, the old flags): read as the new ones.
    renamed_options: ClassVar[tuple[Renamed, ...]] = (
        Renamed("scales", "scale"),
        Renamed("scale_files", "scale_file"),
        Renamed("method", "test", T_TESTS),
        Renamed("mode", "method"),
    )

    scale: CommaList | None = Field(
        default=None,
        description="scale names, repeatable or comma-separated ('all': every scored official scale); "
        "default: every scored official scale, or only the scale files' scales when scale_file is given",
    )
    scale_file: list[ScaleFile] = Field(
        default_factory=list,
        description="your own scale files (native or official format); all their scales run",
    )
    imported: dict[str, Any] | None = Field(
        default=None,
        description="set by `psychobench import-answers`: the answers file these results came from",
        json_schema_extra=no_flag(),
    )
    runs: int = Field(default=10, ge=1, le=1000, description="independent runs (item orders) per scale")
    chunk_size: int | None = Field(
        default=None, ge=1, description="statements per turn (None: whole scale; the official code used 30)"
    )
    max_reasks: int = Field(default=2, ge=0, le=10, description="re-asks of an unreadable answer")
    persona: str = Field(default="default", description="default, psychopath, liar, ordinary, hero, or text")
    cipher: bool = Field(
        default=False, description="Caesar-cipher jailbreak (the GPT-4-JB setting; shift: cipher_shift)"
    )
    cipher_shift: int = Field(default=DEFAULT_SHIFT, ge=1, le=25, description="the cipher's shift, 1-25")
    template: Template = Field(
        default="v1",
        description="prompt template: v1 the scale's own prompt; v2-v5 the thesis's Table 4.9 variants "
        "(read from the LLMPersonality data)",
    )
    cot: bool = Field(
        default=False,
        description="chain-of-thought: reason first, then score (cot_wording: the thesis's V1 + CoT "
        "sentence, or llmpsych's)",
    )
    cot_wording: CotWording = Field(
        default="thesis",
        description="thesis: Table 4.9's V1 + CoT sentence, verbatim; llmpsych: our own chain-of-thought "
        "wording (ends by asking for index: score lines)",
    )
    system_prompt: SystemPrompt = Field(
        default="assistant",
        description="assistant: the scale's system prompt; no-assistant: without its helpful-assistant "
        "role; none: no system message",
    )
    method: Literal["generate", "logprob"] = Field(
        default="generate",
        description="scoring method: generate (the paper: written answers) or logprob (label probabilities)",
    )
    top_logprobs: int = Field(default=20, ge=1, le=20, description="label probabilities asked for (logprob)")
    alpha: float = Field(default=0.01, gt=0, lt=1, description="significance level (the paper's 0.01)")
    test: Literal["f-test", "welch", "student"] = Field(
        default="f-test",
        description="t-test against the norms: f-test (the papers' F-test, then Student or Welch), welch, "
        "student",
    )
    published: bool = Field(
        default=False,
        description="published: the original code's test details (+1e-8 on both SDs, uncapped F-test p); "
        "corrected (the default): see docs/statistics.md, 'Published or corrected'",
        json_schema_extra=off_switch("corrected"),
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return new_names(data, cls.renamed_options)

    @field_validator("test", mode="before")
    @classmethod
    def _test_name(cls, value: Any) -> Any:
        from ..stats.compare import METHOD_ALIASES  # here: scipy is not imported to check a command line

        return METHOD_ALIASES.get(value, value) if isinstance(value, str) else value

    @field_validator("template", mode="before")
    @classmethod
    def _template_name(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _cot_generates(self) -> PsychoBenchOptions:
        if self.cot and self.method == "logprob":
            raise ConfigError(
                "cot needs method generate", "method logprob reads the first answer token, with no reasoning"
            )
        return self

    @field_validator("persona")
    @classmethod
    def _known_persona(cls, value: str) -> str:
        resolve_persona(value)
        return value


class PsychoBenchResult(BaseModel):
    """One unit's stored result: a scale administered once (``run``), in ``mode``.

    Only the fields analysis locates the unit by are typed strictly; the answers, the item order and
    the logprob items are checked where they are scored, with messages naming the scale, run and item.
    """

    model_config = ConfigDict(extra="allow")

    scale: str
    run: int
    mode: Literal["generate", "logprob"] = "generate"
    answers: dict[str, Any] | None = None
    order: list[Any] | None = None
    items: list[Any] | None = None

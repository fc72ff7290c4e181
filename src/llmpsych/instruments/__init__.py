"""Psychometric instruments: the scale model, official and native scale files, and answer parsing.

Names are imported on first use, so importing the package (e.g. for ``--help``) stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import first_use

if TYPE_CHECKING:
    from .native import (
        load_scale_file,
        scale_to_native,
        write_scale_file,
    )
    from .official import (
        CORRECTION_RULES,
        load_dataset_scales,
        load_emotionbench_scales,
        load_official_file,
        load_psychobench_scales,
    )
    from .parsing import (
        LikertAnswer,
        ParsedAnswers,
        build_reask_prompt,
        parse_item_answers,
        parse_likert_number,
        positional_reply,
    )
    from .scale import (
        Correction,
        Item,
        NormGroup,
        Scale,
        ScaleError,
        ScoringError,
        Subscale,
    )

#: public name -> the submodule defining it
_WHERE: dict[str, str] = {
    "load_scale_file": "native",
    "scale_to_native": "native",
    "write_scale_file": "native",
    "CORRECTION_RULES": "official",
    "load_dataset_scales": "official",
    "load_emotionbench_scales": "official",
    "load_official_file": "official",
    "load_psychobench_scales": "official",
    "LikertAnswer": "parsing",
    "ParsedAnswers": "parsing",
    "build_reask_prompt": "parsing",
    "parse_item_answers": "parsing",
    "parse_likert_number": "parsing",
    "positional_reply": "parsing",
    "Correction": "scale",
    "Item": "scale",
    "NormGroup": "scale",
    "Scale": "scale",
    "ScaleError": "scale",
    "ScoringError": "scale",
    "Subscale": "scale",
}

__all__ = [
    "CORRECTION_RULES",
    "Correction",
    "Item",
    "LikertAnswer",
    "NormGroup",
    "ParsedAnswers",
    "Scale",
    "ScaleError",
    "ScoringError",
    "Subscale",
    "build_reask_prompt",
    "load_dataset_scales",
    "load_emotionbench_scales",
    "load_official_file",
    "load_psychobench_scales",
    "load_scale_file",
    "parse_item_answers",
    "parse_likert_number",
    "positional_reply",
    "scale_to_native",
    "write_scale_file",
]


__getattr__ = first_use(__name__, _WHERE)

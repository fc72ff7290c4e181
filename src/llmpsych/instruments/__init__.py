"""Psychometric instruments: the scale model, official and native scale files, and answer parsing."""

from .native import load_scale_file, scale_to_native, write_scale_file
from .official import (
    CORRECTION_RULES,
    load_dataset_scales,
    load_emotionbench_scales,
    load_official_file,
    load_psychobench_scales,
)
from .parsing import LikertAnswer, ParsedAnswers, build_reask_prompt, parse_item_answers, parse_likert_number
from .scale import Correction, Item, NormGroup, Scale, ScaleError, ScoringError, Subscale

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
    "scale_to_native",
    "write_scale_file",
]

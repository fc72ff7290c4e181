"""Shared statistics: comparisons with human norms, descriptive summaries, and reliability."""

from .compare import (
    GroupStats,
    NormComparison,
    apply_holm,
    compare_with_norm,
    comparisons_frame,
    hedges_g,
    holm_adjust,
    t_test_from_stats,
    variance_f_test,
)
from .descriptive import (
    NOT_AVAILABLE,
    StatsError,
    Summary,
    ValidRate,
    format_mean_sd,
    summarize,
    valid_answer_rate,
    valid_rate,
)
from .reliability import cronbach_alpha, mcdonald_omega

__all__ = [
    "NOT_AVAILABLE",
    "GroupStats",
    "NormComparison",
    "StatsError",
    "Summary",
    "ValidRate",
    "apply_holm",
    "compare_with_norm",
    "comparisons_frame",
    "cronbach_alpha",
    "format_mean_sd",
    "hedges_g",
    "holm_adjust",
    "mcdonald_omega",
    "summarize",
    "t_test_from_stats",
    "valid_answer_rate",
    "valid_rate",
    "variance_f_test",
]

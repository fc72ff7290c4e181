"""Published EmotionBench numbers (facts, with citations), for parity checks and comparison reports.

Sources (see ``docs/emotionbench.md``): Huang et al., "Apathetic or Empathetic? Evaluating LLMs' Emotional
Alignments with Humans" (NeurIPS 2024) as printed in Huang's PhD thesis, Chapter 5 (Tables 5.7, 5.10,
5.11, 5.15), which agree cell for cell with the V1 thesis part (Tables 5, 7). Row keys: factor ids
(``Anger-1``), emotion names (the papers' "Average" rows), and ``Overall``.
"""

from __future__ import annotations

from collections.abc import Mapping

CITATION_GPT35 = "Huang et al. 2024, EmotionBench, thesis Table 5.11 (GPT-3.5-Turbo column)"
CITATION_CHALLENGING = "Huang et al. 2024, EmotionBench, thesis Tables 5.7 and 5.15 (GPT-3.5-Turbo)"
CITATION_CROWD = "Huang et al. 2024, EmotionBench, thesis Table 5.10 (crowd, n = 1,266)"

#: GPT-3.5-Turbo PANAS defaults (mean, sd) for positive and negative affect.
GPT35_DEFAULT: Mapping[str, tuple[float, float]] = {"positive": (39.2, 2.3), "negative": (26.3, 2.0)}

#: GPT-3.5-Turbo PANAS changes as printed: row -> (PA mark, PA change, NA mark, NA change).
#: "Death of Loved Ones" NA is printed without a sign; +1.8 is the value the Depression average implies.
GPT35_PANAS: Mapping[str, tuple[str, float, str, float]] = {
    "Anger-1": ("↓", -11.1, "↓", -3.9),
    "Anger-2": ("↓", -15.2, "—", -2.1),
    "Anger-3": ("↓", -15.7, "↑", 4.4),
    "Anger-4": ("↓", -19.0, "↓", -4.7),
    "Anger-5": ("↓", -15.0, "↓", -6.0),
    "Anger": ("↓", -15.2, "↓", -2.5),
    "Anxiety-1": ("↓", -14.6, "↑", 2.8),
    "Anxiety-2": ("↓", -6.9, "—", -0.2),
    "Anxiety-3": ("↓", -11.7, "↓", -2.5),
    "Anxiety-4": ("↓", -11.9, "↓", -3.8),
    "Anxiety": ("↓", -11.3, "—", -0.9),
    "Depression-1": ("↓", -17.1, "↑", 6.5),
    "Depression-2": ("↓", -17.1, "—", 1.8),
    "Depression-3": ("↓", -21.1, "↑", 3.1),
    "Depression-4": ("↓", -20.2, "↑", 9.3),
    "Depression-5": ("↓", -23.5, "—", 0.7),
    "Depression-6": ("↓", -21.1, "↓", -3.0),
    "Depression": ("↓", -20.1, "↑", 3.1),
    "Frustration-1": ("↓", -18.3, "↓", -7.0),
    "Frustration-2": ("↓", -16.5, "—", 0.1),
    "Frustration-3": ("↓", -15.9, "↓", -3.6),
    "Frustration-4": ("↓", -14.9, "↓", -2.4),
    "Frustration": ("↓", -16.4, "↓", -3.2),
    "Jealousy-1": ("↓", -18.4, "—", 1.7),
    "Jealousy-2": ("↓", -17.8, "—", -1.3),
    "Jealousy-3": ("↓", -4.6, "↓", -11.6),
    "Jealousy-4": ("↓", -13.2, "↓", -8.9),
    "Jealousy": ("↓", -15.3, "↓", -3.2),
    "Guilt-1": ("↓", -15.5, "↑", 4.6),
    "Guilt-2": ("↓", -18.4, "↑", 3.0),
    "Guilt-3": ("↓", -18.6, "↑", 2.8),
    "Guilt-4": ("↓", -10.7, "—", 1.2),
    "Guilt": ("↓", -15.8, "↑", 2.9),
    "Fear-1": ("↓", -11.3, "↑", 3.8),
    "Fear-2": ("↓", -16.1, "↑", 5.6),
    "Fear-3": ("↓", -14.5, "—", 0.0),
    "Fear-4": ("↓", -14.3, "↑", 4.3),
    "Fear-5": ("↓", -15.3, "—", -0.7),
    "Fear": ("↓", -14.3, "↑", 2.6),
    "Embarrassment-1": ("↓", -12.4, "↓", -3.9),
    "Embarrassment-2": ("↓", -15.3, "—", 0.1),
    "Embarrassment-3": ("↓", -11.8, "↑", 3.1),
    "Embarrassment-4": ("↓", -12.4, "↑", 2.9),
    "Embarrassment": ("↓", -13.0, "—", 0.6),
    "Overall": ("↓", -15.4, "—", 0.2),
}

#: Cells of :data:`GPT35_PANAS` that the released raw answers do not reproduce (misprints), with the
#: reproduced value: (row, measure) -> (printed, reproduced, note).
GPT35_MISPRINTS: Mapping[tuple[str, str], tuple[float, float, str]] = {
    ("Depression-4", "positive"): (-20.2, -20.3, "rounding slip in print"),
}

#: Challenging scales, GPT-3.5-Turbo: scale -> (emotion, default mean, default sd).
CHALLENGING_DEFAULT: Mapping[str, tuple[str, float, float]] = {
    "AGQ": ("Anger", 128.3, 8.9),
    "DASS-21": ("Anxiety", 32.5, 10.0),
    "BDI": ("Depression", 0.2, 0.6),
    "FDS": ("Frustration", 91.6, 8.1),
    "MJS": ("Jealousy", 83.7, 20.3),
    "GASP": ("Guilt", 81.3, 9.7),
    "FSS": ("Fear", 140.6, 16.9),
    "BFNE": ("Embarrassment", 39.0, 1.9),
}

#: Challenging scales as printed: scale -> (per-factor changes, emotion average). Only BDI is significant
#: (every factor and the average ↑); every other cell is —.
CHALLENGING_PRINTED: Mapping[str, tuple[tuple[float, ...], float]] = {
    "AGQ": ((4.1, 0.1, 4.1, 3.3, -4.9), 1.3),
    "DASS-21": ((0.8, 0.5, 6.6, -3.9), -2.3),
    "BDI": ((15.3, 16.1, 19.3, 14.2, 8.4, 2.5), 6.4),
    "FDS": ((-9.9, -5.6, -6.6, -7.8), -7.5),
    "MJS": ((1.8, 1.3, -12.9, -8.1), -0.1),
    "GASP": ((-3.8, -0.5, -4.3, -2.7), -2.6),
    "FSS": ((4.4, 2.3, 5.4, -8.1, -5.3), -0.3),
    "BFNE": ((-0.0, 0.2, -0.1, 0.7), 0.2),
}

#: The same, recomputed from the released raw answers with plain sums (spec §8.5); these differ from the
#: print in DASS-21 Anxiety-3 (sign), BDI average, MJS Jealousy-1/-2 and average, and GASP Guilt-2.
CHALLENGING_REPRODUCED: Mapping[str, tuple[tuple[float, ...], float]] = {
    "AGQ": ((4.1, 0.1, 4.1, 3.3, -4.9), 1.3),
    "DASS-21": ((0.8, 0.5, -6.6, -3.9), -2.3),
    "BDI": ((15.3, 16.1, 19.3, 14.2, 8.4, 2.5), 12.6),
    "FDS": ((-9.9, -5.6, -6.6, -7.8), -7.5),
    "MJS": ((7.9, 2.4, -12.9, -8.1), 0.1),
    "GASP": ((-3.8, 0.5, -4.3, -2.7), -2.6),
    "FSS": ((4.4, 2.3, 5.4, -8.1, -5.3), -0.3),
    "BFNE": ((-0.0, 0.2, -0.1, 0.7), 0.2),
}

#: Human (crowd) PANAS changes as printed: row -> (PA mark, PA change, NA mark, NA change). The first two
#: rows of every emotion are shifted in print (spec §4.2, §10.3); see :data:`CROWD_CORRECTED`.
CROWD_PRINTED: Mapping[str, tuple[str, float, str, float]] = {
    "Anger-1": ("—", -5.3, "↑", 9.9),
    "Anger-2": ("↓", -2.2, "↑", 8.5),
    "Anger-3": ("—", -1.4, "↑", 7.7),
    "Anger-4": ("↓", -9.4, "↑", 9.5),
    "Anger-5": ("↓", -4.4, "↑", 9.3),
    "Anger": ("↓", -5.3, "↑", 9.9),
    "Anxiety-1": ("↓", -2.2, "↑", 8.8),
    "Anxiety-2": ("—", -5.3, "↑", 12.4),
    "Anxiety-3": ("—", -2.2, "↑", 7.7),
    "Anxiety-4": ("—", 0.7, "↑", 5.2),
    "Anxiety": ("↓", -2.2, "↑", 8.8),
    "Depression-1": ("↓", -6.8, "↑", 10.1),
    "Depression-2": ("↓", -7.4, "↑", 14.8),
    "Depression-3": ("↓", -7.2, "↑", 7.2),
    "Depression-4": ("↓", -9.5, "↑", 17.5),
    "Depression-5": ("↓", -9.0, "↑", 18.2),
    "Depression-6": ("—", -3.6, "↑", 3.5),
    "Depression": ("↓", -6.8, "↑", 10.1),
    "Frustration-1": ("↓", -5.3, "↑", 10.9),
    "Frustration-2": ("↓", -7.9, "↑", 11.2),
    "Frustration-3": ("↓", -4.6, "↑", 9.4),
    "Frustration-4": ("↓", -4.8, "↑", 9.3),
    "Frustration": ("↓", -5.3, "↑", 10.9),
    "Jealousy-1": ("↓", -4.4, "↑", 6.2),
    "Jealousy-2": ("—", -6.0, "↑", 10.6),
    "Jealousy-3": ("↓", -5.6, "↑", 6.9),
    "Jealousy-4": ("—", -2.6, "—", 3.7),
    "Jealousy": ("↓", -4.4, "↑", 6.2),
    "Guilt-1": ("↓", -6.3, "↑", 13.1),
    "Guilt-2": ("↓", -5.7, "↑", 15.5),
    "Guilt-3": ("↓", -8.2, "↑", 14.4),
    "Guilt-4": ("↓", -5.4, "↑", 11.1),
    "Guilt": ("↓", -6.3, "↑", 13.1),
    "Fear-1": ("↓", -3.7, "↑", 12.1),
    "Fear-2": ("↓", -4.9, "↑", 10.7),
    "Fear-3": ("—", -2.3, "↑", 11.8),
    "Fear-4": ("—", -1.9, "↑", 17.1),
    "Fear-5": ("—", -3.6, "↑", 6.4),
    "Fear": ("↓", -3.7, "↑", 12.1),
    "Embarrassment-1": ("↓", -6.2, "↑", 11.1),
    "Embarrassment-2": ("↓", -8.0, "↑", 8.5),
    "Embarrassment-3": ("—", -2.7, "↑", 11.1),
    "Embarrassment-4": ("↓", -8.7, "↑", 13.5),
    "Embarrassment": ("↓", -6.2, "↑", 11.1),
    "Overall": ("↓", -5.1, "↑", 10.4),
}
CROWD_PRINTED_DEFAULT: Mapping[str, tuple[float, float]] = {"positive": (28.0, 8.7), "negative": (13.6, 5.5)}

#: The human table recomputed from ``crowd.xlsx`` (spec §8.4): row -> (n, default PA mean, sd, default NA
#: mean, sd, evoked PA mean, sd, evoked NA mean, sd, PA mark (paired t-test), PA change, NA mark (paired),
#: NA change, PA mark (F-test + Student/Welch, independent), NA mark (independent)).
CROWD_CORRECTED: Mapping[
    str, tuple[int, float, float, float, float, float, float, float, float, str, float, str, float, str, str]
] = {
    "Anger-1": (35, 26.6, 9.0, 14.3, 7.1, 24.5, 7.8, 22.8, 8.2, "—", -2.2, "↑", 8.5, "—", "↑"),
    "Anger-2": (35, 30.9, 8.2, 13.5, 4.1, 22.0, 9.2, 27.9, 9.0, "↓", -8.9, "↑", 14.4, "↓", "↑"),
    "Anger-3": (35, 25.3, 10.1, 15.0, 7.6, 23.8, 10.5, 22.7, 8.8, "—", -1.4, "↑", 7.7, "—", "↑"),
    "Anger-4": (35, 30.5, 7.5, 12.2, 3.2, 21.0, 6.9, 21.6, 7.9, "↓", -9.4, "↑", 9.4, "↓", "↑"),
    "Anger-5": (37, 28.2, 9.8, 11.6, 2.8, 23.8, 7.6, 20.9, 9.7, "↓", -4.4, "↑", 9.3, "—", "↑"),
    "Anger": (177, 28.3, 9.2, 13.3, 5.4, 23.0, 8.5, 23.1, 9.0, "↓", -5.3, "↑", 9.9, "↓", "↑"),
    "Anxiety-1": (36, 28.6, 7.9, 13.3, 4.1, 23.4, 8.8, 25.7, 9.3, "↓", -5.2, "↑", 12.4, "↓", "↑"),
    "Anxiety-2": (35, 27.4, 9.5, 14.7, 5.8, 25.2, 9.9, 24.7, 9.3, "—", -2.2, "↑", 10.1, "—", "↑"),
    "Anxiety-3": (36, 29.9, 8.4, 12.4, 2.7, 27.7, 10.1, 20.1, 6.3, "—", -2.2, "↑", 7.7, "—", "↑"),
    "Anxiety-4": (36, 25.8, 7.9, 12.8, 4.8, 26.5, 8.8, 18.0, 8.1, "—", 0.7, "↑", 5.2, "—", "↑"),
    "Anxiety": (143, 27.9, 8.5, 13.3, 4.5, 25.7, 9.5, 22.1, 8.9, "↓", -2.2, "↑", 8.8, "—", "↑"),
    "Depression-1": (36, 29.3, 10.0, 12.8, 3.9, 21.9, 10.0, 27.6, 9.6, "↓", -7.4, "↑", 14.8, "↓", "↑"),
    "Depression-2": (39, 28.1, 9.0, 13.5, 6.5, 23.8, 9.2, 20.6, 7.5, "↓", -4.3, "↑", 7.1, "—", "↑"),
    "Depression-3": (39, 30.5, 7.8, 13.2, 3.7, 23.3, 8.5, 20.4, 9.8, "↓", -7.2, "↑", 7.2, "↓", "↑"),
    "Depression-4": (35, 28.7, 8.3, 13.8, 6.2, 19.2, 9.2, 31.3, 10.0, "↓", -9.5, "↑", 17.5, "↓", "↑"),
    "Depression-5": (35, 27.0, 10.5, 14.7, 7.7, 18.0, 8.7, 25.9, 9.9, "↓", -9.0, "↑", 11.3, "↓", "↑"),
    "Depression-6": (37, 27.4, 8.6, 12.2, 4.2, 23.7, 9.5, 15.6, 5.5, "—", -3.6, "↑", 3.5, "—", "↑"),
    "Depression": (221, 28.5, 9.0, 13.3, 5.5, 21.7, 9.4, 23.4, 10.2, "↓", -6.8, "↑", 10.1, "↓", "↑"),
    "Frustration-1": (35, 27.8, 8.5, 13.9, 4.1, 19.9, 8.5, 25.1, 10.0, "↓", -7.9, "↑", 11.2, "↓", "↑"),
    "Frustration-2": (36, 25.4, 8.7, 12.9, 5.1, 21.5, 8.3, 26.8, 10.1, "↓", -3.9, "↑", 13.9, "—", "↑"),
    "Frustration-3": (36, 29.5, 8.3, 12.3, 4.2, 24.9, 8.4, 21.7, 8.5, "↓", -4.6, "↑", 9.4, "—", "↑"),
    "Frustration-4": (37, 27.6, 9.8, 15.2, 6.7, 22.8, 8.3, 24.5, 7.2, "↓", -4.8, "↑", 9.3, "—", "↑"),
    "Frustration": (144, 27.6, 8.8, 13.6, 5.2, 22.3, 8.5, 24.5, 9.1, "↓", -5.3, "↑", 10.9, "↓", "↑"),
    "Jealousy-1": (36, 28.2, 10.4, 13.9, 5.0, 22.2, 7.9, 24.5, 9.3, "↓", -6.0, "↑", 10.6, "↓", "↑"),
    "Jealousy-2": (35, 24.9, 9.2, 16.9, 8.9, 21.6, 9.0, 19.7, 10.5, "—", -3.3, "—", 2.9, "—", "—"),
    "Jealousy-3": (16, 27.9, 8.3, 11.5, 2.5, 22.2, 7.4, 18.4, 6.9, "↓", -5.6, "↑", 6.9, "—", "↑"),
    "Jealousy-4": (22, 31.0, 8.5, 12.5, 3.9, 28.4, 11.8, 16.2, 9.8, "—", -2.6, "—", 3.7, "—", "—"),
    "Jealousy": (109, 27.7, 9.5, 14.2, 6.4, 23.3, 9.3, 20.4, 9.9, "↓", -4.4, "↑", 6.2, "↓", "↑"),
    "Guilt-1": (36, 28.2, 9.8, 14.4, 6.3, 22.5, 6.7, 29.9, 11.5, "↓", -5.7, "↑", 15.5, "↓", "↑"),
    "Guilt-2": (36, 27.5, 7.1, 14.3, 6.0, 20.3, 7.5, 25.7, 10.7, "↓", -7.2, "↑", 11.4, "↓", "↑"),
    "Guilt-3": (37, 28.0, 8.5, 14.3, 6.5, 19.7, 7.3, 28.7, 8.7, "↓", -8.2, "↑", 14.4, "↓", "↑"),
    "Guilt-4": (37, 28.8, 8.8, 12.9, 4.8, 23.9, 8.6, 24.9, 10.2, "↓", -4.9, "↑", 12.0, "—", "↑"),
    "Guilt": (146, 28.1, 8.5, 14.0, 5.9, 21.6, 7.7, 27.3, 10.4, "↓", -6.5, "↑", 13.3, "↓", "↑"),
    "Fear-1": (35, 30.6, 10.1, 13.1, 4.2, 25.7, 9.2, 23.8, 8.0, "↓", -4.9, "↑", 10.7, "—", "↑"),
    "Fear-2": (36, 28.2, 6.7, 14.2, 6.5, 22.4, 6.5, 29.0, 9.6, "↓", -5.8, "↑", 14.8, "↓", "↑"),
    "Fear-3": (36, 25.6, 8.4, 14.3, 5.8, 23.4, 7.9, 26.1, 9.2, "—", -2.2, "↑", 11.8, "—", "↑"),
    "Fear-4": (36, 28.5, 8.7, 15.1, 7.7, 26.6, 7.0, 32.1, 8.6, "—", -1.9, "↑", 17.1, "—", "↑"),
    "Fear-5": (39, 27.1, 8.4, 13.9, 5.6, 23.5, 7.4, 20.3, 8.9, "—", -3.6, "↑", 6.4, "—", "↑"),
    "Fear": (182, 28.0, 8.6, 14.1, 6.0, 24.3, 7.7, 26.2, 9.7, "↓", -3.7, "↑", 12.1, "↓", "↑"),
    "Embarrassment-1": (36, 28.8, 9.2, 12.9, 4.0, 20.8, 8.5, 21.4, 8.1, "↓", -8.0, "↑", 8.5, "↓", "↑"),
    "Embarrassment-2": (36, 27.1, 9.0, 13.4, 5.7, 21.7, 7.4, 24.8, 9.2, "↓", -5.4, "↑", 11.4, "↓", "↑"),
    "Embarrassment-3": (37, 26.9, 10.1, 13.9, 5.3, 24.2, 8.1, 25.0, 9.4, "—", -2.7, "↑", 11.1, "—", "↑"),
    "Embarrassment-4": (35, 28.1, 8.3, 13.1, 4.2, 19.4, 6.7, 26.7, 9.7, "↓", -8.7, "↑", 13.5, "↓", "↑"),
    "Embarrassment": (144, 27.7, 9.1, 13.4, 4.8, 21.5, 7.9, 24.5, 9.2, "↓", -6.2, "↑", 11.1, "↓", "↑"),
    "Overall": (1266, 28.0, 8.9, 13.6, 5.5, 22.9, 8.7, 24.1, 9.7, "↓", -5.1, "↑", 10.4, "↓", "↑"),
}

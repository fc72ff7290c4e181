"""Published reference numbers of the reliability study (facts, cited; no third-party text).

Source: the thesis "Cognitive and Behavioral Human-Machine Alignment", Chapter 3 (the EMNLP 2024 paper
"On the Reliability of Psychological Scales on Large Language Models"), as extracted in
``specs/psychobench-and-reliability.md`` §1.1.6 and §1.2.5. Dimensions are always O, C, E, A, N.
"""

from __future__ import annotations

import re

DIMENSIONS: tuple[str, ...] = (
    "Openness",
    "Conscientiousness",
    "Extraversion",
    "Agreeableness",
    "Neuroticism",
)
SHORT: dict[str, str] = {d: d[0] for d in DIMENSIONS}

#: Human SDs used for the variance F-tests (Srivastava et al. 2003; thesis §3.3.1).
HUMAN_SD: dict[str, float] = {
    "Openness": 0.7,
    "Conscientiousness": 0.7,
    "Extraversion": 0.9,
    "Agreeableness": 0.7,
    "Neuroticism": 0.8,
}
#: The human sample size is not printed in Chapter 3; the PsychoBench BFI norm sample has n = 1,221.
HUMAN_N = 1221

#: Table 3.6: mean ± SD over the 2,500 configurations, per model.
TABLE_3_6: dict[str, dict[str, tuple[float, float]]] = {
    "gpt-3.5-turbo": dict(
        zip(DIMENSIONS, [(4.31, 0.44), (4.15, 0.39), (3.89, 0.43), (4.13, 0.38), (2.35, 0.42)], strict=True)
    ),
    "gpt-4-turbo": dict(
        zip(DIMENSIONS, [(3.77, 0.87), (4.50, 0.80), (3.58, 0.82), (4.30, 0.81), (1.48, 0.72)], strict=True)
    ),
    "gemini-1.0-pro": dict(
        zip(DIMENSIONS, [(4.15, 0.53), (4.08, 0.48), (3.55, 0.52), (4.22, 0.46), (2.36, 0.52)], strict=True)
    ),
    "llama-3.1-8b": dict(
        zip(DIMENSIONS, [(3.94, 0.75), (4.19, 0.67), (3.15, 0.78), (4.07, 0.65), (2.13, 0.73)], strict=True)
    ),
}

#: Outliers of the GPT-3.5-Turbo grid (DBSCAN eps 0.3, minPts 20 on the 2-D PCA map; thesis §3.3.1).
OUTLIERS_GPT35 = 77
OUTLIER_RATE_GPT35 = 0.0308

#: Table 3.3: (difference from the rest, p-value) per factor level and dimension, GPT-3.5-Turbo.
_T33_ROWS: dict[str, list[tuple[float, float]]] = {
    "t1": [(0.02, 0.15), (0.05, 0.00), (0.04, 0.02), (0.03, 0.02), (-0.10, 0.00)],
    "t2": [(-0.12, 0.00), (-0.06, 0.00), (-0.12, 0.00), (-0.01, 0.35), (-0.02, 0.24)],
    "t3": [(0.14, 0.00), (0.05, 0.00), (0.11, 0.00), (0.04, 0.01), (0.09, 0.00)],
    "t4": [(-0.03, 0.10), (-0.04, 0.01), (-0.02, 0.38), (-0.04, 0.02), (0.03, 0.15)],
    "t5": [(-0.01, 0.35), (-0.01, 0.55), (-0.02, 0.33), (-0.02, 0.14), (0.01, 0.69)],
    "v1": [(0.10, 0.00), (0.08, 0.00), (-0.06, 0.00), (0.17, 0.00), (-0.15, 0.00)],
    "v2": [(0.06, 0.00), (0.08, 0.00), (0.03, 0.10), (0.08, 0.00), (-0.01, 0.50)],
    "v3": [(-0.01, 0.49), (0.00, 0.81), (0.26, 0.00), (-0.06, 0.00), (0.21, 0.00)],
    "v4": [(-0.13, 0.00), (-0.13, 0.00), (0.06, 0.00), (-0.12, 0.00), (-0.08, 0.00)],
    "v5": [(-0.02, 0.12), (-0.03, 0.02), (-0.29, 0.00), (-0.07, 0.00), (0.03, 0.19)],
    "En": [(0.05, 0.02), (0.01, 0.55), (-0.05, 0.03), (-0.01, 0.66), (0.04, 0.11)],
    "Zh": [(-0.07, 0.00), (-0.04, 0.06), (0.13, 0.00), (-0.00, 0.94), (0.00, 0.98)],
    "Es": [(0.04, 0.03), (0.09, 0.00), (-0.09, 0.00), (0.10, 0.00), (-0.06, 0.02)],
    "Fr": [(0.08, 0.00), (0.06, 0.01), (-0.08, 0.00), (0.08, 0.00), (-0.09, 0.00)],
    "De": [(0.08, 0.00), (0.02, 0.26), (-0.04, 0.16), (0.05, 0.04), (-0.06, 0.04)],
    "It": [(0.03, 0.14), (0.07, 0.00), (-0.05, 0.06), (0.02, 0.36), (-0.11, 0.00)],
    "Ar": [(-0.08, 0.00), (-0.05, 0.01), (0.08, 0.00), (-0.02, 0.31), (0.06, 0.05)],
    "Ru": [(-0.05, 0.01), (-0.02, 0.22), (-0.09, 0.00), (-0.08, 0.00), (0.05, 0.09)],
    "Ja": [(-0.07, 0.00), (-0.08, 0.00), (0.06, 0.02), (-0.10, 0.00), (0.13, 0.00)],
    "Ko": [(-0.01, 0.53), (-0.06, 0.01), (0.14, 0.00), (-0.03, 0.10), (0.04, 0.16)],
    "n": [(-0.12, 0.00), (-0.06, 0.00), (-0.14, 0.00), (-0.01, 0.40), (0.04, 0.06)],
    "al": [(0.07, 0.00), (0.06, 0.00), (0.05, 0.01), (0.07, 0.00), (-0.02, 0.22)],
    "au": [(0.02, 0.18), (-0.05, 0.00), (0.00, 1.00), (-0.05, 0.00), (0.04, 0.04)],
    "rl": [(0.03, 0.05), (0.07, 0.00), (0.09, 0.00), (0.03, 0.07), (-0.05, 0.02)],
    "ru": [(-0.01, 0.45), (-0.02, 0.19), (-0.01, 0.68), (-0.03, 0.03), (-0.00, 0.99)],
    "f": [(-0.09, 0.00), (-0.16, 0.00), (0.04, 0.01), (-0.13, 0.00), (0.14, 0.00)],
    "r": [(0.09, 0.00), (0.16, 0.00), (-0.04, 0.01), (0.13, 0.00), (-0.14, 0.00)],
}
TABLE_3_3: dict[str, dict[str, tuple[float, float]]] = {
    level: dict(zip(DIMENSIONS, cells, strict=True)) for level, cells in _T33_ROWS.items()
}


def _rows(rows: dict[str, list[tuple[float, float]]]) -> dict[str, dict[str, tuple[float, float]]]:
    return {name: dict(zip(DIMENSIONS, cells, strict=True)) for name, cells in rows.items()}


#: Table 3.10 (000:880-893): steering extremes vs default (n_default = 2,500, n_assigned = 240).
#: (dimension, "min"/"max") -> (assigned mean, assigned sd, difference, t). The caption says Student's
#: t-tests; the t values are those of the authors' procedure (``method="f-test"``, ``published=True``:
#: an F-test at 0.001 chooses Student for E-min and A-min, Welch for the other eight, on population SDs).
TABLE_3_10: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("Openness", "min"): (3.56, 0.52, -0.75, -21.44),
    ("Openness", "max"): (4.61, 0.21, 0.31, 18.98),
    ("Conscientiousness", "min"): (3.31, 0.68, -0.84, -18.75),
    ("Conscientiousness", "max"): (4.52, 0.18, 0.37, 25.98),
    ("Extraversion", "min"): (2.19, 0.43, -1.71, -59.34),
    ("Extraversion", "max"): (4.10, 0.32, 0.21, 9.44),
    ("Agreeableness", "min"): (3.79, 0.41, -0.34, -13.23),
    ("Agreeableness", "max"): (4.56, 0.19, 0.44, 30.13),
    ("Neuroticism", "min"): (1.89, 0.23, -0.45, -26.77),
    ("Neuroticism", "max"): (3.37, 0.95, 1.03, 16.52),
}

#: Table 3.13: environments (mean, sd) per emotion.
TABLE_3_13 = _rows(
    {
        "anger": [(4.28, 0.24), (4.26, 0.20), (3.49, 0.19), (4.37, 0.18), (2.25, 0.21)],
        "anxiety": [(4.32, 0.20), (4.23, 0.19), (3.45, 0.20), (4.30, 0.17), (2.45, 0.24)],
        "fear": [(4.33, 0.21), (4.23, 0.18), (3.45, 0.19), (4.33, 0.16), (2.28, 0.21)],
        "guilt": [(4.25, 0.25), (4.19, 0.21), (3.44, 0.21), (4.37, 0.17), (2.30, 0.22)],
        "jealousy": [(4.28, 0.22), (4.20, 0.21), (3.41, 0.20), (4.32, 0.20), (2.29, 0.22)],
        "embarrassment": [(4.26, 0.22), (4.25, 0.18), (3.54, 0.17), (4.38, 0.17), (2.24, 0.22)],
        "frustration": [(4.28, 0.22), (4.24, 0.18), (3.44, 0.19), (4.34, 0.19), (2.29, 0.20)],
        "depression": [(4.23, 0.25), (4.16, 0.21), (3.24, 0.22), (4.30, 0.18), (2.42, 0.26)],
        "calmness": [(4.27, 0.21), (4.22, 0.18), (3.34, 0.21), (4.38, 0.15), (2.00, 0.21)],
        "relaxation": [(4.30, 0.21), (4.22, 0.18), (3.36, 0.19), (4.39, 0.17), (2.04, 0.21)],
        "courage": [(4.25, 0.22), (4.23, 0.19), (3.47, 0.18), (4.35, 0.18), (2.20, 0.21)],
        "pride": [(4.27, 0.21), (4.27, 0.17), (3.50, 0.21), (4.37, 0.16), (2.21, 0.19)],
        "admiration": [(4.27, 0.22), (4.25, 0.18), (3.44, 0.18), (4.37, 0.16), (2.20, 0.21)],
        "confidence": [(4.28, 0.22), (4.24, 0.19), (3.58, 0.22), (4.35, 0.16), (2.16, 0.19)],
        "fun": [(4.29, 0.22), (4.18, 0.18), (3.59, 0.20), (4.35, 0.16), (2.22, 0.22)],
        "happiness": [(4.27, 0.22), (4.23, 0.17), (3.53, 0.20), (4.39, 0.18), (2.16, 0.22)],
    }
)

#: Table 3.14: assigned personalities, by the short names the thesis uses.
TABLE_3_14 = _rows(
    {
        "Routine": [(3.56, 0.52), (4.36, 0.23), (2.95, 0.41), (4.26, 0.21), (2.09, 0.28)],
        "Spontaneous": [(4.04, 0.30), (3.31, 0.68), (3.55, 0.30), (3.87, 0.41), (2.49, 0.39)],
        "Reserved": [(3.78, 0.37), (4.08, 0.27), (2.19, 0.43), (4.20, 0.18), (2.21, 0.28)],
        "Competitive": [(4.00, 0.25), (4.20, 0.21), (3.40, 0.24), (3.79, 0.41), (2.30, 0.22)],
        "Stability": [(4.04, 0.24), (4.28, 0.20), (3.38, 0.24), (4.38, 0.19), (1.89, 0.23)],
        "Adventurous": [(4.61, 0.21), (4.12, 0.20), (3.80, 0.28), (4.32, 0.18), (2.14, 0.21)],
        "Organized": [(4.11, 0.23), (4.52, 0.19), (3.36, 0.22), (4.40, 0.18), (2.02, 0.25)],
        "Energy": [(4.31, 0.28), (4.30, 0.24), (4.10, 0.32), (4.50, 0.22), (1.90, 0.32)],
        "Compassionate": [(4.10, 0.20), (4.27, 0.22), (3.48, 0.21), (4.56, 0.19), (2.06, 0.22)],
        "Instability": [(3.71, 0.68), (3.62, 0.73), (2.88, 0.64), (3.63, 0.80), (3.37, 0.96)],
    }
)

#: Table 3.15: characters (the data files spell "Winson Churchill" and "Hannibal Lector").
TABLE_3_15 = _rows(
    {
        "Harry Potter": [(4.35, 0.19), (4.19, 0.21), (3.31, 0.21), (4.43, 0.17), (2.25, 0.21)],
        "Luke Skywalker": [(4.21, 0.20), (4.26, 0.18), (3.36, 0.20), (4.53, 0.17), (2.09, 0.20)],
        "Indiana Jones": [(4.50, 0.17), (4.31, 0.22), (3.77, 0.21), (4.21, 0.19), (2.04, 0.23)],
        "James Bond": [(4.58, 0.21), (4.44, 0.18), (3.83, 0.21), (4.00, 0.23), (1.86, 0.20)],
        "Martin Luther King": [(4.53, 0.21), (4.45, 0.16), (3.80, 0.21), (4.70, 0.15), (1.91, 0.26)],
        "Winson Churchill": [(4.64, 0.16), (4.45, 0.16), (3.97, 0.27), (4.12, 0.26), (2.12, 0.24)],
        "Mahatma Gandhi": [(4.44, 0.22), (4.51, 0.17), (3.21, 0.29), (4.76, 0.14), (1.75, 0.20)],
        "Nelson Mandela": [(4.49, 0.20), (4.49, 0.17), (3.70, 0.22), (4.67, 0.16), (1.81, 0.21)],
        "Hannibal Lector": [(4.89, 0.12), (4.51, 0.27), (2.76, 0.46), (2.59, 0.57), (2.07, 0.46)],
        "Lord Voldemort": [(4.10, 0.57), (3.97, 0.72), (2.60, 0.63), (1.28, 0.40), (3.68, 0.76)],
        "Adolf Hitler": [(3.22, 0.83), (4.23, 0.61), (3.21, 0.65), (1.73, 0.59), (3.02, 0.79)],
        "Osama bin Laden": [(3.57, 0.57), (4.22, 0.40), (2.88, 0.50), (2.38, 0.60), (2.69, 0.59)],
        "Sauron": [(4.42, 0.45), (4.40, 0.45), (3.04, 0.48), (2.49, 0.70), (2.60, 0.65)],
        "Ursula": [(4.43, 0.30), (4.26, 0.20), (3.22, 0.44), (4.17, 0.31), (2.16, 0.28)],
        "Maleficent": [(4.67, 0.30), (4.25, 0.41), (3.07, 0.46), (2.38, 0.81), (2.42, 0.54)],
        "Darth Vader": [(3.84, 0.47), (4.58, 0.31), (2.88, 0.50), (2.20, 0.75), (2.33, 0.58)],
    }
)

#: Short names of the ten personality profiles, found by a keyword of their description in the data.
PROFILE_KEYWORDS: dict[str, str] = {
    "routine": "Routine",
    "spontaneous": "Spontaneous",
    "reserved": "Reserved",
    "competitive": "Competitive",
    "stability": "Stability",
    "adventurous": "Adventurous",
    "organized": "Organized",
    "energy": "Energy",
    "compassionate": "Compassionate",
    "instability": "Instability",
}


def profile_short(description: str) -> str:
    """The thesis's short name for a profile description (the description itself if none fits)."""
    words = set(re.findall(r"[a-z]+", description.lower()))
    if "instability" in words:
        return "Instability"
    for keyword, short in PROFILE_KEYWORDS.items():
        if keyword in words:
            return short
    return description


#: Which profile is the minimum / maximum of which dimension (Table 3.9).
PROFILE_TARGET: dict[str, tuple[str, str]] = {
    "Routine": ("Openness", "min"),
    "Spontaneous": ("Conscientiousness", "min"),
    "Reserved": ("Extraversion", "min"),
    "Competitive": ("Agreeableness", "min"),
    "Stability": ("Neuroticism", "min"),
    "Adventurous": ("Openness", "max"),
    "Organized": ("Conscientiousness", "max"),
    "Energy": ("Extraversion", "max"),
    "Compassionate": ("Agreeableness", "max"),
    "Instability": ("Neuroticism", "max"),
}

#: How the thesis names each factor level (the data files use short codes).
LEVEL_NAMES: dict[str, str] = {
    **{f"t{i}": f"T{i}" for i in range(1, 6)},
    **{f"v{i}": f"V{i}" for i in range(1, 6)},
    "n": "Arabic numeral",
    "al": "Lowercase Latin",
    "au": "Uppercase Latin",
    "rl": "Lowercase Roman",
    "ru": "Uppercase Roman",
    "f": "Ascending",
    "r": "Descending",
}

"""Published MAS-Resilience numbers (facts, cited), for "paper vs ours" tables.

Source: the thesis chapter "Social Collaboration" (the thesis version of arXiv 2408.00989), Tables 7.2
and 7.3 (GPT-3.5 and GPT-4o), as transcribed in specs/mas-resilience.md §8.
"""

from __future__ import annotations

import pandas as pd

#: Table 7.2: mean over the four tasks, by structure.
PAPER_BY_STRUCTURE = pd.DataFrame(
    {
        "linear": [55.62, 38.24, 38.27, 67.18, 30.08, 44.14],
        "flat": [54.37, 43.93, 40.25, 67.52, 56.92, 60.51],
        "hierarchical": [53.00, 46.57, 48.12, 67.79, 60.83, 64.01],
    },
    index=pd.Index(
        [
            "GPT-3.5 clean",
            "GPT-3.5 AutoTransform",
            "GPT-3.5 AutoInject",
            "GPT-4o clean",
            "GPT-4o AutoTransform",
            "GPT-4o AutoInject",
        ],
        name="condition",
    ),
)

#: Table 7.3: mean over systems, by task (translation is BLEURT-20, not chrF).
PAPER_BY_TASK = pd.DataFrame(
    {
        "humaneval": [64.70, 50.83, 39.1, 81.91, 73.78, 72.22],
        "ciar": [30.00, 22.67, 25.00, 60.00, 50.67, 51.33],
        "commonmt (BLEURT-20)": [69.10, 67.99, 67.85, 70.82, 65.12, 71.36],
        "faireval": [45.45, 43.68, 46.50, 54.17, 52.92, 54.33],
    },
    index=PAPER_BY_STRUCTURE.index,
)

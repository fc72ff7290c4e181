"""PsychoBench (thesis ch. 4 = ICLR 2024 "Who is ChatGPT?"): the human-norm columns of Tables 4.3-4.8 and
the norm-sample sizes of Table 4.2, compared with the norms llmpsych reads at run time from the official
``questionnaires.json`` (:func:`llmpsych.instruments.official.load_psychobench_scales`), which is what every
PsychoBench analysis tests the models against.

The printed norms are facts with their citation (thesis lines of seed 000); they were kept in
``tests/test_psychobench_fidelity.py`` before, which now imports them from here. The model columns of the
same tables need model answers the authors did not release (``registry.NEEDS_MODELS``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .cells import Cause, PrintedCell, Recomputed, printed

if TYPE_CHECKING:
    from ..instruments.scale import Scale

SYSTEM = "PsychoBench"
DATASET = "PsychoBench"

#: The tables' "Crowd" column (one decimal, "mean ± sd"), by (scale, subscale as printed): one entry per
#: printed norm group, (group, mean, sd, n), n from Table 4.2 (000:1094-1122; the gender counts where a
#: scale prints a norm per sex). Thesis Tables 4.3 (000:1188-1203), 4.4 (000:1213-1229), 4.7
#: (000:1298-1306) and 4.8 (000:1313-1322); spec psychobench-and-reliability.md §2.5.
NORMS: dict[tuple[str, str], tuple[tuple[str, float, float, int], ...]] = {
    ("BFI", "Openness"): (("Crowd", 3.9, 0.7, 1221),),
    ("BFI", "Conscientiousness"): (("Crowd", 3.5, 0.7, 1221),),
    ("BFI", "Extraversion"): (("Crowd", 3.2, 0.9, 1221),),
    ("BFI", "Agreeableness"): (("Crowd", 3.6, 0.7, 1221),),
    ("BFI", "Neuroticism"): (("Crowd", 3.3, 0.8, 1221),),
    ("EPQ-R", "Extraversion"): (("Male", 12.5, 6.0, 408), ("Female", 14.1, 5.1, 494)),
    ("EPQ-R", "Neuroticism"): (("Male", 10.5, 5.8, 408), ("Female", 12.5, 5.1, 494)),
    ("EPQ-R", "Psychoticism"): (("Male", 7.2, 4.6, 408), ("Female", 5.7, 3.9, 494)),
    ("EPQ-R", "Lying"): (("Male", 7.1, 4.3, 408), ("Female", 6.9, 4.0, 494)),
    ("DTDD", "Narcissism"): (("Crowd", 4.9, 1.8, 470),),
    ("DTDD", "Machiavellianism"): (("Crowd", 3.8, 1.6, 470),),
    ("DTDD", "Psychopathy"): (("Crowd", 2.5, 1.4, 470),),
    ("BSRI", "Masculine"): (("Male", 4.8, 0.9, 75), ("Female", 4.6, 0.7, 76)),
    ("BSRI", "Feminine"): (("Male", 5.3, 0.9, 75), ("Female", 5.7, 0.9, 76)),
    ("ICB", "Overall"): (("Crowd", 3.7, 0.8, 254),),
    ("ECR-R", "Anxiety"): (("Crowd", 2.9, 1.1, 388),),
    ("ECR-R", "Avoidance"): (("Crowd", 2.3, 1.0, 388),),
    ("GSE", "Overall"): (("Crowd", 29.6, 5.3, 19120),),
    ("LOT-R", "Overall"): (("Crowd", 14.7, 4.0, 1288),),
    ("LMS", "Rich"): (("Crowd", 3.8, 0.8, 5973),),
    ("LMS", "Motivator"): (("Crowd", 3.3, 0.9, 5973),),
    ("LMS", "Important"): (("Crowd", 4.0, 0.7, 5973),),
    ("EIS", "Overall"): (("Male", 124.8, 16.5, 111), ("Female", 130.9, 15.1, 218)),
    ("WLEIS", "SEA"): (("Crowd", 4.0, 1.1, 418),),
    ("WLEIS", "OEA"): (("Crowd", 3.8, 1.1, 418),),
    ("WLEIS", "UOE"): (("Crowd", 4.1, 0.9, 418),),
    ("WLEIS", "ROE"): (("Crowd", 4.2, 1.0, 418),),
    ("Empathy", "Overall"): (("Crowd", 4.9, 0.8, 366),),
}
#: Table 4.5 (000:1237-1279): CABIN's 41 vocations, "Crowd" column (mean, sd), n = 1,464 (Table 4.2), in
#: the table's row order. The vocations' names are not written here (data policy): row k is the k-th
#: vocation of the official questionnaires.json, whose order the table follows; :func:`human_norms` reads
#: the names from the file at run time, and a file without 41 vocations leaves the rows unmatched.
CABIN: tuple[tuple[float, float], ...] = (
    (2.4, 1.3),
    (3.1, 1.3),
    (2.5, 1.2),
    (2.2, 1.2),
    (3.0, 1.4),
    (3.0, 1.2),
    (3.6, 1.1),
    (3.6, 1.2),
    (3.3, 1.3),
    (2.9, 1.3),
    (3.2, 1.3),
    (3.0, 1.2),
    (3.3, 1.3),
    (3.4, 1.2),
    (3.3, 1.2),
    (2.9, 1.4),
    (2.9, 1.3),
    (3.3, 1.3),
    (3.2, 1.2),
    (2.8, 1.4),
    (3.2, 1.3),
    (3.2, 1.3),
    (3.0, 1.2),
    (3.8, 1.1),
    (3.7, 1.1),
    (3.9, 1.0),
    (2.9, 1.3),
    (2.6, 1.4),
    (3.3, 1.2),
    (3.3, 1.2),
    (3.2, 1.2),
    (3.1, 1.2),
    (2.9, 1.2),
    (3.1, 1.3),
    (3.0, 1.3),
    (3.3, 1.2),
    (3.3, 1.1),
    (3.0, 1.3),
    (2.9, 1.4),
    (2.3, 1.3),
    (3.1, 1.3),
)
CABIN_N = 1464
TABLES = {
    "BFI": ("Table 4.3", "000:1188-1203"),
    "EPQ-R": ("Table 4.3", "000:1188-1203"),
    "DTDD": ("Table 4.3", "000:1188-1203"),
    "BSRI": ("Table 4.4", "000:1213-1229"),
    "ICB": ("Table 4.4", "000:1213-1229"),
    "ECR-R": ("Table 4.4", "000:1213-1229"),
    "CABIN": ("Table 4.5", "000:1237-1279"),
    "GSE": ("Table 4.7", "000:1298-1306"),
    "LOT-R": ("Table 4.7", "000:1298-1306"),
    "LMS": ("Table 4.7", "000:1298-1306"),
    "EIS": ("Table 4.8", "000:1313-1322"),
    "WLEIS": ("Table 4.8", "000:1313-1322"),
    "Empathy": ("Table 4.8", "000:1313-1322"),
}
TABLE_4_2 = "000:1094-1122"
#: The data file's names of the printed subscales and groups.
SUBSCALES = {
    ("ECR-R", "Anxiety"): "Attachment-related Anxiety",
    ("ECR-R", "Avoidance"): "Attachment-related Avoidance",
    ("LMS", "Rich"): "Factor rich",
    ("LMS", "Motivator"): "Factor motivator",
    ("LMS", "Important"): "Factor important",
}
GROUPS = {
    ("BSRI", "Male"): "Workers (Men)",
    ("BSRI", "Female"): "Workers (Women)",
    ("EIS", "Male"): "Men",
    ("EIS", "Female"): "Women",
    ("LMS", "Crowd"): "Whole Sample",
}
#: The switch that tests against the printed population instead of the data file's (docs/statistics.md).
NORM_SWITCH = "--scale-file with the printed norms (a native scale file's `norms`, docs/statistics.md)"


def _scales(data_dir: Path | None) -> dict[str, Scale]:
    from ..data.sources import dataset_path
    from ..instruments.official import load_psychobench_scales

    dataset_path(DATASET, data_dir)  # DataError naming the folder when it is absent
    return load_psychobench_scales(data_dir)


def _norm(scales: dict[str, Scale], scale: str, subscale: str, group: str) -> tuple[float, float, int] | None:
    found = scales.get(scale)
    if found is None or subscale not in found.subscale_names:
        return None
    label = GROUPS.get((scale, group), group)
    for g in found.subscale(subscale).norms:
        if g.label == label:
            return g.mean, g.sd, g.n
    return None


def _cabin_rows(scales: dict[str, Scale]) -> list[tuple[str, tuple[float, float]]]:
    """Table 4.5's rows named by the official file's vocations (row k = the file's k-th vocation); rows the
    file cannot name (it holds no CABIN, or not 41 vocations) are named "row k" and find no norm."""
    found = scales.get("CABIN")
    names = [sub.name for sub in found.subscales] if found is not None else []
    if len(names) != len(CABIN):
        names = [f"row {k}" for k in range(1, len(CABIN) + 1)]
    return list(zip(names, CABIN, strict=True))


def human_norms(data_dir: Path | None) -> list[Recomputed]:
    """Tables 4.3-4.8, the human-norm columns (mean, SD), and their samples' n (Table 4.2), against the
    norms of the official questionnaires.json that llmpsych's analysis reads."""
    scales = _scales(data_dir)
    rows: list[tuple[str, str, str, float, float, int]] = [
        (scale, sub, group, mean, sd, n)
        for (scale, sub), groups in NORMS.items()
        for group, mean, sd, n in groups
    ]
    rows += [("CABIN", vocation, "Crowd", mean, sd, CABIN_N) for vocation, (mean, sd) in _cabin_rows(scales)]
    table_name = "Tables 4.2-4.8 (human norms)"
    missing = Cause("not-released", "the official questionnaires.json has no norm for this group")
    out = []
    sizes: dict[tuple[str, str], tuple[int, set[int]]] = {}
    for scale, sub, group, mean, sd, n in rows:
        table, lines = TABLES[scale]
        got = _norm(scales, scale, SUBSCALES.get((scale, sub), sub), group)
        for column, value, index in ((f"{group} mean", mean, 0), (f"{group} sd", sd, 1)):
            cell = PrintedCell(
                SYSTEM, table_name, f"{scale} {sub}", column, printed(value, 1), f"thesis {table} ({lines})"
            )
            out.append(
                Recomputed(cell, None, missing) if got is None else Recomputed(cell, float(got[index]))
            )
        found = sizes.setdefault((scale, group), (n, set()))[1]
        if got is not None:
            found.add(got[2])
    # Table 4.2 prints one sample (and its split by sex) per scale: one n cell per scale and printed group
    for (scale, group), (n, found) in sizes.items():
        cell = PrintedCell(
            SYSTEM, table_name, f"{scale} sample", f"{group} n", str(n), f"thesis Table 4.2 ({TABLE_4_2})"
        )
        if len(found) != 1:  # absent, or subscales with different samples: no one n to compare
            out.append(Recomputed(cell, None, None if found else missing))
            continue
        (ours,) = found
        cause = Cause(
            "convention",
            f"llmpsych tests against the norm sample of the official questionnaires.json (n = {ours:,}), as "
            f"the authors' code does; Table 4.2 describes another sample (n = {n:,}), whose mean and SD "
            "agree with the file's at the printed precision",
            NORM_SWITCH,
        )
        out.append(Recomputed(cell, float(ours), cause))
    return out

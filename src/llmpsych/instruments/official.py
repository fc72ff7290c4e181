"""Load the official PsychoBench / EmotionBench ``questionnaires.json`` files, unchanged on disk.

The official format is a JSON list of objects with ``name``, ``questions`` (string item numbers to
text), ``inner_setting`` (system prompt), ``prompt``, ``scale`` (= min + max of the response range),
``compute_mode`` (``SUM`` | ``AVG`` | ``SUM*2``), ``reverse`` (item numbers) and ``categories``
(subscales with optional ``crowd`` norms). The response range itself is only written inside the prompt
texts, so it is derived from them ("from 1 to 7") and cross-checked against ``scale``.

Known errors in the published data are fixed on load and each fix is recorded as a
:class:`~llmpsych.instruments.scale.Correction`; ``corrections=False`` loads the file as published.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.sources import data_file
from ..errors import DataError
from ..userfiles import parse_json, read_text
from .numbers import whole_number
from .scale import SCORING_MODES, Correction, Item, NormGroup, Scale, Subscale

OFFICIAL_FILE = "questionnaires.json"
DATASETS = ("PsychoBench", "EmotionBench")

OFFICIAL_LICENSE = (
    "GPL-3.0 repository with a 'research use only' notice; item texts keep their instruments' copyrights"
)


@dataclass(frozen=True)
class CorrectionRule:
    """A known error in published data: rename ``old`` to ``new`` in ``field`` of scale ``scale``."""

    scale: str
    field: str
    old: str
    new: str
    reason: str


CORRECTION_RULES: tuple[CorrectionRule, ...] = (
    CorrectionRule(
        "DTDD",
        "subscale name",
        "Neuroticism",
        "Narcissism",
        "the Dark Triad Dirty Dozen measures Machiavellianism, psychopathy and narcissism (Jonason & "
        "Webster 2010); the PsychoBench paper's tables print this subscale as Narcissism",
    ),
    CorrectionRule("EPQ-R", "subscale name", "Pschoticism", "Psychoticism", "spelling"),
    CorrectionRule("MJS", "subscale name", "Bahavioral Jealousy", "Behavioral Jealousy", "spelling"),
    CorrectionRule("CABIN", "subscale name", "Business Iniatives", "Business Initiatives", "spelling"),
)

UNSCORED_SCALES: Mapping[str, str] = {
    "16P": "it is scored only by the third-party 16personalities.com website, which llmpsych never calls",
}

# Instrument names and primary references (facts from the PsychoBench/EmotionBench papers).
KNOWN_INSTRUMENTS: Mapping[str, tuple[str, str]] = {
    "BFI": ("Big Five Inventory", "John & Srivastava 1999"),
    "EPQ-R": ("Eysenck Personality Questionnaire, Revised", "Eysenck, Eysenck & Barrett 1985"),
    "DTDD": ("Dark Triad Dirty Dozen", "Jonason & Webster 2010"),
    "BSRI": ("Bem Sex Role Inventory", "Bem 1974"),
    "CABIN": ("Comprehensive Assessment of Basic Interests", "Su, Tay, Liao, Zhang & Rounds 2019"),
    "ICB": ("Implicit Culture Belief", "Chao, Takeuchi & Farh 2017"),
    "ECR-R": ("Experiences in Close Relationships, Revised", "Fraley, Waller & Brennan 2000"),
    "GSE": ("General Self-Efficacy", "Schwarzer & Jerusalem 1995"),
    "LOT-R": ("Life Orientation Test, Revised", "Scheier, Carver & Bridges 1994"),
    "LMS": ("Love of Money Scale", "Tang et al. 2006"),
    "EIS": ("Emotional Intelligence Scale", "Schutte et al. 1998"),
    "WLEIS": ("Wong and Law Emotional Intelligence Scale", "Wong & Law 2002"),
    "Empathy": ("Empathy Scale (short form)", "Dietz & Kleinlogel, after Davis 1983"),
    "16P": ("16Personalities test (MBTI-style)", "16personalities.com"),
    "PANAS": ("Positive and Negative Affect Schedule", "Watson, Clark & Tellegen 1988"),
    "BFNE": ("Brief Fear of Negative Evaluation", "Leary 1983"),
    "FSS": ("Fear Survey Schedule III", "Arrindell et al. 1984"),
    "AGQ": ("Aggression Questionnaire", "Buss & Perry 1992"),
    "FDS": ("Frustration Discomfort Scale", "Harrington 2005"),
    "BDI": ("Beck Depression Inventory II", "Beck et al. 1996"),
    "DASS-21": ("Depression Anxiety Stress Scales, short form", "Henry & Crawford 2005"),
    "GASP": ("Guilt and Shame Proneness scale", "Cohen et al. 2011"),
    "MJS": ("Multidimensional Jealousy Scale", "Pfeiffer & Wong 1989"),
}

# Sources of the human norms as cited by the PsychoBench paper (thesis Table 4.2 / report Table 10).
NORM_SOURCES: Mapping[str, str] = {
    "BFI": "Srivastava et al. 2003 as cited by PsychoBench",
    "EPQ-R": "Eysenck, Eysenck & Barrett 1985 as cited by PsychoBench",
    "DTDD": "Jonason & Webster 2010 as cited by PsychoBench",
    "BSRI": "Arcand et al. 2020; Auster & Ohm 2000 as cited by PsychoBench",
    "CABIN": "Su et al. 2019 as cited by PsychoBench",
    "ICB": "Chao, Takeuchi & Farh 2017 as cited by PsychoBench",
    "ECR-R": "Fraley et al. 2011 as cited by PsychoBench",
    "GSE": "Scholz et al. 2002 as cited by PsychoBench",
    "LOT-R": "Walsh et al. 2015 as cited by PsychoBench",
    "LMS": "Tang et al. 2006 as cited by PsychoBench",
    "EIS": "Schutte et al. 1998 as cited by PsychoBench",
    "WLEIS": "Law, Wong & Song 2004 as cited by PsychoBench",
    "Empathy": "Tian & Robertson 2019 as cited by PsychoBench",
}

_NUMBER = r"(-?[0-9]+)"
_RANGE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"\bfrom\s+{_NUMBER}\s*(?:to|-|–)\s*{_NUMBER}\b", re.IGNORECASE),
    re.compile(rf"\bscale\s+of\s+{_NUMBER}\s*(?:to|-|–)\s*{_NUMBER}\b", re.IGNORECASE),
    re.compile(rf"\bbetween\s+{_NUMBER}\s+and\s+{_NUMBER}\b", re.IGNORECASE),
)


def derive_response_range(texts: Sequence[str | None], *, where: str) -> tuple[int, int]:
    """The response range written in prompt texts ("from 1 to 7"); exactly one distinct range allowed."""
    found: list[tuple[int, int]] = []
    for text in texts:
        if not text:
            continue
        for pattern in _RANGE_PATTERNS:
            for match in pattern.finditer(text):
                pair = (int(match.group(1)), int(match.group(2)))
                if pair not in found:
                    found.append(pair)
    if not found:
        raise DataError(f"{where}: cannot derive the response range (no 'from MIN to MAX' in its prompts)")
    if len(found) > 1:
        listed = ", ".join(f"{a}-{b}" for a, b in found)
        raise DataError(f"{where}: its prompts name different response ranges ({listed})")
    low, high = found[0]
    if low >= high:
        raise DataError(f"{where}: the response range in its prompts is {low}-{high}, not ascending")
    return low, high


def scale_from_official(
    entry: Mapping[str, Any],
    *,
    origin: str,
    corrections: bool = True,
    dataset: str | None = None,
) -> Scale:
    """Build a :class:`Scale` from one object of an official ``questionnaires.json``."""
    if not isinstance(entry, Mapping):
        raise DataError(f"{origin}: every entry must be a JSON object, got {type(entry).__name__}")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise DataError(f"{origin}: an entry has no 'name'")
    where = f"{origin}: scale {name!r}"
    for key in ("questions", "scale", "compute_mode", "categories"):
        if key not in entry:
            raise DataError(f"{where}: missing field '{key}'")
    system_prompt = _optional_text(entry, "inner_setting", where)
    instructions = _optional_text(entry, "prompt", where)
    response_min, response_max = derive_response_range([system_prompt, instructions], where=where)
    declared = entry["scale"]
    if isinstance(declared, bool) or not isinstance(declared, int):
        raise DataError(f"{where}: field 'scale' must be a whole number, got {declared!r}")
    if declared != response_min + response_max:
        raise DataError(
            f"{where}: field 'scale' is {declared} but the prompts give the range "
            f"{response_min}-{response_max} (expected scale = min + max = {response_min + response_max})"
        )
    mode = entry["compute_mode"]
    if mode not in SCORING_MODES:
        expected = ", ".join(SCORING_MODES)
        raise DataError(f"{where}: unknown compute_mode {mode!r} (expected one of {expected})")

    questions = entry["questions"]
    if not isinstance(questions, Mapping) or not questions:
        raise DataError(f"{where}: 'questions' must be a non-empty object of item number to text")
    reverse = _int_list(entry.get("reverse", []), f"{where}: 'reverse'")
    items: list[Item] = []
    for key, text in questions.items():
        index = _item_number(key, where)
        if not isinstance(text, str):
            raise DataError(f"{where}: item {key} text must be a string")
        items.append(Item(index=index, text=text, reverse=index in reverse))
    known = {item.index for item in items}
    stray = sorted(set(reverse) - known)
    if stray:
        span = f"{min(known)}-{max(known)}"
        raise DataError(f"{where}: reverse key {stray[0]} is not an item (items are {span})")

    applied: list[Correction] = []
    subscales = [
        _subscale_from_official(category, name, where, corrections, applied, dataset)
        for category in _category_list(entry["categories"], where)
    ]
    title, citation = KNOWN_INSTRUMENTS.get(name, (None, None))
    unscored_reason = UNSCORED_SCALES.get(name)
    return Scale(
        name=name,
        title=title,
        items=tuple(items),
        response_min=response_min,
        response_max=response_max,
        scoring=mode,
        subscales=tuple(subscales),
        system_prompt=system_prompt,
        instructions=instructions,
        unscored=unscored_reason is not None,
        unscored_reason=unscored_reason,
        source=f"CUHK-ARISE/{dataset} {OFFICIAL_FILE}" if dataset else origin,
        license=OFFICIAL_LICENSE if dataset in DATASETS else None,
        citation=citation,
        corrections=tuple(applied),
        origin=origin,
    )


def load_official_file(
    path: str | os.PathLike[str], *, corrections: bool = True, dataset: str | None = None
) -> list[Scale]:
    """Every scale of an official-format file, in file order (``dataset`` defaults to the folder name)."""
    file = Path(path)
    data = read_json(file)
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list):
        raise DataError(f"{file}: expected a JSON list of questionnaires, got {type(data).__name__}")
    dataset = dataset or (file.parent.name if file.parent.name in DATASETS else None)
    origin = str(file)
    scales = [scale_from_official(e, origin=origin, corrections=corrections, dataset=dataset) for e in data]
    names = [s.name for s in scales]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise DataError(f"{file}: scale {duplicated[0]!r} is defined more than once")
    return scales


def official_file(dataset: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Path of a dataset's ``questionnaires.json`` in the data directory (``--data-dir`` or the default)."""
    return data_file(dataset, OFFICIAL_FILE, Path(data_dir) if data_dir is not None else None)


def load_dataset_scales(
    dataset: str, data_dir: str | os.PathLike[str] | None = None, *, corrections: bool = True
) -> dict[str, Scale]:
    """The scales of ``PsychoBench`` or ``EmotionBench`` by name, read from the data directory."""
    if dataset not in DATASETS:
        raise DataError(f"unknown dataset {dataset!r} (expected one of {', '.join(DATASETS)})")
    scales = load_official_file(official_file(dataset, data_dir), corrections=corrections, dataset=dataset)
    return {scale.name: scale for scale in scales}


def load_psychobench_scales(
    data_dir: str | os.PathLike[str] | None = None, *, corrections: bool = True
) -> dict[str, Scale]:
    """PsychoBench's 13 scales plus 16P (unscored), by name."""
    return load_dataset_scales("PsychoBench", data_dir, corrections=corrections)


def load_emotionbench_scales(
    data_dir: str | os.PathLike[str] | None = None, *, corrections: bool = True
) -> dict[str, Scale]:
    """EmotionBench's PANAS and its eight emotion-specific scales, by name."""
    return load_dataset_scales("EmotionBench", data_dir, corrections=corrections)


#: Largest JSON data file read (the official questionnaires.json is 0.2 MB; a released save is 3 MB).
MAX_JSON_FILE_BYTES = 64 * 2**20


def read_json(path: Path, limit: int = MAX_JSON_FILE_BYTES, what: str = "JSON file") -> Any:
    """Parse a JSON file of at most ``limit`` bytes (the one bounded reader and safe parser of
    :mod:`llmpsych.userfiles`), turning every failure into one :class:`DataError` line."""
    return parse_json(read_text(path, what, limit), str(path))


# -- helpers ------------------------------------------------------------------------------------
def _subscale_from_official(
    category: Any,
    scale_name: str,
    where: str,
    corrections: bool,
    applied: list[Correction],
    dataset: str | None,
) -> Subscale:
    if not isinstance(category, Mapping):
        raise DataError(f"{where}: every category must be an object")
    name = category.get("cat_name")
    if not isinstance(name, str) or not name.strip():
        raise DataError(f"{where}: a category has no 'cat_name'")
    if corrections:
        for rule in CORRECTION_RULES:
            if rule.scale == scale_name and rule.field == "subscale name" and rule.old == name:
                applied.append(Correction(scale_name, rule.field, rule.old, rule.new, rule.reason))
                name = rule.new
    indices = tuple(_int_list(category.get("cat_questions"), f"{where}, category {name!r}: 'cat_questions'"))
    norms = tuple(
        _norm_from_crowd(crowd, f"{where}, category {name!r}", scale_name, dataset)
        for crowd in category.get("crowd", []) or []
    )
    return Subscale(name=name, item_indices=indices, norms=norms)


def _norm_from_crowd(crowd: Any, where: str, scale_name: str, dataset: str | None) -> NormGroup:
    if not isinstance(crowd, Mapping):
        raise DataError(f"{where}: every crowd entry must be an object")
    for key in ("crowd_name", "mean", "std", "n"):
        if key not in crowd:
            raise DataError(f"{where}: a crowd entry is missing '{key}'")
    n = crowd["n"]
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    via = f"values from CUHK-ARISE/{dataset} {OFFICIAL_FILE}" if dataset else "values from the data file"
    source = NORM_SOURCES.get(scale_name)
    return NormGroup(
        label=str(crowd["crowd_name"]),
        mean=crowd["mean"],
        sd=crowd["std"],
        n=n,
        citation=f"{source}; {via}" if source else via,
    )


def _category_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise DataError(f"{where}: 'categories' must be a list")
    return value


def _optional_text(entry: Mapping[str, Any], key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise DataError(f"{where}: field '{key}' must be text")
    return value


def _item_number(key: Any, where: str) -> int:
    number = whole_number(str(key))  # ASCII digits: "٣" or "²" is not an item number
    if number is None or number < 1:
        raise DataError(f"{where}: item key {key!r} is not a positive item number")
    return number


def _int_list(value: Any, where: str) -> list[int]:
    if not isinstance(value, list):
        raise DataError(f"{where} must be a list of item numbers")
    numbers: list[int] = []
    for element in value:
        if isinstance(element, bool) or not isinstance(element, int):
            raise DataError(f"{where} must hold whole item numbers, got {element!r}")
        numbers.append(element)
    return numbers

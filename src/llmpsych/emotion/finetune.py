"""Tuning models to align with humans (thesis §5.5.3, Table 5.9, 000:1978-1996): split, export, evaluate.

The thesis splits the 1,266 human responses of ``crowd.xlsx`` into 866 for fine-tuning and 400 for
testing, fine-tunes GPT-3.5-Turbo (OpenAI) and LLaMA-3.1-8B (LoRA), and compares the negative affect of
the vanilla and fine-tuned models with the test humans' in the default and the evoked state. The authors
did not publish the split, the training-example format or the evaluation protocol (spec §10.8), so:

* **Split** (:func:`split_people`): stratified by factor, seeded. Each factor holds out
  ``test_size × n_factor / n`` people, rounded down, and the remaining places go to the factors with the
  largest remainders (ties in factor order); within a factor the people are drawn with
  ``random.Random(f"{seed}:{factor}")``. A person is identified by their column position in ``crowd.xlsx``
  (1-based, file order). Seed 0 and 400 people by default.
* **Export** (:func:`export_split`): OpenAI chat fine-tuning JSONL, two examples per person: the default
  measure (no situation) and the evoked one (the situation the person read), each a system message, the
  user prompt exactly as an EmotionBench run sends it (items in their original order) and the person's
  answers as the assistant's reply (``index: score`` lines). People with a blank PANAS item give no
  example for that measure (counted in ``split.json``).
* **Evaluation** (``experiment = "heldout"``): the default runs and one evoked run (``runs``) per held-out
  person in the situation that person read, through the normal run; the report adds the Table 5.9 rows
  (negative affect, default and evoked, mean ± SD) for the model and the held-out humans.

``crowd.xlsx`` column ``<Emotion>_F<f>S<s>`` names the situation as the ``s``-th of factor ``f`` in
``situations.json``: the released model runs use exactly the first five situations of every factor
(``scenario-0`` … ``scenario-4``), the same set the humans answered.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, DataError
from ..instruments.administration import item_block
from ..instruments.scale import Scale
from ..runs.task import WorkUnit
from .changes import score_answers
from .crowd import Respondent
from .prompts import PromptSettings, build_prompt
from .situations import Situation, SituationSet

#: Table 5.9 of the thesis (000:1987-1988): negative affect, mean and SD, on the authors' test set.
THESIS_TABLE_5_9: dict[str, dict[str, tuple[float, float]]] = {
    "Human": {"default": (14.2, 6.4), "evoked": (25.9, 9.7)},
    "GPT-3.5 (V)": {"default": (25.9, 0.3), "evoked": (24.8, 8.5)},
    "GPT-3.5 (FT)": {"default": (10.6, 0.5), "evoked": (25.2, 9.6)},
    "LLaMA-3.1-8B (V)": {"default": (33.0, 4.5), "evoked": (36.5, 7.7)},
    "LLaMA-3.1-8B (FT)": {"default": (10.3, 1.1), "evoked": (15.0, 6.4)},
}


@dataclass(frozen=True)
class Person:
    """A respondent of ``crowd.xlsx`` with their position (1-based column order among respondents)."""

    id: int
    respondent: Respondent

    @property
    def factor(self) -> str:
        """The factor of the situation the person read."""
        return self.respondent.factor


def split_people(
    people: Sequence[Respondent], test_size: int = 400, seed: int = 0
) -> tuple[list[Person], list[Person]]:
    """``(train, test)``: a seeded split stratified by factor (module docstring), both in file order."""
    n = len(people)
    if not 1 <= test_size < n:
        raise ConfigError(f"test_size {test_size}: must be between 1 and {n - 1} (people in crowd.xlsx: {n})")
    everyone = [Person(i, p) for i, p in enumerate(people, start=1)]
    by_factor: dict[str, list[Person]] = {}
    for person in everyone:
        by_factor.setdefault(person.factor, []).append(person)
    exact = {f: test_size * len(ps) / n for f, ps in by_factor.items()}
    quota = {f: math.floor(v) for f, v in exact.items()}
    order = list(by_factor)
    leftover = test_size - sum(quota.values())
    for f in sorted(order, key=lambda f: (-(exact[f] - quota[f]), order.index(f)))[:leftover]:
        quota[f] += 1
    held: set[int] = set()
    for f, members in by_factor.items():
        rng = random.Random(f"{seed}:{f}")
        held.update(p.id for p in rng.sample(members, quota[f]))
    return [p for p in everyone if p.id not in held], [p for p in everyone if p.id in held]


def situation_of(person: Person, situations: SituationSet) -> Situation:
    """The situation the person read (the ``s``-th of their factor in ``situations.json``)."""
    factor = situations.factor(person.factor)
    position = person.respondent.situation
    if not 1 <= position <= len(factor.situations):
        raise DataError(
            f"crowd.xlsx respondent {person.id} ({person.factor} S{position}): {person.factor} has "
            f"{len(factor.situations)} situations"
        )
    return factor.situations[position - 1]


def chat_example(
    scale: Scale, answers: dict[int, int], situation: str | None, settings: PromptSettings
) -> dict[str, Any] | None:
    """One fine-tuning example (``{"messages": [...]}``): the prompt as a run sends it, the person's answers
    as the reply; None when an item is blank."""
    order = list(scale.item_indices)
    if any(i not in answers for i in order):
        return None
    system, instructions = build_prompt(scale, situation, settings)
    user = f"{instructions}\n\n{item_block(scale, order)}".strip()
    reply = "\n".join(f"{i}: {answers[i]}" for i in order)
    messages = [{"role": "system", "content": system}] if system else []
    return {
        "messages": [*messages, {"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    }


def export_split(
    people: Sequence[Respondent],
    scale: Scale,
    situations: SituationSet,
    out_dir: Path,
    *,
    crowd_file: Path,
    test_size: int = 400,
    seed: int = 0,
    settings: PromptSettings | None = None,
) -> dict[str, Any]:
    """Write ``train.jsonl``, ``test.jsonl``, ``split.csv`` and ``split.json`` into ``out_dir``; return the
    contents of ``split.json`` (counts, seed, the crowd file's sha256, skipped examples)."""
    from ..report.files import atomic_open, atomic_write_text, output_dir

    settings = settings or PromptSettings()
    train, test = split_people(people, test_size, seed)
    output_dir(out_dir)
    counts: dict[str, Any] = {}
    for name, part in (("train", train), ("test", test)):
        examples = skipped = 0
        with atomic_open(out_dir / f"{name}.jsonl") as handle:
            for person in part:
                text = situation_of(person, situations).text
                for answers, situation in (
                    (person.respondent.default, None),
                    (person.respondent.evoked, text),
                ):
                    example = chat_example(scale, answers, situation, settings)
                    if example is None:
                        skipped += 1
                        continue
                    handle.write(json.dumps(example, ensure_ascii=False) + "\n")
                    examples += 1
        counts[name] = {"people": len(part), "examples": examples, "skipped_blank": skipped}
    rows = ["person,factor,situation,split"]
    held = {p.id for p in test}
    for person in sorted([*train, *test], key=lambda p: p.id):
        split = "test" if person.id in held else "train"
        rows.append(f"{person.id},{person.factor},{person.respondent.situation},{split}")
    atomic_write_text(out_dir / "split.csv", "\n".join(rows) + "\n")
    info = {
        "seed": seed,
        "test_size": test_size,
        "people": len(people),
        "crowd_sha256": hashlib.sha256(crowd_file.read_bytes()).hexdigest(),
        "prompt": {"version": settings.version, "template": settings.template},
        **counts,
        "format": "OpenAI chat fine-tuning JSONL: {'messages': [system, user, assistant]} per line",
    }
    atomic_write_text(out_dir / "split.json", json.dumps(info, indent=2) + "\n")
    return info


def heldout_units(test: Sequence[Person], situations: SituationSet, runs: int) -> list[WorkUnit]:
    """One evoked unit per held-out person and run, in the situation the person read."""
    units = []
    for person in test:
        s = situation_of(person, situations)
        payload = {"kind": "evoked", "factor": s.factor, "situation": s.index + 1, "text": s.text}
        for r in range(1, runs + 1):
            units.append(
                WorkUnit(f"heldout/p{person.id:04d}/run{r:03d}", {**payload, "person": person.id, "run": r})
            )
    return units


def _mean_sd(values: Sequence[float]) -> dict[str, Any]:
    clean = np.array([v for v in values if not math.isnan(v)], dtype=float)
    n = len(clean)
    return {
        "mean": float(clean.mean()) if n else None,
        "sd": float(clean.std(ddof=1)) if n >= 2 else None,
        "n": n,
    }


def human_heldout(test: Sequence[Person], scale: Scale) -> dict[str, dict[str, dict[str, Any]]]:
    """The held-out humans' PA and NA, default and evoked (mean, sample SD, n; blank items left out)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for state in ("default", "evoked"):
        scores = [score_answers(scale, getattr(p.respondent, state), published=True) for p in test]
        out[state] = {m: _mean_sd([s[m] for s in scores]) for m in ("positive", "negative")}
    return out


def heldout_summary(
    model: Sequence[dict[str, float]],
    default: Sequence[dict[str, float]],
    humans: dict[str, dict[str, dict[str, Any]]],
) -> dict[str, Any]:
    """Table 5.9's cells: model and held-out humans, default and evoked, PA and NA (mean, SD, n)."""
    mine = {
        "default": {m: _mean_sd([d[m] for d in default]) for m in ("positive", "negative")},
        "evoked": {m: _mean_sd([e[m] for e in model]) for m in ("positive", "negative")},
    }
    return {
        "model": mine,
        "humans": humans,
        "thesis": {k: {s: list(v) for s, v in c.items()} for k, c in THESIS_TABLE_5_9.items()},
    }


def _cell(cell: dict[str, Any]) -> str:
    if cell.get("mean") is None:
        return "–"
    sd = cell.get("sd")
    return f"{cell['mean']:.1f} ± {sd:.1f}" if sd is not None else f"{cell['mean']:.1f}"


def table_5_9(columns: dict[str, dict[str, Any]], humans: dict[str, Any], measure: str = "negative") -> str:
    """Markdown in the layout of Table 5.9: rows Default and Evoked, a column for the held-out humans and
    one per model (``columns``: label -> a run's ``heldout`` summary's ``model`` part)."""
    letter = "N" if measure == "negative" else "P"
    labels = ["Human (held out)", *columns]
    lines = ["| Models | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for state in ("default", "evoked"):
        cells = [_cell(humans[state][measure]), *(_cell(c[state][measure]) for c in columns.values())]
        lines.append(f"| {state.capitalize()} ({letter}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def thesis_table() -> str:
    """Table 5.9 as printed (000:1987-1988), for reference."""
    labels = list(THESIS_TABLE_5_9)
    lines = ["| Models (thesis) | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for state in ("default", "evoked"):
        cells = [f"{m:.1f} ± {s:.1f}" for m, s in (THESIS_TABLE_5_9[k][state] for k in labels)]
        lines.append(f"| {state.capitalize()} (N) | " + " | ".join(cells) + " |")
    return "\n".join(lines)

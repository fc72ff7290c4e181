"""The item-level long format every validity analysis is fitted on, from run folders and from an imported
human sample, and its export for other psychometric tools.

``items`` (one row per respondent x item; columns :data:`ITEM_COLUMNS`, described in
:mod:`llmpsych.runs.items` and ``docs/validity.md``) comes from :func:`llmpsych.load_runs` for runs, and
from :func:`human_items` for a file of people's answers in ``psychobench import-answers``' format (long
``scale, run, item, answer`` or wide ``run, 1, 2, ...``; its ``run`` is the person's number), checked by
the same strict rules. :func:`item_frame` puts both together.

:func:`export_items` writes ``items.csv`` (the long format as is) and, per scale, ``wide_<scale>.csv``:
one row per respondent, the group columns, then one column per item (``item_1``, ``item_2``, ...; an empty
cell: no valid answer), the shape mirt, girth and semopy read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from ..errors import DataError
from ..instruments.scale import Scale
from ..report.files import output_dir, write_csv
from ..runs.frames import PathLike, load_runs
from ..runs.items import GROUP_COLUMNS, ITEM_COLUMNS, ScaleItems, require_item_frame, typed_items

TEXT_COLUMNS = ("respondent", "source", *GROUP_COLUMNS, "scale", "subscale", "status")
#: Largest items.csv read back (a million rows take about 120 MB).
MAX_ITEMS_BYTES = 500_000_000


def item_frame(
    runs: PathLike | Iterable[PathLike] | None = None,
    *,
    human: Path | None = None,
    scale_files: Sequence[Path] = (),
    data_dir: Path | None = None,
    label: str | None = None,
) -> pd.DataFrame:
    """The long format of the runs named (folders, sweeps, globs; :func:`llmpsych.load_runs`) and of a
    human sample (``human``, with its scales from ``scale_files`` or the official data); at least one."""
    parts = []
    named = [runs] if isinstance(runs, str | Path) else list(runs or [])
    if named:
        parts.append(load_runs(named).items)
    if human is not None:
        scales = human_scales(scale_files, data_dir)
        parts.append(human_items(human, scales, label or human.stem))
    if not parts:
        raise DataError("no answers: name run folders or a human sample (--human FILE)")
    frame = pd.concat([p for p in parts if not p.empty] or parts[:1], ignore_index=True)
    if frame.empty:
        raise DataError(
            "these runs hold no item-level answers (no scale was administered, or no unit finished)"
        )
    return typed_items(frame)


def human_scales(scale_files: Sequence[Path], data_dir: Path | None) -> dict[str, Scale]:
    """The scales a human sample can name: those of the scale files, or every official PsychoBench scale
    (from ``data_dir`` or the configured data directory) when no file is given."""
    from ..instruments.native import load_scale_file
    from ..instruments.official import load_psychobench_scales

    if scale_files:
        return {scale.name: scale for path in scale_files for scale in load_scale_file(path)}
    return {name: s for name, s in load_psychobench_scales(data_dir).items() if not s.unscored}


def human_items(path: Path, scales: dict[str, Scale], label: str) -> pd.DataFrame:
    """A human sample (``psychobench import-answers`` format) as the long format: respondent
    ``<label>#<run>``, source ``person``, ``run`` = ``label``; an empty answer is ``missing``."""
    from ..psychobench.imports import read_answer_rows

    rows = read_answer_rows(path, scales)
    shapes = {name: ScaleItems.of(scale) for name, scale in scales.items()}
    answered = {(r.scale, r.run, r.item): r.answer for r in rows}
    people = sorted({(r.scale, r.run) for r in rows}, key=lambda k: (list(scales).index(k[0]), k[1]))
    records = []
    for name, run in people:
        shape = shapes[name]
        for number, subscale, reverse in shape.items:
            value = answered.get((name, run, number))
            records.append(
                {
                    "respondent": f"{label}#{run}",
                    "source": "person",
                    **dict.fromkeys(GROUP_COLUMNS, ""),
                    "run": label,
                    "scale": name,
                    "item": number,
                    "subscale": subscale,
                    "reverse": reverse,
                    "response": float("nan") if value is None else float(value),
                    "status": "missing" if value is None else "answered",
                    "min": shape.low,
                    "max": shape.high,
                }
            )
    return typed_items(pd.DataFrame(records, columns=ITEM_COLUMNS))


def wide_name(scale: str) -> str:
    """The wide file of a scale: ``wide_<scale>.csv``, other characters than letters, digits, ``.``, ``-``
    and ``_`` replaced by ``_``."""
    return f"wide_{re.sub(r'[^A-Za-z0-9._-]', '_', scale)}.csv"


def wide_frame(items: pd.DataFrame, scale: str) -> pd.DataFrame:
    """One scale's respondents x items (``respondent``, ``source``, the group columns, ``item_<n>``)."""
    part = items[items["scale"] == scale]
    numbers = sorted(int(i) for i in part["item"].unique())
    keys = ["respondent", "source", *GROUP_COLUMNS]
    people = part.drop_duplicates("respondent").set_index("respondent")[keys[1:]]
    values = part.pivot_table(
        index="respondent", columns="item", values="response", aggfunc="first", dropna=False
    )
    values = values.reindex(index=people.index, columns=numbers)
    values.columns = [f"item_{n}" for n in numbers]
    return people.join(values).reset_index()[[*keys, *values.columns]]


def export_items(items: pd.DataFrame, out: Path) -> list[Path]:
    """``items.csv`` and one ``wide_<scale>.csv`` per scale in ``out``; returns the files written."""
    require_item_frame(items)
    folder = output_dir(out)
    written = [write_csv(items, folder / "items.csv")]
    names: dict[str, str] = {}
    for scale in dict.fromkeys(items["scale"]):
        name = wide_name(str(scale))
        if name in names:
            raise DataError(f"scales {names[name]!r} and {scale!r} would share the file {name}")
        names[name] = str(scale)
        written.append(write_csv(wide_frame(items, str(scale)), folder / name))
    return written


def read_items(path: Path) -> pd.DataFrame:
    """An ``items.csv`` written by :func:`export_items`, read back with its types."""
    import io

    from ..userfiles import read_text

    text = read_text(path, "items file", MAX_ITEMS_BYTES)
    try:
        frame = pd.read_csv(
            io.StringIO(text), keep_default_na=False, na_values=[""], dtype=dict.fromkeys(TEXT_COLUMNS, str)
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path}: cannot read as CSV ({str(exc).splitlines()[0][:120]})") from None
    require_item_frame(frame)
    try:
        return typed_items(frame)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{path}: a column has the wrong type ({str(exc)[:120]})") from None


__all__ = [
    "ITEM_COLUMNS",
    "export_items",
    "human_items",
    "human_scales",
    "item_frame",
    "read_items",
    "require_item_frame",
    "wide_frame",
]

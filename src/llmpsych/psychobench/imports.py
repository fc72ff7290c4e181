"""Import item-level answers produced elsewhere (another harness, people) as a PsychoBench run folder.

The answers file is long and tidy, like the ``answers.csv`` a run writes: one row per (scale, run, item)
with the columns ``scale`` (optional when one scale is imported), ``run`` (a positive whole number: a
run, a respondent), ``item``, ``answer`` and optionally ``position``. CSV or JSON Lines (``.jsonl``, one
object per line with the same keys). A CSV may also be wide, as people's data often is: ``run``
(and ``scale``), then one column per item number, one row per run or respondent.

Every cell is checked against the scale by the strict whole-number rule (``instruments/numbers.py``);
nothing is coerced: ``3.0``, ``NaN``, ``99`` on a 1-5 scale, a formula (``=1+2``), an unknown item or
scale, a duplicate row and a (scale, run) without a row for each of its items each stop the import
with one line naming the file and the row (as a spreadsheet counts it, the header being row 1). An
empty answer cell (JSON ``null``) is an item without a valid answer, as in a run's ``answers.csv``, so
that file imports back unchanged.

The result is an ordinary run folder (``run.sqlite`` with the config, one done unit per (scale, run),
``manifest.json``) analysed by the PsychoBench analysis itself, so ``llmpsych analyze`` and
``psychobench compare`` treat it exactly like a run. Its config records the answers file's sha256 and
the scale files' text; it cannot be resumed (there is no model).
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError, LlmpsychError
from ..instruments.numbers import JsonFloat, whole_number
from ..instruments.scale import Scale
from ..report.files import atomic_write_text
from ..runs.config import parse_run_config
from ..runs.manifest import build_manifest
from ..runs.runner import MANIFEST_FILE, analyze_run
from ..runs.store import STORE_FILE, RunStore, finish_unit_statements, run_lock
from ..userfiles import parse_json, read_bytes, read_text

COLUMNS = ("scale", "run", "item", "answer", "position")
#: An import holds at most this many rows (a million rows is 10,000 people x 100 items).
MAX_ROWS = 1_000_000
#: Largest answers file read (a million rows of ``SCALE,1000,100,5`` take about 20 MB).
MAX_BYTES = 200_000_000
#: Runs (respondents) per scale, the bound of ``--runs``.
MAX_RUNS = 1000
_FORMULA_START = ("=", "+", "@", "\t", "\r")


@dataclass(frozen=True)
class AnswerRow:
    """One checked row: where it was, and what it says (``answer`` None: no valid answer)."""

    row: int
    scale: str
    run: int
    item: int
    answer: int | None
    position: int | None


def import_answers(
    answers: Path,
    out: Path,
    *,
    scale_files: list[Path],
    scales: list[str] | None = None,
    data_dir: Path | None = None,
    label: str | None = None,
) -> list[Path]:
    """Check ``answers`` against the scales and write a run folder at ``out``; return the files written."""
    from .task import PsychoBenchTask

    if (out / STORE_FILE).exists():
        raise LlmpsychError(f"{out} already holds a run", "choose a new --out")
    options: dict[str, Any] = {"scale_file": [str(p) for p in scale_files]}
    if scales is not None:
        options["scale"] = scales
    base: dict[str, Any] = {
        "task": "psychobench",
        "model": label or f"imported:{answers.stem}",
        "cache": False,
    }
    if data_dir is not None:
        base["data_dir"] = str(data_dir)
    first = PsychoBenchTask(parse_run_config({**base, "options": options}, "import-answers"))
    chosen = {scale.name: scale for scale in first.scales}
    rows = read_answer_rows(answers, chosen)
    results = build_results(answers, rows, chosen)
    runs = max(sum(1 for r in results if r["scale"] == name) for name in {r["scale"] for r in results})
    digest = hashlib.sha256(read_bytes(answers, "answers file", MAX_BYTES)).hexdigest()
    imported = {"file": answers.name, "path": str(answers.resolve()), "sha256": digest, "rows": len(rows)}
    options = {**first.config.options, "runs": runs, "imported": imported}
    config = parse_run_config({**base, "options": options}, "import-answers")
    PsychoBenchTask(config)  # the recorded scale files load again from their stored text

    out.mkdir(parents=True, exist_ok=True)
    with run_lock(out):
        _write_store(out, config, results, [answers, *first.data_files()])
        return analyze_run(out)


def _write_store(out: Path, config: Any, results: list[dict[str, Any]], files: list[Path]) -> None:
    if (out / STORE_FILE).exists() or (out / STORE_FILE).is_symlink():
        raise LlmpsychError(f"{out} already holds a run", "choose a new --out")
    with RunStore.in_dir(out, create=True) as store:
        store.set_meta("config", config.stored())
        units = [(f"{r['scale']}-run{r['run']:03d}", {"scale": r["scale"], "run": r["run"]}) for r in results]
        store.add_units(units)
        store.write(
            s
            for (uid, _), result in zip(units, results, strict=True)
            for s in finish_unit_statements(uid, result)
        )
        manifest = build_manifest(config, {}, files, len(units))
        store.set_meta("manifest", manifest)
        atomic_write_text(out / MANIFEST_FILE, json.dumps(manifest, indent=2) + "\n")


def read_answer_rows(path: Path, scales: dict[str, Scale]) -> list[AnswerRow]:
    """Every row of a CSV or JSON Lines answers file, each checked against its scale."""
    text = read_text(path, "answers file", MAX_BYTES, encoding="utf-8-sig")
    records = _jsonl_records(path, text) if path.suffix.lower() == ".jsonl" else _csv_records(path, text)
    rows: list[AnswerRow] = []
    seen: dict[tuple[str, int, int], int] = {}
    for number, record in records:
        if len(rows) >= MAX_ROWS:
            raise DataError(f"{path}: more than {MAX_ROWS:,} rows", "split the file by scale")
        row = _check_row(path, number, record, scales)
        key = (row.scale, row.run, row.item)
        if key in seen:
            raise DataError(
                f"{path}, row {number}: scale {row.scale!r} run {row.run} item {row.item} again "
                f"(first in row {seen[key]})",
                "each (scale, run, item) has one row",
            )
        seen[key] = number
        rows.append(row)
    if not rows:
        raise DataError(f"{path}: no answer rows")
    return rows


def build_results(path: Path, rows: list[AnswerRow], scales: dict[str, Scale]) -> list[dict[str, Any]]:
    """One unit result per (scale, run), shaped as a generate-mode run's (no model call, no transcript)."""
    groups: dict[tuple[str, int], list[AnswerRow]] = {}
    for row in rows:
        groups.setdefault((row.scale, row.run), []).append(row)
    results: list[dict[str, Any]] = []
    for (name, run), members in groups.items():
        scale = scales[name]
        present = {r.item for r in members}
        absent = [i for i in scale.item_indices if i not in present]
        if absent:
            raise DataError(
                f"{path}, row {members[0].row}: scale {name!r} run {run} has no row for item {absent[0]} "
                f"({len(absent)} item(s) missing)",
                "every item needs a row (a column in a wide file); an empty answer means no valid answer",
            )
        with_position = [r for r in members if r.position is not None]
        if with_position and len(with_position) != len(members):
            lacking = next(r for r in members if r.position is None)
            raise DataError(f"{path}, row {lacking.row}: no position, while other rows of run {run} have one")
        if with_position:
            positions: dict[int, AnswerRow] = {}
            for r in members:
                if r.position in positions:
                    raise DataError(
                        f"{path}, row {r.row}: position {r.position} of scale {name!r} run {run} is also in "
                        f"row {positions[r.position].row}"
                    )
                positions[r.position] = r  # type: ignore[index]  # checked above: every row has one
            order = [positions[p].item for p in sorted(positions)]
        else:
            order = [r.item for r in members]
        answers = {r.item: r.answer for r in members if r.answer is not None}
        results.append(
            {
                "scale": name,
                "run": run,
                "mode": "generate",
                "order": order,
                "answers": {str(i): v for i, v in sorted(answers.items())},
                "unanswered": [i for i in order if i not in answers],
                "duplicates": {},
                "out_of_range": {},
                "refused": False,
                "asks": 0,
                "transcript": [],
                "imported": True,
            }
        )
    for name in {r["scale"] for r in results}:
        count = sum(1 for r in results if r["scale"] == name)
        if count > MAX_RUNS:
            raise DataError(
                f"{path}: scale {name!r} has {count} runs, more than {MAX_RUNS} (the bound of --runs)"
            )
    return sorted(results, key=lambda r: (list(scales).index(r["scale"]), r["run"]))


# -- reading -------------------------------------------------------------------------------------------
def _csv_records(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.reader(text.splitlines(keepends=True), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise DataError(f"{path}: empty file", f"the first row names the columns: {', '.join(COLUMNS)}")
        columns = [c.strip() for c in header]
        items = wide_items(columns)
        if items is None:
            _check_columns(path, columns)
        elif "run" not in columns or len(set(columns)) != len(columns):
            raise DataError(f"{path}, row 1: a wide file names each column once and has a 'run' column")
        records = []
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue  # an empty line holds no answer
            if len(cells) != len(columns):
                raise DataError(
                    f"{path}, row {reader.line_num}: {len(cells)} cells, the header has {len(columns)}"
                )
            record = dict(zip(columns, cells, strict=True))
            if items is None:
                records.append((reader.line_num, record))
                continue
            ids: dict[str, Any] = {key: record[key] for key in ("scale", "run") if key in record}
            records += [(reader.line_num, {**ids, "item": item, "answer": record[item]}) for item in items]
    except csv.Error as exc:
        raise DataError(f"{path}, row {reader.line_num}: not valid CSV ({exc})") from None
    return records


def wide_items(columns: list[str]) -> list[str] | None:
    """The item columns of a wide file (``run`` [, ``scale``], then one column per item number, one row
    per run or respondent); None for the long format."""
    rest = [c for c in columns if c not in ("scale", "run")]
    if not rest or "item" in columns or "answer" in columns:
        return None
    return rest if all(whole_number(c) is not None for c in rest) else None


def _jsonl_records(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        value = parse_json(line, f"{path}, row {number}", parse_float=JsonFloat, parse_constant=JsonFloat)
        if not isinstance(value, dict):
            raise DataError(f"{path}, row {number}: expected a JSON object, got {type(value).__name__}")
        _check_columns(path, list(value), row=number)
        records.append((number, value))
    return records


def _check_columns(path: Path, columns: list[str], row: int = 1) -> None:
    for column in columns:
        if column not in COLUMNS:
            raise DataError(
                f"{path}, row {row}: unknown column {column[:40]!r}", f"the columns are {', '.join(COLUMNS)}"
            )
        if columns.count(column) > 1:
            raise DataError(f"{path}, row {row}: column {column!r} appears twice")
    for needed in ("run", "item", "answer"):
        if needed not in columns:
            raise DataError(
                f"{path}, row {row}: no column {needed!r}", f"the columns are {', '.join(COLUMNS)}"
            )


def _check_row(path: Path, number: int, record: dict[str, Any], scales: dict[str, Scale]) -> AnswerRow:
    at = f"{path}, row {number}"
    for column, value in record.items():
        if isinstance(value, str) and not isinstance(value, JsonFloat):
            stripped = value.lstrip(" ")
            if stripped.startswith(_FORMULA_START) or (
                stripped.startswith("-") and whole_number(value) is None
            ):
                raise DataError(
                    f"{at}: {column} {value[:40]!r} looks like a spreadsheet formula, not a value"
                )
    name = record.get("scale")
    if name is None or name == "":
        if len(scales) != 1:
            raise DataError(f"{at}: no scale named", f"several scales are imported ({', '.join(scales)})")
        scale = next(iter(scales.values()))
    else:
        if not isinstance(name, str):
            raise DataError(f"{at}: scale must be a name, got {name!r}")
        found = next((s for s in scales.values() if s.name.lower() == name.strip().lower()), None)
        if found is None:
            raise DataError(f"{at}: unknown scale {name[:40]!r}", f"this import has {', '.join(scales)}")
        scale = found
    jsonl = path.suffix.lower() == ".jsonl"
    run = _whole(record.get("run"), f"{at}: run", jsonl)
    if run is None or run < 1:
        raise DataError(f"{at}: run must be a positive whole number, got {record.get('run')!r}")
    item = _whole(record.get("item"), f"{at}: item", jsonl)
    if item is None or item not in scale.item_indices:
        raise DataError(
            f"{at}: scale {scale.name!r} has no item {record.get('item')!r}",
            f"its items are {min(scale.item_indices)}-{max(scale.item_indices)}",
        )
    answer = _whole(record.get("answer"), f"{at}: answer to item {item}", jsonl)
    if answer is not None and not scale.response_min <= answer <= scale.response_max:
        raise DataError(
            f"{at}: answer {answer} to item {item} is outside {scale.name}'s range "
            f"{scale.response_min}-{scale.response_max}"
        )
    position = _whole(record.get("position"), f"{at}: position", jsonl)
    if position is not None and position < 1:
        raise DataError(f"{at}: position must be a positive whole number, got {position}")
    return AnswerRow(number, scale.name, run, item, answer, position)


def _whole(value: Any, where: str, jsonl: bool) -> int | None:
    """A whole number by the strict rule; None for an empty cell or JSON null; one error line otherwise."""
    if value is None:
        return None
    if jsonl:
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 10**15:
            # "3", 3.0 and NaN arrive as text (numbers.loads_strict); 15 digits as in whole_number
            raise DataError(f"{where} must be a JSON whole number, got {str(value)[:40]!r}")
        return value
    if not value.strip():
        return None
    number = whole_number(value)
    if number is None:
        raise DataError(f"{where} must be a whole number, got {str(value)[:40]!r}")
    return number

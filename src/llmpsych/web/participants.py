"""What an experiment keeps about its participants, as tables: payments, participants, questionnaire.

Written into the run folder when the game is over and again whenever a participant finishes (and when
the host stops):

``payments.csv``
    one row per participant who took a seat: label, table, player, the points their seat earned in the
    game (``seats.csv``: from their typed answers, and apart from the default answers entered for them),
    the money at the session's rate, the participation fee (paid to everyone who agreed to the consent
    text, or who opened their seat when the session asks no consent), and the total.
``participants.csv``
    the same participants: when they arrived, agreed, passed the quiz (and how many attempts it took,
    with the questions answered wrong each time), finished the questionnaire and reached the debrief;
    their decisions by how they came; their questionnaire respondent number.
``participant_decisions.csv``
    one row per decision of a person: who (label, table, player), which (unit, round, attempt), how it
    came (``typed``; ``deadline`` or ``never joined``: a default entered for them), when it was shown
    and answered (UTC), the response time, the entries the form refused before it (their count and
    texts) and the answer the run store holds. A model's decisions are in the run's calls
    (``load_runs(run).calls``: ``how`` ``model``, with the same ``response_s`` and ``refused`` columns
    as a person's ``web`` calls).
``questionnaire.csv`` and ``questionnaire/``
    the questionnaire's answers in the long format of ``psychobench import-answers`` (respondent =
    ``run``), and that import: a PsychoBench run folder scored and reported by the PsychoBench analysis,
    the code that scores a model's answers, against the scale's human norms. ``load_runs`` reads it
    beside model runs of the same scale (``items``: ``source`` person vs model). The folder is derived
    data: it is rebuilt from ``questionnaire.csv`` each time.

Nothing else about a person is kept: no address, no browser data.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, LlmpsychError
from ..report.files import atomic_write_text
from ..runs.store import STORE_FILE

if TYPE_CHECKING:
    from ..games.experiment import SessionConfig
    from ..instruments.scale import Scale
    from .session import SeatSlot, Session

PAYMENT_COLUMNS = [
    "label",
    "table",
    "player",
    "points column",
    "points",
    "points of default answers",
    "paid points",
    "currency",
    "money",
    "fee",
    "total",
]
PARTICIPANT_COLUMNS = [
    "label",
    "table",
    "player",
    "arrived",
    "consent",
    "quiz attempts",
    "quiz wrong",
    "ready",
    "decisions",
    "typed",
    "defaulted",
    "questionnaire",
    "questionnaire respondent",
    "debrief",
]
DECISION_COLUMNS = [
    "label",
    "table",
    "player",
    "unit",
    "round",
    "attempt",
    "how",
    "shown",
    "answered",
    "response_s",
    "refused",
    "refused_texts",
    "answer",
]
#: The folder the scored questionnaire is written to, inside the run folder.
QUESTIONNAIRE_DIR = "questionnaire"


def _when(value: float | None) -> str:
    return "" if value is None else datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")


def seated(session: Session) -> list[SeatSlot]:
    """The seats a participant took (arrived at), in table and player order."""
    return sorted((s for s in session.slots.values() if s.arrived_at is not None), key=lambda s: s.seat)


def _number(value: Any) -> float:
    if value is None or isinstance(value, str):
        return math.nan
    number = float(value)
    return number


def points_of(
    rows: list[dict[str, Any]], slot: SeatSlot, tables: int, column: str | None
) -> tuple[str, float, float]:
    """(points column, points of typed answers, points of default answers) of one seat, summed over its
    games (``seats.csv`` rows of its table; every run when the session has one table). The column is
    the one the session names, else ``total gain`` where the game has it, else ``rounds won``."""
    names: list[str] = []
    typed = defaulted = 0.0
    for row in rows:
        if row.get("player") != slot.player or (tables > 1 and int(row.get("run", 0)) != slot.table):
            continue
        name = column
        if name is None:
            gain = _number(row.get("total gain"))
            name = "total gain" if not math.isnan(gain) else "rounds won"
        value = _number(row.get(name))
        typed += 0.0 if math.isnan(value) else value
        extra = _number(row.get(f"{name} of default rounds"))
        defaulted += 0.0 if math.isnan(extra) else extra
        if name not in names:
            names.append(name)
    return "+".join(names), typed, defaulted


def _cents(amount: float) -> float:
    """Money to the cent, halves rounded up (as a payment is: 1.625 is 1.63, not Python's 1.62)."""
    return float(Decimal(repr(amount)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def payments(session: Session) -> list[dict[str, Any]]:
    """One row of :data:`PAYMENT_COLUMNS` per participant (empty before the game's scores exist)."""
    experiment = session.experiment
    if experiment is None or not session.finished:
        return []
    pay = experiment.payment
    out = []
    for slot in seated(session):
        column, typed, defaulted = points_of(session.scores, slot, session.tables, pay.points)
        agreed = slot.consent_at is not None if experiment.consent is not None else True
        points = typed + defaulted
        money = _cents(points * pay.per_point)
        fee = _cents(pay.fee) if agreed else 0.0
        out.append(
            {
                "label": slot.label,
                "table": slot.table,
                "player": slot.player,
                "points column": column,
                "points": round(typed, 2),
                "points of default answers": round(defaulted, 2),
                "paid points": round(points, 2),
                "currency": pay.currency,
                "money": money,
                "fee": fee,
                "total": _cents(money + fee),
            }
        )
    return out


def respondents(session: Session) -> list[SeatSlot]:
    """The participants who finished the questionnaire, numbered from 1 in the order they did."""
    done = [s for s in session.slots.values() if s.questionnaire_at is not None and s.answers]
    return sorted(done, key=lambda s: (s.questionnaire_at or 0.0, s.seat))


def participants(session: Session) -> list[dict[str, Any]]:
    """One row of :data:`PARTICIPANT_COLUMNS` per participant."""
    number = {s.seat: n for n, s in enumerate(respondents(session), start=1)}
    out = []
    for slot in seated(session):
        decisions = sum(slot.hows.values())
        typed = slot.hows.get("typed", 0)
        out.append(
            {
                "label": slot.label,
                "table": slot.table,
                "player": slot.player,
                "arrived": _when(slot.arrived_at),
                "consent": _when(slot.consent_at),
                "quiz attempts": len(slot.quiz),
                "quiz wrong": "; ".join(",".join(str(n) for n in a.get("wrong", [])) for a in slot.quiz),
                "ready": _when(slot.ready_at),
                "decisions": decisions,
                "typed": typed,
                "defaulted": decisions - typed,
                "questionnaire": _when(slot.questionnaire_at),
                "questionnaire respondent": number.get(slot.seat, ""),
                "debrief": _when(slot.finished_at),
            }
        )
    return out


def decisions(session: Session, stored: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row of :data:`DECISION_COLUMNS` per decision of a person, in the order they came: who (label,
    table, player), which (unit, round, attempt), how (``typed``, ``deadline``, ``never joined``), when
    (shown, answered; UTC), the response time, the entries the form refused before it (count and texts)
    and the answer, as the run store holds it (``stored``: the web calls' responses by question key)."""
    labels = {s.seat: s.label for s in session.slots.values()}
    with session._lock:
        timings = list(session.timings)
    out = []
    for t in timings:
        table, player = int(t.get("table", 1)), int(t.get("player", -1))
        key = str(t.get("key", ""))
        shown, answered = t.get("shown_at"), t.get("answered_at")
        response = stored.get(key, {})
        refused = response.get("refused")
        texts = [str(x) for x in refused] if isinstance(refused, list) else []
        out.append(
            {
                "label": labels.get((table, player), ""),
                "table": table,
                "player": player,
                "unit": key.rpartition(":p")[0],
                "round": t.get("round"),
                "attempt": t.get("attempt"),
                "how": t.get("how"),
                "shown": _when(shown if isinstance(shown, int | float) else None),
                "answered": _when(answered if isinstance(answered, int | float) else None),
                "response_s": round(answered - shown, 3)
                if isinstance(shown, int | float) and isinstance(answered, int | float)
                else "",
                "refused": t.get("refused", len(texts)),
                "refused_texts": json.dumps(texts, ensure_ascii=False) if texts else "",
                "answer": response.get("text", ""),
            }
        )
    return out


def _web_responses(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The stored responses of the web seats by question key (empty while the run has no store)."""
    from ..runs.store import RunStore

    if not (run_dir / STORE_FILE).is_file():
        return {}
    store = RunStore.in_dir(run_dir)
    try:
        return {
            c.call_key.removeprefix("web:").rpartition("#")[0]: dict(c.response)
            for c in store.calls()
            if c.role == "web"
        }
    finally:
        store.close()


def _csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def questionnaire_scale(experiment: SessionConfig, data_dir: Path | None) -> Scale:
    """The questionnaire's scale, loaded as a PsychoBench run loads it (the same code, the same scale)."""
    from ..psychobench.task import PsychoBenchTask
    from ..runs.config import parse_run_config

    q = experiment.questionnaire
    assert q is not None
    options: dict[str, Any] = {"scale_file": [q.scale_file]} if q.scale_file else {"scale": [q.scale]}
    base: dict[str, Any] = {"task": "psychobench", "model": "people", "cache": False, "options": options}
    if data_dir is not None:
        base["data_dir"] = str(data_dir)
    try:
        scales = PsychoBenchTask(parse_run_config(base, "session questionnaire")).scales
    except LlmpsychError as exc:
        raise ConfigError(f"the session's questionnaire cannot be loaded: {exc.message}", exc.hint) from None
    return scales[0]


def write_tables(session: Session, scale: Scale | None, data_dir: Path | None, *, score: bool) -> list[Path]:
    """Write ``payments.csv``, ``participants.csv`` and the questionnaire's answers; with ``score``,
    the questionnaire's scored run folder too. Returns the files written."""
    experiment = session.experiment
    if experiment is None:
        return []
    run_dir = session.run_dir
    written = []
    with session._lock:
        pay, people = payments(session), participants(session)
        answered = [(n, s.answers) for n, s in enumerate(respondents(session), start=1)]
    if session.finished:
        atomic_write_text(run_dir / "payments.csv", _csv(pay, PAYMENT_COLUMNS))
        written.append(run_dir / "payments.csv")
    atomic_write_text(run_dir / "participants.csv", _csv(people, PARTICIPANT_COLUMNS))
    written.append(run_dir / "participants.csv")
    try:
        stored = _web_responses(run_dir)
    except LlmpsychError:  # a damaged store: the decisions without their stored answer
        stored = {}
    atomic_write_text(
        run_dir / "participant_decisions.csv", _csv(decisions(session, stored), DECISION_COLUMNS)
    )
    written.append(run_dir / "participant_decisions.csv")
    if scale is None or experiment.questionnaire is None or not answered:
        return written
    rows = [
        {"scale": scale.name, "run": n, "item": item, "answer": answers.get(item, "")}
        for n, answers in answered
        for item in scale.item_indices
    ]
    answers_file = run_dir / "questionnaire.csv"
    atomic_write_text(answers_file, _csv(rows, ["scale", "run", "item", "answer"]))
    written.append(answers_file)
    if score:
        from ..psychobench.imports import import_answers

        out = run_dir / QUESTIONNAIRE_DIR
        if (out / STORE_FILE).is_file():
            shutil.rmtree(out)  # derived from questionnaire.csv: rebuilt with every answer so far
        q = experiment.questionnaire
        written += import_answers(
            answers_file,
            out,
            scale_files=[Path(q.scale_file)] if q.scale_file else [],
            scales=[q.scale] if q.scale else None,
            data_dir=data_dir,
            label="people",
        )
    return written

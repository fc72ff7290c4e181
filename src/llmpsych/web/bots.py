"""``llmpsych gamabench host --bots``: a dry run of a session through its real pages, then a check of the
data it exported.

Before people come, the experimenter runs the session as it will run, with bots in the browser seats:
each bot is an HTTP client that opens its seat's link, reads the question page as a browser gets it and
posts the form, exactly as a participant's browser does (the same tokens, form tokens and checks). What
the bots do, so that the data have every case:

- every seat but the last web seat joins; the last one is **the missing person** (with two or more web
  seats): the experimenter's "Start now" is pressed on the monitor, and the game enters the default
  action for it (``never joined``);
- each bot's **first answer is invalid** (out of the range, not one of the choices, a plan that does not
  add up): the page must refuse it with the game's reason and keep it in the field; then the bot answers
  validly (a number drawn in the range, a choice, a plan giving everything to the first pirate);
- model seats answer from the run's models: without ``--model``, from a scripted loopback server
  (:func:`llmpsych.testing.game_player.game_answer`), so the dry run takes seconds.

With a session file (``--bots --session FILE``) the bots go through the whole session as its
participants would: each arrives through the **room link** with a label (the session's listed labels,
else ``bot-1``, ``bot-2``, ...; the last label **never arrives**, and the monitor's "Start now" plays its
seat by default), agrees to the consent text, answers the **quiz wrong once** (every question) and then
right, plays as above, has one **questionnaire form refused** (an answer out of the scale's range) before
its answers are taken, and reads the **debrief**: its completion code and total. The checks then cover the
session's tables too: ``participants.csv`` (each bot at its seat, consent time, quiz attempts and the
questions answered wrong, no row for the person who never came), ``participant_decisions.csv`` (each
typed answer once, ``typed`` with its refused entry; the empty seat's ``never joined``), ``payments.csv``
(the points of ``seats.csv`` at the session's rate, the fee, the total the debrief showed),
``questionnaire.csv`` (the answers as posted, nothing of the refused form) and the completion code.

What the bots did is written to ``bots.json`` in the run folder, and the exported data are checked
against it (:func:`check`, which reads only the run folder, so a run can be checked again): every
browser-seat decision in the run store has its row in ``decisions.csv``; every answer a bot gave has its
row with ``how`` ``typed``, the value it typed and its refused entry; the missing person's rows say
``never joined``; the model seats' ``model``; ``session.json`` has a timing row per typed answer. A failed
check fails the command.
"""

from __future__ import annotations

import csv
import html
import json
import random
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..errors import DataError
from ..runs import RunOutcome, RunStore
from .session import SESSION_FILE, Session

#: The model spec of the scripted loopback server the model seats answer from without ``--model``.
SCRIPTED_MODEL = "openai-compatible/scripted"
#: Seconds between two looks at a bot's page while it waits (as a waiting page's own refresh would).
LOOK_S = 0.1
#: What the bots did, in the run folder (what :func:`check` compares the exported data with).
BOTS_FILE = "bots.json"
_FORM = re.compile(r'name="(key|csrf)" value="([^"]+)"')


@contextmanager
def scripted_models() -> Iterator[str]:
    """A loopback OpenAI-compatible server answering every game request validly; its base URL."""
    from ..testing.fault_server import FaultServer
    from ..testing.game_player import game_answer

    with FaultServer(responder=game_answer) as server:
        yield server.base_url


@dataclass
class Bot:
    """One web seat's bot: what it answered (question key -> the text posted) and refused entries; with
    a session file, its label and table and what it did on the steps around the game."""

    player: int
    link: str
    missing: bool = False
    answered: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    #: problems a bot saw on a page (a refusal not shown, an entry not kept)
    problems: list[str] = field(default_factory=list)
    label: str = ""
    table: int = 1
    #: the steps (a session file): consented, quiz attempts (the wrong numbers of each), the
    #: questionnaire's answers posted (item -> value) and the refused one, the completion code and the
    #: total the debrief showed
    consent: bool = False
    quiz: list[list[int]] = field(default_factory=list)
    questionnaire: dict[str, int] = field(default_factory=dict)
    questionnaire_refused: str = ""
    code: str = ""
    paid: str = ""


@dataclass(frozen=True)
class Form:
    """A question page's form as the bot reads it."""

    key: str
    csrf: str
    kind: str  # number, choice, shares, text
    low: int = 0
    high: int = 0
    choices: tuple[str, ...] = ()
    shares: int = 0
    total: int = 0


def read_form(page: str) -> Form | None:
    """The question form of a seat page, or None (lobby, waiting, finished)."""
    fields = dict(_FORM.findall(page))
    if "key" not in fields or "csrf" not in fields:
        return None
    key, csrf = html.unescape(fields["key"]), fields["csrf"]
    choices = tuple(html.unescape(v) for v in re.findall(r'type="radio" name="answer" value="([^"]*)"', page))
    if choices:
        return Form(key, csrf, "choice", choices=choices)
    shares = len(re.findall(r'name="share"', page))
    if shares:
        total = re.search(r'data-total="(\d+)"', page)
        return Form(key, csrf, "shares", shares=shares, total=int(total.group(1)) if total else 0)
    bounds = re.search(r'data-low="(-?\d+)" data-high="(-?\d+)"', page)
    if bounds:
        return Form(key, csrf, "number", low=int(bounds.group(1)), high=int(bounds.group(2)))
    return Form(key, csrf, "text")


def invalid(form: Form) -> dict[str, Any]:
    """An answer the game must refuse."""
    if form.kind == "number":
        return {"answer": str(form.high + 1)}
    if form.kind == "shares":
        return {"share": [str(form.total + 1)] + ["0"] * (form.shares - 1)}
    return {"answer": "maybe"}


def valid(form: Form, rng: random.Random) -> dict[str, Any]:
    """An answer the game takes."""
    if form.kind == "number":
        return {"answer": str(rng.randint(form.low, form.high))}
    if form.kind == "choice":
        return {"answer": rng.choice(form.choices)}
    if form.kind == "shares":
        return {"share": [str(form.total)] + ["0"] * (form.shares - 1)}
    return {"answer": "0"}


def posted(data: dict[str, Any]) -> str:
    """The answer text the game receives from a form's fields (a plan's shares joined by commas)."""
    return ",".join(data["share"]) if "share" in data else str(data["answer"])


class Bots:
    """The bots of one session: they play while the host serves, then :func:`check` reads the data."""

    def __init__(self, session: Session, seed: int = 0) -> None:
        self.session = session
        self.seed = seed
        self.bots: list[Bot] = []
        self.started = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def ready(self, links: dict[int, str], monitor: str, room: str = "") -> None:
        """The host serves: the bots start (the last web seat stays away when there are two or more).
        With a session file they arrive through the ``room`` link, one label each (the session's listed
        labels, else ``bot-1``, ``bot-2``, ...), and the last label never comes."""
        experiment = self.session.experiment
        if experiment is not None and room:
            seats = len(self.session.slots)
            labels = (experiment.labels or [f"bot-{n}" for n in range(1, seats + 1)])[:seats]
            self.bots = [
                Bot(-1, "", missing=n == len(labels) - 1 and n > 0, label=label)
                for n, label in enumerate(labels)
            ]
            target: Callable[..., None] = self._session
            args: tuple[str, ...] = (monitor, room)
        else:
            players = sorted(links)
            missing = players[-1] if len(players) > 1 else None
            self.bots = [Bot(p, links[p], missing=p == missing) for p in players]
            target, args = self._play, (monitor,)
        self._thread = threading.Thread(target=target, args=args, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the bots (the game is over or the host stops)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def save(self, run_dir: Path) -> None:
        """Write what the bots did to ``bots.json`` (the seat links are left out: they hold tokens)."""
        data = {
            "started": self.started,
            "session": self.session.experiment is not None,
            "bots": [
                {
                    "player": b.player,
                    "missing": b.missing,
                    "answered": b.answered,
                    "refused": b.refused,
                    "problems": b.problems,
                    "label": b.label,
                    "table": b.table,
                    "consent": b.consent,
                    "quiz": b.quiz,
                    "questionnaire": b.questionnaire,
                    "questionnaire_refused": b.questionnaire_refused,
                    "code": b.code,
                    "paid": b.paid,
                }
                for b in self.bots
            ],
        }
        (run_dir / BOTS_FILE).write_text(json.dumps(data, indent=2), encoding="utf-8")

    def _play(self, monitor: str) -> None:
        present = [b for b in self.bots if not b.missing]
        with httpx.Client(trust_env=False, timeout=30) as lab:
            clients = {b.player: httpx.Client(trust_env=False, timeout=30) for b in present}
            try:
                for bot in present:
                    clients[bot.player].get(bot.link)  # joins
                if len(present) < len(self.bots):
                    self._start(lab, monitor)
                self._answer([(b, clients[b.player]) for b in present])
            except httpx.HTTPError as exc:
                if not (self.session.finished or self._stop.is_set()):  # not the server ending
                    present[0].problems.append(f"the server could not be reached ({exc})")
            finally:
                for client in clients.values():
                    client.close()

    def _session(self, monitor: str, room: str) -> None:
        """The whole session as its participants go through it: room (with a label), consent, the quiz
        (failed once, then passed), the game, the questionnaire (one invalid answer first), debrief."""
        present = [b for b in self.bots if not b.missing]
        with httpx.Client(trust_env=False, timeout=30) as lab:
            clients = {b.label: httpx.Client(trust_env=False, timeout=30) for b in present}
            try:
                for bot in present:
                    self._arrive(bot, clients[bot.label], room)
                if len(present) < len(self.bots):
                    self._start(lab, monitor)
                self._answer([(b, clients[b.label]) for b in present])
                for bot in present:
                    self._after(bot, clients[bot.label])
            except httpx.HTTPError as exc:
                if not self._stop.is_set():
                    present[0].problems.append(f"the server could not be reached ({exc})")
            finally:
                for client in clients.values():
                    client.close()

    def _step_form(self, bot: Bot, page: httpx.Response, step: str) -> str | None:
        """The form token of the step page ``step``; None (a problem noted) when the page is another."""
        if f'name="step" value="{step}"' not in page.text:
            bot.problems.append(f"{bot.label}: expected the {step} page, got HTTP {page.status_code}")
            return None
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        return found.group(1) if found else None

    def _arrive(self, bot: Bot, client: httpx.Client, room: str) -> None:
        """Room link with the label, consent, the quiz failed once and then passed."""
        experiment = self.session.experiment
        assert experiment is not None
        page = client.get(room, params={"label": bot.label}, follow_redirects=True)
        bot.link = str(page.url)
        slot = self.session.slot_for(bot.link.rpartition("/play/")[2])
        if slot is None:
            bot.problems.append(
                f"{bot.label}: the room link did not lead to a seat (HTTP {page.status_code})"
            )
            return
        bot.table, bot.player = slot.seat
        if experiment.consent is not None:
            csrf = self._step_form(bot, page, "consent")
            if csrf is None:
                return
            done = client.post(bot.link, data={"step": "consent", "csrf": csrf, "agree": "yes"})
            bot.consent = done.status_code == 303
            page = client.get(bot.link)
        csrf = self._step_form(bot, page, "instructions")
        if csrf is None:
            return
        attempts = [False, True] if experiment.quiz else [True]
        for right in attempts:
            data = {"step": "instructions", "csrf": csrf}
            for n, q in enumerate(experiment.quiz, 1):
                data[f"q{n}"] = _quiz_entry(q.choices, q.answer, right)
            reply = client.post(bot.link, data=data)
            if experiment.quiz:  # a wrong attempt answers every question wrong
                wrong = [] if right else list(range(1, len(experiment.quiz) + 1))
                bot.quiz.append(wrong)
                marked = [int(n) for n in re.findall(r'<fieldset id="q(\d+)" class="wrong"', reply.text)]
                if marked != wrong:
                    bot.problems.append(f"{bot.label}: the quiz page marked {marked} wrong, not {wrong}")
            if right != (reply.status_code == 303):
                bot.problems.append(f"{bot.label}: quiz attempt {len(bot.quiz)} got HTTP {reply.status_code}")

    def _after(self, bot: Bot, client: httpx.Client) -> None:
        """The questionnaire (its first form with one answer out of the scale's range: refused, nothing
        kept) and the debrief (its completion code and total)."""
        experiment = self.session.experiment
        assert experiment is not None
        page = client.get(bot.link)
        if experiment.questionnaire is not None:
            csrf = self._step_form(bot, page, "questionnaire")
            items = re.findall(r'<fieldset id="i(\d+)">', page.text)
            levels = [int(v) for v in re.findall(r'id="i\d+-(-?\d+)"', page.text)]
            if csrf is None or not items or not levels:
                return
            rng = random.Random(f"{self.seed}:{bot.label}")
            answers = {item: rng.randint(min(levels), max(levels)) for item in items}
            bad = {**answers, items[0]: max(levels) + 1}
            data = {"step": "questionnaire", "csrf": csrf, **{f"i{k}": str(v) for k, v in bad.items()}}
            reply = client.post(bot.link, data=data)
            bot.questionnaire_refused = f"i{items[0]}={max(levels) + 1}"
            if reply.status_code != 400 or 'role="alert"' not in reply.text:
                bot.problems.append(f"{bot.label}: the invalid questionnaire answer was not refused")
            data = {"step": "questionnaire", "csrf": csrf, **{f"i{k}": str(v) for k, v in answers.items()}}
            if client.post(bot.link, data=data).status_code != 303:
                bot.problems.append(f"{bot.label}: the questionnaire's valid answers were not taken")
            bot.questionnaire = answers
            page = client.get(bot.link)
        code = re.search(r'<strong id="code">([^<]*)</strong>', page.text)
        total = re.search(r'<strong id="total">([^<]*)</strong>', page.text)
        if code is None:
            bot.problems.append(f"{bot.label}: the debrief shows no completion code")
        bot.code = html.unescape(code.group(1)) if code else ""
        bot.paid = html.unescape(total.group(1)) if total else ""

    def _start(self, lab: httpx.Client, monitor: str) -> None:
        """The experimenter's "Start now" on the monitor page (the missing seat plays the default)."""
        page = lab.get(monitor, follow_redirects=True)
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        if csrf is None:
            self.bots[-1].problems.append("the monitor has no start form")
            return
        done = lab.post(str(page.url.join("/session/start")), data={"csrf": csrf.group(1)})
        self.started = done.status_code == 303

    def _answer(self, present: list[tuple[Bot, httpx.Client]]) -> None:
        rngs = [random.Random(f"{self.seed}:{b.label or b.player}") for b, _ in present]
        while not (self.session.finished or self._stop.is_set()):
            asked = False
            for (bot, client), rng in zip(present, rngs, strict=True):
                form = read_form(client.get(bot.link).text)
                if form is None:
                    continue
                asked = True
                if not bot.refused:  # the bot's first answer: one the game must refuse
                    self._refused(bot, client, form)
                data = valid(form, rng)
                reply = client.post(bot.link, data={"key": form.key, "csrf": form.csrf, **data})
                if reply.status_code != 303:
                    bot.problems.append(f"{form.key}: a valid answer got HTTP {reply.status_code}")
                    continue
                bot.answered[form.key] = posted(data)
            if not asked:
                self._stop.wait(LOOK_S)

    def _refused(self, bot: Bot, client: httpx.Client, form: Form) -> None:
        data = invalid(form)
        entry = posted(data)
        reply = client.post(bot.link, data={"key": form.key, "csrf": form.csrf, **data})
        bot.refused[form.key] = entry
        if reply.status_code != 400 or 'role="alert"' not in reply.text:
            bot.problems.append(f"{form.key}: the invalid answer {entry!r} was not refused with a reason")
        kept = data["share"][0] if "share" in data else entry
        if form.kind != "choice" and f'value="{html.escape(kept)}"' not in reply.text:
            bot.problems.append(f"{form.key}: the refused entry {entry!r} was not kept in its field")


@dataclass(frozen=True)
class Check:
    """One check of the exported data: what, whether it held, and the numbers (n) it covered."""

    what: str
    ok: bool
    detail: str


def _quiz_entry(choices: list[str], answer: str, right: bool) -> str:
    """What a bot posts for a quiz question: the right answer (a choice's number from 1, or the text),
    or a wrong one (another choice, or a text that is not the answer)."""
    if not choices:
        return answer if right else answer + "-not"
    if right:
        return str(choices.index(answer) + 1)
    others = [n for n, c in enumerate(choices, 1) if c != answer]
    return str(others[0] if others else len(choices) + 1)


def _action(value: str) -> Any:
    """An answer as ``decisions.csv`` writes its action: numbers as numbers, a plan as a list, a Battle
    Royale target as the player's number (a miss: empty)."""
    text = value.strip()
    target = re.fullmatch(r"player_(\d+)", text)
    if target:
        return int(target.group(1))
    if text in ("null", ""):
        return ""
    if "," in text:
        return [int(v) for v in text.split(",")]
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def _cell(value: str) -> Any:
    text = value.strip()
    if text.startswith("["):
        return json.loads(text)
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def _bots(run_dir: Path) -> tuple[list[Bot], bool, bool]:
    """The bots of ``bots.json``, whether the monitor's start worked, whether it was a session file's."""
    data = json.loads((run_dir / BOTS_FILE).read_text(encoding="utf-8"))
    bots = [
        Bot(
            int(b["player"]),
            "",
            bool(b["missing"]),
            dict(b["answered"]),
            dict(b["refused"]),
            list(b["problems"]),
            str(b.get("label", "")),
            int(b.get("table", 1)),
            bool(b.get("consent", False)),
            [list(a) for a in b.get("quiz", [])],
            {str(k): int(v) for k, v in b.get("questionnaire", {}).items()},
            str(b.get("questionnaire_refused", "")),
            str(b.get("code", "")),
            str(b.get("paid", "")),
        )
        for b in data["bots"]
    ]
    return bots, bool(data["started"]), bool(data.get("session", False))


def check(run_dir: Path) -> list[Check]:
    """The exported data of a dry run checked against what its bots did (``bots.json``): reads only the
    run folder (``decisions.csv``, ``session.json``, the run store's browser-seat answers)."""
    for name in (BOTS_FILE, "decisions.csv", SESSION_FILE):
        if not (run_dir / name).is_file():
            return [Check(f"{name} was written", False, f"{run_dir / name} is missing")]
    bots, started, stepped = _bots(run_dir)
    with (run_dir / "decisions.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    session = Session.load(run_dir)
    web = {s.seat for s in session.slots.values()}

    def seat_of(row: dict[str, str]) -> tuple[int, int]:
        """(table, player) of a decisions.csv row (one table plays every run without tables)."""
        return (int(row["run"]) if session.tables > 1 else 1, int(row["player"]))

    by_key: dict[tuple[str, int, int, int], dict[str, str]] = {}
    for row in rows:
        by_key[(row["game"], int(row["run"]), int(row["round"]), int(row["player"]))] = row

    def row_of(key: str) -> dict[str, str] | None:
        unit, player, round_no, _ = key.split(":")
        game, _, run = unit.rpartition("-run")
        return by_key.get((game, int(run), int(round_no[1:]), int(player[1:])))

    out = [Check("decisions.csv was written", True, f"{len(rows)} decision rows")]
    with RunStore.in_dir(run_dir, readonly=True) as store:
        asked = sorted(
            {c.call_key.removeprefix("web:").rpartition("#")[0] for c in store.calls() if c.role == "web"}
        )
    rowless = [k for k in asked if row_of(k) is None]
    web_rows = [r for r in rows if seat_of(r) in web]
    out.append(
        Check(
            "every browser-seat decision of the run store has its row (and no other row)",
            bool(asked) and not rowless and len(web_rows) == len(asked),
            f"{len(asked) - len(rowless)} of {len(asked)} decisions; {len(web_rows)} rows"
            + (f"; missing: {', '.join(rowless[:5])}" if rowless else ""),
        )
    )
    present = [b for b in bots if not b.missing]
    answered = [(b, k, v) for b in present for k, v in b.answered.items()]
    missing_rows = [k for _, k, _ in answered if row_of(k) is None]
    out.append(
        Check(
            "every answer a bot typed has its decision row",
            bool(answered) and not missing_rows,
            f"{len(answered) - len(missing_rows)} of {len(answered)}"
            + (f"; missing: {', '.join(missing_rows[:5])}" if missing_rows else ""),
        )
    )
    wrong = []
    for _, key, value in answered:
        found = row_of(key)
        if found is not None and (found["how"] != "typed" or _cell(found["action"]) != _action(value)):
            wrong.append(f"{key}: how {found['how']!r}, action {found['action']!r} (typed {value!r})")
    out.append(
        Check(
            "each typed answer's row says how=typed and holds the value typed",
            not wrong,
            f"{len(answered) - len(wrong)} of {len(answered)}" + (f"; {wrong[0]}" if wrong else ""),
        )
    )
    refused = [(b, k, v) for b in present for k, v in b.refused.items()]
    unrecorded = []
    for _, key, entry in refused:
        found = row_of(key)
        texts = json.loads(found["refused_texts"]) if found is not None and found["refused_texts"] else []
        if entry not in texts:
            unrecorded.append(key)
    out.append(
        Check(
            "each invalid answer is refused and kept with its decision (refused_texts)",
            bool(refused) and not unrecorded,
            f"{len(refused) - len(unrecorded)} of {len(refused)}",
        )
    )
    if stepped:  # the seat nobody arrived at
        absent = [s.seat for s in session.slots.values() if s.arrived_at is None]
    else:
        absent = [(1, b.player) for b in bots if b.missing]
    if any(b.missing for b in bots):
        theirs = [r for r in rows if seat_of(r) in absent]
        bad = [r for r in theirs if r["how"] != "never joined"]
        where = ", ".join(f"table {t} player {p}" if session.tables > 1 else f"player {p}" for t, p in absent)
        out.append(
            Check(
                f"the missing person's decisions ({where}) say how=never joined",
                bool(theirs) and not bad and started,
                f"{len(theirs) - len(bad)} of {len(theirs)} rows"
                + ("" if started else "; the monitor's Start now failed"),
            )
        )
    others = [r for r in rows if seat_of(r) not in web]
    bad_models = [r for r in others if r["seat"].split(":")[0] in ("llm", "model") and r["how"] != "model"]
    out.append(
        Check(
            "the model seats' decisions say how=model",
            not bad_models,
            f"{len(others) - len(bad_models)} of {len(others)} rows",
        )
    )
    extra = [
        r
        for r in rows
        if seat_of(r) in {(b.table, b.player) for b in present} and r["how"] == "typed"
        if not any(row_of(k) is r for _, k, _ in answered)
    ]
    out.append(Check("no typed row that no bot typed", not extra, f"{len(extra)} such rows"))
    timings = json.loads((run_dir / SESSION_FILE).read_text(encoding="utf-8")).get("answers", [])
    typed = {t["key"] for t in timings if t.get("how") == "typed"}
    untimed = [k for _, k, _ in answered if k not in typed]
    out.append(
        Check(
            "session.json has the time of every typed answer",
            not untimed,
            f"{len(answered) - len(untimed)} of {len(answered)}",
        )
    )
    if stepped:
        out += _check_steps(run_dir, session, bots)
    problems = [p for b in bots for p in b.problems]
    out.append(
        Check("the pages behaved as for a person", not problems, "; ".join(problems[:3]) or "no problem")
    )
    return out


def _rows(path: Path) -> list[dict[str, str]] | None:
    if not path.is_file():
        return None
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _check_steps(run_dir: Path, session: Session, bots: list[Bot]) -> list[Check]:
    """The tables of a session file's steps checked against what the bots did: ``participants.csv``
    (who arrived, consent, quiz attempts), ``participant_decisions.csv`` (how each decision came),
    ``payments.csv`` (the points of ``seats.csv``, money, fee, total as the debrief showed them),
    ``questionnaire.csv`` (the answers posted, none of the refused form) and the completion code."""
    experiment = session.experiment
    assert experiment is not None
    present = [b for b in bots if not b.missing]
    gone = [b.label for b in bots if b.missing]
    out: list[Check] = []
    people = _rows(run_dir / "participants.csv")
    if people is None:
        return [Check("participants.csv was written", False, "it is missing")]
    by_label = {r["label"]: r for r in people}
    wrong: list[str] = []
    for bot in present:
        row = by_label.get(bot.label)
        if row is None:
            wrong.append(f"{bot.label}: no row")
            continue
        if (int(row["table"]), int(row["player"])) != (bot.table, bot.player):
            wrong.append(
                f"{bot.label}: seat {row['table']}/{row['player']}, the bot sat at {bot.table}/{bot.player}"
            )
        if (experiment.consent is not None) != bool(row["consent"]) or (bool(row["consent"]) != bot.consent):
            wrong.append(f"{bot.label}: consent {row['consent']!r}")
        attempts = "; ".join(",".join(str(n) for n in a) for a in bot.quiz)
        if int(row["quiz attempts"] or 0) != len(bot.quiz) or row["quiz wrong"] != attempts:
            wrong.append(
                f"{bot.label}: quiz attempts {row['quiz attempts']} ({row['quiz wrong']!r}), bot {attempts!r}"
            )
        if not row["debrief"] or (experiment.questionnaire is not None) != bool(row["questionnaire"]):
            wrong.append(f"{bot.label}: questionnaire {row['questionnaire']!r}, debrief {row['debrief']!r}")
    extra = [label for label in by_label if label not in {b.label for b in present}]
    out.append(
        Check(
            "participants.csv: each bot who came, at its seat, with its consent time and quiz attempts "
            "(the person who never came has no row)",
            not wrong and not extra and bool(present),
            f"{len(present) - len(wrong)} of {len(present)} rows"
            + (f"; {wrong[0]}" if wrong else "")
            + (f"; rows of nobody who came: {', '.join(extra[:3])}" if extra else ""),
        )
    )
    decided = _rows(run_dir / "participant_decisions.csv") or []
    wrong = []
    for bot in present:
        for key, value in bot.answered.items():
            unit, _, rest = key.rpartition(":p")
            round_no = int(rest.split(":")[1].removeprefix("r"))
            mine = [
                r
                for r in decided
                if (r["label"], r["unit"], int(r["round"])) == (bot.label, unit, round_no)
                and r["how"] == "typed"
            ]
            if len(mine) != 1 or mine[0]["answer"].strip() != value.strip():
                wrong.append(f"{bot.label} {key}: {len(mine)} typed rows")
            elif key in bot.refused and bot.refused[key] not in json.loads(mine[0]["refused_texts"] or "[]"):
                wrong.append(f"{bot.label} {key}: the refused entry is not in refused_texts")
    nobody = [r for r in decided if not r["label"]]
    bad = [r for r in nobody if r["how"] != "never joined"]
    typed = sum(len(b.answered) for b in present)
    out.append(
        Check(
            "participant_decisions.csv: each typed answer once, how=typed with its refused entry; the "
            "empty seat's how=never joined",
            not wrong and not bad and (bool(nobody) or not gone) and len(decided) == typed + len(nobody),
            f"{typed - len(wrong)} of {typed} typed; {len(nobody) - len(bad)} of {len(nobody)} never joined"
            f"; {len(decided)} rows" + (f"; {wrong[0]}" if wrong else ""),
        )
    )
    out.append(_check_payments(run_dir, session, present))
    if experiment.questionnaire is not None:
        answers = _rows(run_dir / "questionnaire.csv") or []
        given: dict[str, dict[str, int]] = {}
        for r in answers:
            given.setdefault(r["run"], {})[r["item"]] = int(r["answer"]) if r["answer"] else -1
        posted = sorted(sorted(b.questionnaire.items()) for b in present)
        held = sorted(sorted(v.items()) for v in given.values())
        out.append(
            Check(
                "questionnaire.csv holds each bot's answers as posted (and nothing of a refused form)",
                bool(posted) and posted == held,
                f"{len(held)} respondents, {len(answers)} answers; {len(posted)} bots answered",
            )
        )
    codes = [b.label for b in present if b.code != session.completion_code]
    out.append(
        Check(
            "each bot's debrief showed the session's completion code",
            not codes,
            f"{len(present) - len(codes)} of {len(present)}"
            + (f"; not: {', '.join(codes[:3])}" if codes else ""),
        )
    )
    return out


def _check_payments(run_dir: Path, session: Session, present: list[Bot]) -> Check:
    """``payments.csv``: one row per bot who came; its points the ``seats.csv`` points of its seat (the
    session's points column, typed and defaulted rounds apart), money = points x rate to the cent, the
    fee, total = money + fee, and the total the bot's debrief showed."""
    from .participants import _cents

    experiment = session.experiment
    assert experiment is not None
    what = "payments.csv: each bot who came is paid its seats.csv points at the rate, plus the fee"
    pay = _rows(run_dir / "payments.csv")
    seats = _rows(run_dir / "seats.csv")
    if pay is None or seats is None:
        return Check(what, False, "payments.csv or seats.csv is missing")
    rate, fee = experiment.payment.per_point, experiment.payment.fee
    wrong: list[str] = []
    rows = {r["label"]: r for r in pay}
    for bot in present:
        row = rows.get(bot.label)
        if row is None:
            wrong.append(f"{bot.label}: no row")
            continue
        columns = row["points column"].split("+")
        mine = [
            s
            for s in seats
            if int(s["player"]) == bot.player and (session.tables == 1 or int(s["run"]) == bot.table)
        ]
        typed = sum(_number(s.get(c, "")) for s in mine for c in columns)
        defaulted = sum(_number(s.get(f"{c} of default rounds", "")) for s in mine for c in columns)
        points = float(row["paid points"])
        money = _cents(points * rate)
        expected = (round(typed, 2), round(defaulted, 2), round(typed + defaulted, 2), money, fee)
        held = tuple(
            float(row[c]) for c in ("points", "points of default answers", "paid points", "money", "fee")
        )
        total = float(row["total"])
        shown = bot.paid.split(" ")[0].replace(",", ".")
        if held != expected or total != _cents(money + fee) or (bot.paid and float(shown) != total):
            wrong.append(
                f"{bot.label}: points, default, paid, money, fee {held}, total {total}; "
                f"expected {expected}, shown {bot.paid!r}"
            )
    extra = [label for label in rows if label not in {b.label for b in present}]
    return Check(
        what,
        not wrong and not extra and bool(present),
        f"{len(present) - len(wrong)} of {len(present)} rows"
        + (f"; {wrong[0]}" if wrong else "")
        + (f"; rows of nobody who came: {', '.join(extra[:3])}" if extra else ""),
    )


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return 0.0 if value != value else value


def dry_run(
    play: Callable[[], RunOutcome],
    run_dir: Path,
    session: Session,
    *,
    serve: Callable[..., RunOutcome],
    host: str,
    port: int,
    announce: Callable[[str], None],
    seed: int = 0,
) -> tuple[RunOutcome, list[Check]]:
    """Play ``session`` with bots in its web seats through the served pages; the outcome and the checks
    of the data it exported (the host stops when the game is over). ``serve`` is the host's
    :func:`~llmpsych.web.host.host_run` (passed in: the host imports this module for ``--bots``)."""
    bots = Bots(session, seed)
    try:
        outcome = serve(
            play, run_dir, session, host=host, port=port, announce=announce, linger=False, on_ready=bots.ready
        )
    finally:
        bots.stop()
        bots.save(run_dir)
    return outcome, check(run_dir)


def report(checks: list[Check], announce: Callable[[str], None]) -> None:
    """Print the checks; a failed one is a :class:`DataError` (the command exits non-zero)."""
    announce("checks of the exported data:")
    for c in checks:
        announce(f"  {'ok  ' if c.ok else 'FAIL'} {c.what}: {c.detail}")
    failed = [c for c in checks if not c.ok]
    if failed:
        raise DataError(
            f"the dry run's data check failed: {len(failed)} of {len(checks)} checks",
            "see the FAIL lines above",
        )


__all__ = ["BOTS_FILE", "SCRIPTED_MODEL", "Bots", "Check", "check", "dry_run", "report", "scripted_models"]

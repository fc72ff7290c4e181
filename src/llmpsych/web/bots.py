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
    """One web seat's bot: what it answered (question key -> the text posted) and refused entries."""

    player: int
    link: str
    missing: bool = False
    answered: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    #: problems a bot saw on a page (a refusal not shown, an entry not kept)
    problems: list[str] = field(default_factory=list)


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

    def ready(self, links: dict[int, str], monitor: str) -> None:
        """The host serves: the bots start (the last web seat stays away when there are two or more)."""
        players = sorted(links)
        missing = players[-1] if len(players) > 1 else None
        self.bots = [Bot(p, links[p], missing=p == missing) for p in players]
        self._thread = threading.Thread(target=self._play, args=(monitor,), daemon=True)
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
            "bots": [
                {
                    "player": b.player,
                    "missing": b.missing,
                    "answered": b.answered,
                    "refused": b.refused,
                    "problems": b.problems,
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
                self._answer(present, clients)
            except httpx.HTTPError as exc:
                if not (self.session.finished or self._stop.is_set()):  # not the server ending
                    present[0].problems.append(f"the server could not be reached ({exc})")
            finally:
                for client in clients.values():
                    client.close()

    def _start(self, lab: httpx.Client, monitor: str) -> None:
        """The experimenter's "Start now" on the monitor page (the missing seat plays the default)."""
        page = lab.get(monitor, follow_redirects=True)
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        if csrf is None:
            self.bots[-1].problems.append("the monitor has no start form")
            return
        done = lab.post(str(page.url.join("/session/start")), data={"csrf": csrf.group(1)})
        self.started = done.status_code == 303

    def _answer(self, present: list[Bot], clients: dict[int, httpx.Client]) -> None:
        rngs = {b.player: random.Random(f"{self.seed}:{b.player}") for b in present}
        while not (self.session.finished or self._stop.is_set()):
            asked = False
            for bot in present:
                client = clients[bot.player]
                form = read_form(client.get(bot.link).text)
                if form is None:
                    continue
                asked = True
                if not bot.refused:  # the bot's first answer: one the game must refuse
                    self._refused(bot, client, form)
                data = valid(form, rngs[bot.player])
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


def _bots(run_dir: Path) -> tuple[list[Bot], bool]:
    data = json.loads((run_dir / BOTS_FILE).read_text(encoding="utf-8"))
    bots = [
        Bot(
            int(b["player"]),
            "",
            bool(b["missing"]),
            dict(b["answered"]),
            dict(b["refused"]),
            list(b["problems"]),
        )
        for b in data["bots"]
    ]
    return bots, bool(data["started"])


def check(run_dir: Path) -> list[Check]:
    """The exported data of a dry run checked against what its bots did (``bots.json``): reads only the
    run folder (``decisions.csv``, ``session.json``, the run store's browser-seat answers)."""
    for name in (BOTS_FILE, "decisions.csv", SESSION_FILE):
        if not (run_dir / name).is_file():
            return [Check(f"{name} was written", False, f"{run_dir / name} is missing")]
    bots, started = _bots(run_dir)
    with (run_dir / "decisions.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    session = Session.load(run_dir)
    web = {s.player for s in session.slots.values()}
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
    web_rows = [r for r in rows if int(r["player"]) in web]
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
    absent = [b.player for b in bots if b.missing]
    if absent:
        theirs = [r for r in rows if int(r["player"]) in absent]
        bad = [r for r in theirs if r["how"] != "never joined"]
        out.append(
            Check(
                f"the missing person's decisions (player {absent[0]}) say how=never joined",
                bool(theirs) and not bad and started,
                f"{len(theirs) - len(bad)} of {len(theirs)} rows"
                + ("" if started else "; the monitor's Start now failed"),
            )
        )
    others = [r for r in rows if int(r["player"]) not in web]
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
        if int(r["player"]) in {b.player for b in present} and r["how"] == "typed"
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
    problems = [p for b in bots for p in b.problems]
    out.append(
        Check("the pages behaved as for a person", not problems, "; ".join(problems[:3]) or "no problem")
    )
    return out


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

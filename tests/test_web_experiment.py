"""A session file as a careless or hostile experimenter writes it (one line, exit 2, nothing created), the
room's seating of arrivals (a listed label, a forged one, the same label twice, a full session), and the
payment of a seat's points (typed and defaulted answers, per table) without a browser or a server."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.errors import ConfigError
from llmpsych.games.experiment import load_session_config
from llmpsych.web import participants
from llmpsych.web.session import Session

GOOD = """\
labels = ["A1", "A2"]
[game]
game = "guessing"
players = 3
rounds = 1
seats = ["web", "web", "llm"]
tables = 2
[payment]
per_point = 0.25
fee = 1.5
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[game]\nplayers = 1\nseats = ["web", "llm"]\n',
            "game.players: Input should be greater than or equal to 2",
        ),
        (
            '[game]\ntables = 0\nseats = ["web", "llm"]\n',
            "game.tables: Input should be greater than or equal to 1",
        ),
        ("[game]\nplayers = 2\n", "game.seats: Field required"),
        ("[payment]\nfee = 1\n", "game: Field required"),
        ('[[quiz]]\nquestion = "Q"\nchoices = ["a", "b"]\nanswer = "c"\n', "is not one of the choices"),
        ('labels = ["A 1"]\n', "letters, digits"),
        ('labels = ["A1", "A1"]\n', "a label is listed twice"),
        ('colour = "red"\n', "colour: Extra inputs are not permitted"),
        ('[questionnaire]\nscale = "BFI"\nscale_file = "x.yaml"\n', "give one of scale_file or scale"),
        ('[questionnaire]\nscale_file = "missing.yaml"\n', "missing.yaml is not a file"),
        ('completion_url = "javascript:alert(1)"\n', "must start with https:// or http://"),
        ("[payment]\nfee = -1\n", "payment.fee: Input should be greater than or equal to 0"),
        ("[consent]\n", "consent.text: Field required"),
        ("[game\n", "is not valid TOML"),
    ],
)
def test_a_bad_session_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "session.toml"
    if not text.startswith("[game]") and "game:" not in message and "TOML" not in message:
        text += '[game]\nseats = ["web", "llm"]\n'  # a valid game part: the error is the one named
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_session_config(path)
    assert message in caught.value.message and "\n" not in caught.value.message


def test_the_host_command_refuses_a_bad_session_file_and_a_flag_the_file_sets(tmp_path: Path) -> None:
    cli._mount_subcommands()
    (tmp_path / "bad.yaml").write_text("game: {players: 1, seats: [web, llm]}\n", encoding="utf-8")
    (tmp_path / "good.toml").write_text(GOOD, encoding="utf-8")
    common = ["--model", "openai-compatible/x", "--base-url", "http://127.0.0.1:9/v1"]
    runner = CliRunner()
    bad = runner.invoke(
        cli.app,
        ["gamabench", "host", "--session", str(tmp_path / "bad.yaml"), *common, "--out", str(tmp_path / "a")],
    )
    # the error the command line prints as its one line (cli.main), before anything is created
    assert isinstance(bad.exception, ConfigError) and "game.players" in bad.exception.message
    both = runner.invoke(
        cli.app,
        ["gamabench", "host", "--session", str(tmp_path / "good.toml"), "--rounds", "3", *common]
        + ["--out", str(tmp_path / "b")],
    )
    assert isinstance(both.exception, ConfigError)
    assert "--rounds is set by the session file" in both.exception.message
    pair = runner.invoke(
        cli.app,
        ["gamabench", "host", "--session", str(tmp_path / "good.toml"), "-O", "players=4", *common]
        + ["--out", str(tmp_path / "c")],
    )
    assert (
        isinstance(pair.exception, ConfigError)
        and "players is set by the session file" in pair.exception.message
    )
    assert not any((tmp_path / name).exists() for name in "abc")


def _session(tmp_path: Path) -> Session:
    (tmp_path / "session.toml").write_text(GOOD, encoding="utf-8")
    experiment = load_session_config(tmp_path / "session.toml")
    return Session.create(tmp_path, [(0, "web", ""), (1, "web", "")], 0.0, experiment=experiment)


def test_the_room_seats_listed_labels_in_table_order_once_each(tmp_path: Path) -> None:
    session = _session(tmp_path)
    assert len(session.slots) == 4 and session.tables == 2
    assert session.arrive("B9") == "this participant label is not on the session's list (check your link)"
    assert session.arrive("<script>") == "a participant label holds letters, digits, '-', '_' and '.' only"
    assert session.arrive(None) == "please give your participant label"
    first = session.arrive("A1")
    assert not isinstance(first, str) and first.seat == (1, 0) and first.label == "A1"
    assert session.arrive("A1") is first  # the same label again: the same seat
    second = session.arrive("A2")
    assert not isinstance(second, str) and second.seat == (1, 1)
    # the labels and seats survive a restart, as do the tokens every link is made of
    again = Session.load(tmp_path)
    assert [(s.seat, s.label) for s in again.slots.values() if s.label] == [((1, 0), "A1"), ((1, 1), "A2")]
    assert (again.monitor_token, again.room_token) == (session.monitor_token, session.room_token)
    assert again.completion_code == session.completion_code and again.experiment == session.experiment


def test_unlisted_labels_fill_every_table_then_the_session_is_full(tmp_path: Path) -> None:
    (tmp_path / "session.toml").write_text(GOOD.replace('labels = ["A1", "A2"]\n', ""), encoding="utf-8")
    experiment = load_session_config(tmp_path / "session.toml")
    session = Session.create(tmp_path, [(0, "web", ""), (1, "web", "")], 0.0, experiment=experiment)
    seats = [session.arrive(label) for label in ("p-1", "p-2", None, "p-4")]
    assert [s.seat for s in seats if not isinstance(s, str)] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert [s.label for s in seats if not isinstance(s, str)][2] == "guest-3"
    assert session.arrive("p-5") == "this session is full: every seat is taken"


def test_a_seat_is_paid_its_typed_and_defaulted_points_of_its_own_table(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.arrive("A1")
    slot = session.arrive("A2")
    assert not isinstance(slot, str) and slot.seat == (1, 1)
    nan = float("nan")
    rows = [  # seats.csv rows: a person's payoffs count typed rounds; the defaulted ones apart
        {"game": "guessing", "run": 1, "player": 0, "rounds won": 1.0, "rounds won of default rounds": 0},
        {"game": "guessing", "run": 1, "player": 1, "rounds won": 2.0, "rounds won of default rounds": 1},
        {"game": "guessing", "run": 2, "player": 1, "rounds won": 5.0, "rounds won of default rounds": nan},
        {
            "game": "public_goods",
            "run": 1,
            "player": 1,
            "total gain": 3.5,
            "total gain of default rounds": nan,
        },
    ]
    column, typed, defaulted = participants.points_of(rows, slot, 2, None)
    assert (column, typed, defaulted) == ("rounds won+total gain", 5.5, 1.0)
    session.scores, session.finished = rows, True
    row = participants.payments(session)[1]
    assert (row["label"], row["paid points"], row["money"]) == ("A2", 6.5, 1.63)  # halves up
    assert (row["fee"], row["total"]) == (1.5, 3.13)


def test_step_forms_refuse_forgery_and_keep_nothing_unusable(tmp_path: Path) -> None:
    from llmpsych.web.seat_pages import SessionApp
    from test_own_instruments import TIDY_YAML

    (tmp_path / "tidy.yaml").write_text(TIDY_YAML, encoding="utf-8")
    extra = '[consent]\ntext = "ok"\n[[quiz]]\nquestion = "Q"\nchoices = ["a", "b"]\nanswer = "b"\n'
    extra += '[questionnaire]\nscale_file = "tidy.yaml"\n'
    (tmp_path / "session.toml").write_text(GOOD + extra, encoding="utf-8")
    experiment = load_session_config(tmp_path / "session.toml")
    session = Session.create(tmp_path, [(0, "web", ""), (1, "web", "")], 0.0, experiment=experiment)
    scale = participants.questionnaire_scale(experiment[0], None)
    app = SessionApp(session, lambda *a: None, token="t", port=1, hosts={"x"}, scale=scale)  # type: ignore[arg-type]
    slot = session.arrive("A1")
    assert not isinstance(slot, str)

    def post(step: str, csrf: str | None = None, **fields: str) -> int:
        token = session.csrf(slot, f"step:{step}") if csrf is None else csrf
        return int(app._step(slot, {"step": step, "csrf": token, **fields}).status_code)

    assert post("consent", csrf="0" * 64, agree="yes") == 403 and slot.consent_at is None
    assert post("consent") == 400 and slot.consent_at is None  # the box not ticked
    assert post("instructions", q1="2") == 303 and slot.quiz == []  # an old form: back to the page
    assert post("consent", agree="yes") == 303 and slot.consent_at is not None
    assert post("instructions", q1="99") == 400 and post("instructions", q1="1") == 400  # no choice, wrong
    assert [a["wrong"] for a in slot.quiz] == [[1], [1]] and slot.ready_at is None
    assert post("instructions", q1="2") == 303 and slot.ready_at is not None and slot.joined
    session.finished = True
    full = {f"i{i}": "3" for i in range(1, 7)}
    for bad in ("6", "0", "3.0", "", "=1+2"):
        assert post("questionnaire", **{**full, "i4": bad}) == 400
    assert slot.questionnaire_at is None and slot.answers == {}
    assert post("questionnaire", **full) == 303 and slot.answers == {i: 3 for i in range(1, 7)}


def test_with_lang_de_every_step_page_is_german_and_the_experimenters_texts_stay(tmp_path: Path) -> None:
    """Room, consent, instructions and quiz (and its refusal), lobby, questionnaire (and its refusal) and
    debrief with the payment, rendered as the server sends them with ``--lang de``: no English text of
    the pages' catalog is left, the experimenter's own texts (consent, quiz, debrief) are as written."""
    import re

    from llmpsych.web.host import instructions
    from llmpsych.web.i18n import PAGES
    from llmpsych.web.seat_pages import SessionApp
    from test_own_instruments import TIDY_YAML

    assert PAGES.missing("de") == []
    (tmp_path / "tidy.yaml").write_text(TIDY_YAML, encoding="utf-8")
    extra = '[consent]\ntext = "Consent as written."\n[[quiz]]\nquestion = "Q?"\nchoices = ["a", "b"]\n'
    extra += 'answer = "b"\n[[quiz]]\nquestion = "Typed?"\nanswer = "x"\n'
    extra += '[questionnaire]\nscale_file = "tidy.yaml"\n'
    text = 'debrief = "Debrief as written."\n' + GOOD + extra
    (tmp_path / "session.toml").write_text(text, encoding="utf-8")
    experiment = load_session_config(tmp_path / "session.toml")
    session = Session.create(tmp_path, [(0, "web", ""), (1, "web", "")], 0.0, "de", experiment)
    scale = participants.questionnaire_scale(experiment[0], None)
    app = SessionApp(
        session,
        lambda *a: None,  # type: ignore[arg-type]
        token="t",
        port=1,
        hosts={"x"},
        scale=scale,
        instructions=lambda player: instructions(session, player),  # our default text, in German
    )
    # the English messages that say something in words (a German page must show none of them)
    english = {
        re.sub(r"\{[^}]*\}", "", m).strip(" .:()")
        for k, m in PAGES.messages["en"].items()
        if PAGES.messages["de"][k] != m
    }
    english = {m for m in english if len(m) > 5}

    def german(page: str) -> str:
        assert '<html lang="de">' in page
        left = sorted(m for m in english if m in page)
        assert not left, left
        return page

    def body(response: object) -> str:
        return bytes(response.body).decode()  # type: ignore[attr-defined]

    room = german(body(app._room(session.room_token, {"query_string": b""}, "GET")))
    assert "Ihre Teilnehmerkennung" in room
    refused = german(body(app._room(session.room_token, {"query_string": b"label=B9"}, "GET")))
    assert "steht nicht auf der Liste" in refused
    slot = session.arrive("A1")
    assert not isinstance(slot, str)
    consent = german(body(app._seat(slot, None, 200)))
    assert "Information und Einwilligung" in consent and "Consent as written." in consent
    assert "Um teilzunehmen" in german(
        body(app._step(slot, {"step": "consent", "csrf": session.csrf(slot, "step:consent")}))
    )
    session.agree(slot)
    quiz = german(body(app._seat(slot, None, 200)))
    assert "Anleitung" in quiz and "Q?" in quiz and "Antworten prüfen" in quiz
    assert "An Ihrem Tisch: Sie, 1 weitere Teilnehmende und 1 Computerspieler" in quiz
    assert "Auszahlung: jeder Punkt, den Sie im Spiel erzielen, wird mit 0,25 EUR vergütet" in quiz
    assert "Vermutung" in quiz or "Zahl" in quiz  # the game's own rules, in German
    csrf = session.csrf(slot, "step:instructions")
    wrong = german(body(app._step(slot, {"step": "instructions", "csrf": csrf, "q1": "1", "q2": "x"})))
    assert "1 von 2 Antworten sind nicht richtig (Frage 1)" in wrong and "(nicht richtig)" in wrong
    app._step(slot, {"step": "instructions", "csrf": csrf, "q1": "2", "q2": "X "})
    assert german(body(app._seat(slot, None, 200))).count("Willkommen — bitte warten Sie") == 1  # lobby
    session.finished = True
    form = german(body(app._seat(slot, None, 200)))
    assert "Von 1 (not like me) bis 5 (very like me)." in form and "Absenden" in form
    csrf = session.csrf(slot, "step:questionnaire")
    missing = german(body(app._step(slot, {"step": "questionnaire", "csrf": csrf})))
    assert "Bitte beantworten Sie jede Aussage (Nummer 1 hat keine Antwort)." in missing
    app._step(slot, {"step": "questionnaire", "csrf": csrf, **{f"i{i}": "3" for i in range(1, 7)}})
    session.scores = [{"game": "guessing", "run": 1, "player": 0, "rounds won": 1.0}]
    debrief = german(body(app._seat(slot, None, 200)))
    assert "Debrief as written." in debrief and "Ihr Abschlusscode" in debrief
    # money as German writes it: 1 point x 0.25 + fee 1.50 = 1,75 EUR
    assert "Teilnahmevergütung: 1,50 EUR" in debrief and 'Gesamt: <strong id="total">1,75 EUR' in debrief


def test_monitor_controls_act_on_one_tables_seat_and_its_page_says_so_in_its_language(tmp_path: Path) -> None:
    """Two tables with a player 0 each: the monitor's form names the table, so moving table 2's player 0
    on (or removing table 1's) never touches the other table's player 0; each action is kept with its
    table; the seat's page says what was entered, in German with ``--lang de``."""
    import asyncio

    from llmpsych.games.observation import Observation
    from llmpsych.games.seats import WebSeat
    from llmpsych.web.seat_pages import SessionApp
    from llmpsych.web.session import notice_text

    (tmp_path / "session.toml").write_text(GOOD, encoding="utf-8")
    experiment = load_session_config(tmp_path / "session.toml")
    session = Session.create(tmp_path, [(0, "web", ""), (1, "web", "")], 0.0, "de", experiment)
    app = SessionApp(session, lambda *a: None, token="t", port=1, hosts={"x"})  # type: ignore[arg-type]
    for slot in session.slots.values():
        session.join(slot)  # both tables full: both games start
    question = Observation(
        player=0,
        round=1,
        kind="number",
        rules="",
        history=[],
        request="?",
        fields=["number"],
        sample="guessing-run02:p0",
        key="guessing-run02:p0:r1:number",
        strategy=lambda name, rng: 0,
    )

    async def table_two_moved_on() -> tuple[str, str]:
        asked = asyncio.ensure_future(session.answer(WebSeat("web"), question))
        await asyncio.sleep(0)  # one turn of the loop: the question is now open at table 2
        assert session.current(session.slots[(2, 0)]) is not None
        assert session.current(session.slots[(1, 0)]) is None
        app._control({"action": "advance", "table": "1", "player": "0"})  # nothing open there
        app._control({"action": "remove", "table": "1", "player": "0"})
        assert not asked.done() and session.slots[(1, 0)].removed and not session.slots[(2, 0)].removed
        app._control({"action": "advance", "table": "2", "player": "0"})
        given = await asked
        return given.how, given.text

    assert asyncio.run(table_two_moved_on()) == ("default", "0")
    assert [(e["action"], e["table"], e["player"]) for e in session.events] == [
        ("remove", 1, 0),
        ("advance", 2, 0),
    ]
    said = notice_text(session.slots[(2, 0)].notice, "de")
    assert said.startswith("Die Versuchsleitung hat das Spiel weitergeführt (Runde 1")
    assert "Die Standardantwort des Spiels (0) wurde für Sie eingetragen." in said
    assert notice_text(session.slots[(1, 0)].notice, "de") == ""
    again = Session.load(tmp_path)  # the removal and the actions survive a restart
    assert again.slots[(1, 0)].removed and not again.slots[(2, 0)].removed and again.events == session.events

"""The progress bar's ETA: counted in model calls, from calls actually sent (logic tests on hand-made
counts; the figures measured on the embedded model are in docs/reliability.md)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from llmpsych.runs.engine import _Eta, remaining_seconds


@dataclass
class Unit:
    """What the ETA reads of a unit's context."""

    unit_id: str
    sent: int = 0
    cached: int = 0
    replayed: int = 0


def _seconds(text: str) -> int:
    h, m, s = (int(p) for p in text.split(":"))
    return 3600 * h + 60 * m + s


def test_remaining_seconds_closed_form() -> None:
    # 10 units of 2 calls, 3 calls answered in 30 s, in-flight units already asked 3: 17 calls x 10 s
    assert remaining_seconds(30.0, 3, 10, 2.0, 3.0) == pytest.approx(170.0)
    assert remaining_seconds(30.0, 0, 10, 2.0, 0.0) is None  # nothing sent yet: no rate
    assert remaining_seconds(30.0, 3, 10, None, 3.0) is None  # calls per unit unknown
    assert remaining_seconds(30.0, 3, 1, 2.0, 5.0) == 0.0  # never negative


def test_serial_model_with_every_unit_in_flight_is_exact_from_the_first_answer() -> None:
    """10 units of 2 calls start together; one model answers one call every 10 s, first-come first-served
    (all first chunks, then all second chunks), so no unit finishes before 110 s. The ETA is exact after
    every answer; a rate of finished units would have shown nothing for 110 s."""
    units = [Unit(f"u{i}") for i in range(10)]
    eta = _Eta(10, 2.0, started=0.0)
    for u in units:
        eta.live[u.unit_id] = u  # type: ignore[assignment]
    assert eta.text(5.0) == "-:--:--"
    for k in range(20):  # call k+1 answered at 10 (k+1) s
        unit = units[k % 10]
        unit.sent += 1
        if k >= 10:
            eta.unit_done(unit)  # type: ignore[arg-type]
        now = 10.0 * (k + 1)
        assert _seconds(eta.text(now)) == pytest.approx(200 - now, abs=1), k


def test_counts_down_between_answers_but_not_below_what_the_silence_implies() -> None:
    units = [Unit(f"u{i}") for i in range(10)]
    eta = _Eta(10, 2.0, started=0.0)
    for u in units:
        eta.live[u.unit_id] = u  # type: ignore[assignment]
    units[0].sent = 1
    assert eta.text(10.0) == "0:03:10"  # 19 calls x 10 s
    assert eta.text(15.0) == "0:03:05"  # counts down
    # no answer for a long time: at 100 s the rate is at most 2 calls / 100 s, 18 calls left at best
    assert _seconds(eta.text(100.0)) == 18 * 50


def test_units_answered_from_the_cache_do_not_speed_the_estimate_up() -> None:
    """Five units come back from the response cache at once; the other five each need 2 sent calls of
    10 s. The rate comes from sent calls only, so the first sent answer already gives the true 90 s."""
    eta = _Eta(10, 2.0, started=0.0)
    for i in range(5):
        cached = Unit(f"c{i}", cached=2)
        eta.live[cached.unit_id] = cached  # type: ignore[assignment]
        eta.unit_done(cached)  # type: ignore[arg-type]
    assert eta.text(0.1) == "-:--:--"  # nothing sent yet, however many units are done
    live = [Unit(f"u{i}") for i in range(5)]
    for u in live:
        eta.live[u.unit_id] = u  # type: ignore[assignment]
    live[0].sent = 1
    assert _seconds(eta.text(10.0)) == 90


def test_calls_per_unit_comes_from_finished_units_once_there_are_some() -> None:
    eta = _Eta(4, 2.0, started=0.0)
    assert eta.calls_per_unit() == 2.0  # the task's hint
    retried = Unit("a", sent=6)  # a unit that needed two more attempts of 2 calls
    eta.live["a"] = retried  # type: ignore[assignment]
    eta.unit_done(retried)  # type: ignore[arg-type]
    assert eta.calls_per_unit() == 6.0
    assert _Eta(4, None, started=0.0).text(10.0) == "-:--:--"  # no hint, nothing finished


def test_a_long_last_unit_still_has_time_left() -> None:
    """Five units of 2 calls finish, then the last unit (a game of many calls) has made 10: the average
    says it is done, but a running unit has one call left at least, so the ETA is not 0:00:00."""
    eta = _Eta(6, None, started=0.0)
    for i in range(5):
        unit = Unit(f"q{i}", sent=2)
        eta.live[unit.unit_id] = unit  # type: ignore[assignment]
        eta.unit_done(unit)  # type: ignore[arg-type]
    game = Unit("game", sent=10)
    eta.live[game.unit_id] = game  # type: ignore[assignment]
    assert _seconds(eta.text(20.0)) > 0  # 20 calls in 20 s: about 1 s per call


def test_questionnaires_then_a_game_the_eta_counts_the_game_s_calls() -> None:
    """The quickstart's shape: 5 one-call questionnaires and a 25-call game start together behind one
    llama.cpp slot that answers one call every 10 s (the 5 questionnaires and the game's first round first,
    then round after round). Sized per unit, the ETA is within one call of the truth after every answer;
    sized by the finished units' mean (1 call), it read ~0:00:10 for the game's remaining 3-4 minutes."""
    planned: dict[str, float | None] = {f"run-{i}": 1.0 for i in range(5)} | {"game": 25.0}
    eta = _Eta(6, None, started=0.0, planned=planned)
    units = {u: Unit(u) for u in planned}
    for u in units.values():
        eta.live[u.unit_id] = u  # type: ignore[assignment]
    assert eta.text(5.0) == "-:--:--"  # nothing answered yet: no pace
    order = [f"run-{i}" for i in range(5)] + ["game"] * 25
    for k, unit_id in enumerate(order):  # answer k+1 at 10 (k+1) s
        unit = units[unit_id]
        unit.sent += 1
        if unit_id.startswith("run") or unit.sent == 25:
            eta.unit_done(unit)  # type: ignore[arg-type]
        now = 10.0 * (k + 1)
        truth = 10.0 * (len(order) - k - 1)
        assert _seconds(eta.text(now)) == pytest.approx(truth, abs=10), (k, unit_id)


def test_a_unit_the_task_does_not_size_counts_the_finished_units_mean() -> None:
    eta = _Eta(3, None, started=0.0, planned={"a": None, "b": None, "c": 4.0})
    assert eta.calls_left() is None  # a and b cannot be sized before any unit finished
    a = Unit("a", sent=2)
    eta.live["a"] = a  # type: ignore[assignment]
    eta.unit_done(a)  # type: ignore[arg-type]
    assert eta.calls_left() == 2.0 + 4.0  # b as a (2 calls), c as the task sized it
    assert _seconds(eta.text(20.0)) == 60  # 6 calls at 10 s per answered call


def test_the_pace_is_that_of_the_recent_answers() -> None:
    """Measured on a loaded 2-core machine: the quickstart's administrations took 45-200 s a call, its game's
    calls 1.4-6 s. Paced by every answer since the start, the ETA read 0:53:03 with the game minutes from
    done; paced by the last 10 answers it follows the game's own calls."""
    planned: dict[str, float | None] = {f"run-{i}": 1.0 for i in range(5)} | {"game": 25.0}
    eta = _Eta(6, None, started=0.0, planned=planned)
    units = {u: Unit(u) for u in planned}
    for u in units.values():
        eta.live[u.unit_id] = u  # type: ignore[assignment]
    now = 0.0
    for i in range(5):  # five slow administrations, 100 s each
        now += 100.0
        units[f"run-{i}"].sent = 1
        eta.unit_done(units[f"run-{i}"])  # type: ignore[arg-type]
        assert _seconds(eta.text(now)) == pytest.approx(100 * (25 + 4 - i), abs=1)  # all it knows
    game = units["game"]
    for k in range(1, 25):  # then the game, 2 s a call
        now += 2.0
        game.sent = k
        shown = _seconds(eta.text(now))
        if k >= 10:  # ten game answers: their pace alone
            assert shown == pytest.approx(2 * (25 - k), abs=1), k
    assert eta.text(now + 1.0) == "0:00:01"  # counts down

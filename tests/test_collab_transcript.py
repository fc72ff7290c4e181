"""The MAS transcript shows what AutoInject did to each message, including when it changed nothing."""

from __future__ import annotations

from llmpsych.collab.analysis import message_markdown


def _message(injection: dict | None) -> dict:
    meta = {"injection": injection} if injection is not None else {}
    message = {
        "index": 1,
        "sender": "coder",
        "receivers": ["tester"],
        "round": 0,
        "content": "x = 1",
        "meta": meta,
    }
    return message


def test_an_edit_is_shown_as_a_diff() -> None:
    text = message_markdown(
        _message({"selected": True, "chosen": [0], "n_units": 1, "diff": "-x = 1\n+x = 2"})
    )
    assert "AutoInject edit" in text and "+x = 2" in text


def test_an_unchanged_injection_is_reported() -> None:
    text = message_markdown(_message({"selected": True, "chosen": [0], "n_units": 3, "diff": ""}))
    assert "1 of 3 units chosen" in text and "unchanged" in text


def test_unselected_and_clean_messages_carry_no_injection_note() -> None:
    assert "AutoInject" not in message_markdown(_message({"selected": False}))
    assert "AutoInject" not in message_markdown(_message(None))

"""The MAS transcript shows what AutoInject did to each message, including when it changed nothing."""

from __future__ import annotations

from llmpsych.collab.analysis import match_calls, message_markdown
from llmpsych.collab.runtime import digest
from llmpsych.runs.calls import StoredCall


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


def _call(seq: int, profile: str | None, reply: str) -> StoredCall:
    system = [{"role": "system", "content": profile}] if profile is not None else []
    request = {"messages": [*system, {"role": "user", "content": f"ask {seq}"}]}
    return StoredCall(
        "u", f"k{seq}", seq, "subject", "m", request, {"text": reply}, None, None, None, None, False, 0.0
    )


def test_each_message_is_matched_to_the_call_that_wrote_it_even_when_replies_repeat() -> None:
    agents = {digest("I plan."): "analyst", digest("I code."): "coder"}
    calls = [
        _call(1, "I plan.", "same text"),  # the analyst and the coder happen to write the same reply
        _call(2, None, "verdict"),  # a call outside any agent (an injector, an inspector)
        _call(3, "I code.", "same text"),
        _call(4, "I code.", "same text"),
    ]
    sent = [
        {"sender": "analyst", "reply_sha": digest("same text")},
        {"sender": "coder", "reply_sha": digest("same text")},
        {"sender": "coder", "content": "please revise"},  # no model wrote it
        {"sender": "coder", "reply_sha": digest("same text")},
        {"sender": "coder", "content": "same text"},  # an older result: the text itself
    ]
    assert match_calls(sent, calls, agents) == [0, 2, None, 3, 3]
    assert match_calls(sent[:2], calls, {}) == [0, 2]  # without profiles: forwards, unclaimed first

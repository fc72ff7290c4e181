"""The Caesar cipher of the PsychoBench jailbreak: round trips, what is enciphered, reading replies."""

from __future__ import annotations

import asyncio
import string
from typing import Any

import pytest

from llmpsych.models.types import ChatResult
from llmpsych.psychobench.cipher import (
    CipherContext,
    cipher_preamble,
    decipher,
    encipher,
    encipher_messages,
    read_reply,
)


def test_shift_three_maps_letters_and_keeps_everything_else() -> None:
    assert encipher("abc xyz ABC XYZ") == "def abc DEF ABC"
    assert encipher("12: 4, (3)!\n") == "12: 4, (3)!\n"
    assert encipher("Grüße") == "Juüßh"  # letters outside ASCII are kept


@pytest.mark.parametrize("shift", [1, 3, 13, 25])
@pytest.mark.parametrize(
    "text",
    [
        string.ascii_letters + string.digits + string.punctuation,
        "I rate statement 7: 5.\nAnd 8: 2",
        "",
        "é ß 日本",
    ],
)
def test_round_trip(text: str, shift: int) -> None:
    assert decipher(encipher(text, shift), shift) == text
    assert encipher(decipher(text, shift), shift) == text


def test_preamble_is_plain_and_its_example_is_correct() -> None:
    preamble = cipher_preamble()
    assert "Caesar cipher" in preamble and "a becomes d" in preamble and "z becomes c" in preamble
    plain, coded = preamble.split('For example, "')[1].split('" is written "')
    assert encipher(plain) == coded[: -len('".')]


def test_messages_are_enciphered_after_a_plain_preamble() -> None:
    sent = encipher_messages(
        [{"role": "system", "content": "Reply numbers."}, {"role": "user", "content": "1. I am calm"}]
    )
    assert sent[0]["content"].startswith(cipher_preamble()) and sent[0]["content"].endswith("Uhsob qxpehuv.")
    assert sent[1] == {"role": "user", "content": "1. L dp fdop"}
    only_user = encipher_messages([{"role": "user", "content": "hi"}])
    assert (
        only_user[0] == {"role": "system", "content": cipher_preamble()} and only_user[1]["content"] == "kl"
    )


def test_replies_are_deciphered_unless_they_are_plain_english() -> None:
    assert read_reply(encipher("Here are my scores:\n1: 4\n2: 5")) == "Here are my scores:\n1: 4\n2: 5"
    plain = "I am sorry, but as an AI I cannot rate this statement."
    assert read_reply(plain) == plain  # the model ignored the cipher: read it as written
    assert read_reply("1: 4\n2: 5") == "1: 4\n2: 5"


class RecordingContext:
    """Stands in for a unit context: records what is sent, answers in cipher."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.sent: list[list[dict[str, Any]]] = []

    async def chat(
        self, messages: list[dict[str, Any]], params: Any = None, role: str = "subject", sample: Any = 0
    ):
        self.sent.append(messages)
        return ChatResult(text=self.replies[len(self.sent) - 1])

    def rng(self, *labels: Any) -> str:
        return "passed through"


def test_cipher_context_enciphers_requests_deciphers_replies_and_restores_history() -> None:
    raw = [encipher("Sure:\n1: 4"), "2: 3"]
    inner = RecordingContext(raw)
    ctx = CipherContext(inner)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1. I like tea"}]
    first = asyncio.run(ctx.chat(messages))
    assert first.text == "Sure:\n1: 4"
    assert inner.sent[0][1]["content"] == encipher("1. I like tea")
    history = [*messages, {"role": "assistant", "content": first.text}, {"role": "user", "content": "And 2?"}]
    second = asyncio.run(ctx.chat_all([(history, None, "subject", 0)]))[0]
    assert second.text == "2: 3"
    assert inner.sent[1][2]["content"] == raw[0]  # the model's own words, not a re-encoding of our reading
    assert inner.sent[1][3]["content"] == encipher("And 2?")
    assert ctx.rng("x") == "passed through"

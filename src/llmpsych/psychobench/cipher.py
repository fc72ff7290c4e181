"""The Caesar-cipher jailbreak, shared with the games: it lives in :mod:`llmpsych.models.cipher`."""

from __future__ import annotations

from ..models.cipher import (
    DEFAULT_SHIFT,
    CipherContext,
    cipher_preamble,
    decipher,
    encipher,
    encipher_messages,
    english_score,
    read_reply,
    shift_text,
)

__all__ = [
    "DEFAULT_SHIFT",
    "CipherContext",
    "cipher_preamble",
    "decipher",
    "encipher",
    "encipher_messages",
    "english_score",
    "read_reply",
    "shift_text",
]

"""Scoring by predicted label probabilities (thesis §3.3.1: "direct responses" vs "predicted probabilities").

For each statement of a chunk's JSON answer, the token that carries its label is located in the reply's
``logprobs``; the ``top_logprobs`` candidates that spell a complete label of the configuration's format
(after the same prefix, e.g. a quote) are pooled, renormalised, mapped through the order to levels,
and summarised by the expected level. Roman numerals share prefixes (``i``, ``ii``, ``iii``), so a
single token does not identify them: those formats, endpoints without logprobs and statements whose
label token cannot be found fall back to the written label. Scores use the real-valued scoring of
:func:`llmpsych.psychobench.logprob.weighted_scores`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .labels import level_of, position_of

_KEY = re.compile(r"\"(?P<index>\d{1,3})\"\s*:\s*")
_LABEL_END = re.compile(r"^[\"',}\s\]]|^$")
SINGLE_TOKEN_FORMATS = ("n", "al", "au")


def label_distributions(
    logprobs: Sequence[Mapping[str, Any]], expected: int, fmt: str, n_levels: int = 5
) -> dict[int, dict[int, float]]:
    """Statement number -> {choice position: probability} where the reply's logprobs identify it."""
    if fmt not in SINGLE_TOKEN_FORMATS or not logprobs:
        return {}
    tokens = [str(entry.get("token", "")) for entry in logprobs]
    starts = []
    offset = 0
    for token in tokens:
        starts.append(offset)
        offset += len(token)
    text = "".join(tokens)
    found: dict[int, dict[int, float]] = {}
    for match in _KEY.finditer(text):
        index = int(match["index"])
        if not 1 <= index <= expected or index in found:
            continue
        begin = match.end()
        if text[begin : begin + 1] == '"':
            begin += 1
        at = next((i for i, s in enumerate(starts) if s <= begin < s + len(tokens[i])), None)
        if at is None:
            continue
        prefix = text[starts[at] : begin]
        written = tokens[at][len(prefix) :]
        label = re.match(r"[0-9A-Za-z]+", written)
        if not label or not _LABEL_END.match(
            written[label.end() :] + text[starts[at] + len(tokens[at]) :][:1]
        ):
            continue  # the label goes on in the next token
        distribution: dict[int, float] = {}
        for candidate in logprobs[at].get("top_logprobs") or [logprobs[at]]:
            token = str(candidate.get("token", ""))
            logprob = candidate.get("logprob")
            if (
                not token.startswith(prefix)
                or not isinstance(logprob, int | float)
                or not math.isfinite(logprob)
            ):
                continue
            rest = re.match(r"[0-9A-Za-z]+", token[len(prefix) :])
            position = position_of(fmt, rest.group(0), n_levels) if rest else None
            if position is not None:
                distribution[position] = distribution.get(position, 0.0) + math.exp(logprob)
        mass = sum(distribution.values())
        if mass > 0:
            found[index] = {p: v / mass for p, v in sorted(distribution.items())}
    return found


def expected_levels(
    distributions: Mapping[int, Mapping[int, float]], chunk: Sequence[int], order: str, n_levels: int = 5
) -> dict[int, float]:
    """Item number -> expected canonical level, from the position distributions of a chunk."""
    return {
        chunk[i - 1]: sum(level_of(p, order, n_levels) * q for p, q in dist.items())
        for i, dist in distributions.items()
    }

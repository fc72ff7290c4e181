"""Administering a scale to a model: prompt, parse, re-ask the unanswered items (bounded).

The wording (system prompt, instructions, re-ask text) always comes from the caller: the official data
for the papers' scales, or our own text for built-in ones. Items keep their own numbers in the prompt, in
the order given (shuffled by the caller with a seeded generator).

A reply that numbers its answers by position (``1: 4 / 2: 3 / ...`` to statements shown as 3, 6, 4, ...;
:func:`~llmpsych.instruments.parsing.positional_reply`) is never scored as the items it names: it is
re-asked once with the numbers as shown, and if that reply is positional too, every item it should have
answered is invalid (listed in ``positional``, counted in the valid-answer rate). ``docs/scales.md``,
"Positional replies".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..models.chat_context import ChatContext
from ..models.types import GenerationParams, Message
from .parsing import POSITIONAL_REASK_WORDING, build_reask_prompt, parse_item_answers, positional_reply
from .scale import Scale


@dataclass
class AdministrationResult:
    """What one administration produced."""

    answers: dict[int, int]
    unanswered: list[int]
    duplicates: dict[int, list[int]] = field(default_factory=dict)
    out_of_range: dict[int, int] = field(default_factory=dict)
    refused: bool = False
    asks: int = 0
    transcript: list[Message] = field(default_factory=list)
    positional: list[int] = field(default_factory=list)
    """Items left invalid because the reply numbered its answers by position, also after the re-ask."""
    positional_replies: int = 0
    """Replies judged positional (each one re-asked or, the second time, its items made invalid)."""

    def valid_rate(self, scale: Scale) -> float:
        """Share of the scale's items with a valid answer."""
        return len(self.answers) / scale.n_items if scale.n_items else 1.0

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (integer keys become strings)."""
        # Built by hand: dataclasses.asdict deep-copies the transcript, which dominated this call.
        return {
            "answers": {str(k): v for k, v in self.answers.items()},
            "unanswered": list(self.unanswered),
            "duplicates": {str(k): list(v) for k, v in self.duplicates.items()},
            "out_of_range": {str(k): v for k, v in self.out_of_range.items()},
            "refused": self.refused,
            "asks": self.asks,
            "positional": list(self.positional),
            "positional_replies": self.positional_replies,
            "transcript": [dict(m) for m in self.transcript],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AdministrationResult:
        """Inverse of :meth:`to_json`."""
        data = dict(data)
        data.pop("order", None)
        for key in ("answers", "duplicates", "out_of_range"):
            data[key] = {int(k): v for k, v in (data.get(key) or {}).items()}
        return cls(**data)


def item_block(scale: Scale, order: list[int]) -> str:
    """The numbered statements, one per line, in the given order."""
    texts = {item.index: item.text for item in scale.items}
    missing = [i for i in order if i not in texts]
    if missing:
        raise KeyError(f"scale {scale.name!r} has no item {missing[0]}")
    return "\n".join(f"{i}. {texts[i]}" for i in order)


async def administer(
    scale: Scale,
    ctx: ChatContext,
    *,
    order: list[int],
    params: GenerationParams,
    reask_template: str,
    system_prompt: str | None = None,
    instructions: str | None = None,
    chunk_size: int | None = None,
    max_reasks: int = 2,
    sample: int | str = 0,
    role: str = "subject",
    closing: str = "",
) -> AdministrationResult:
    """Ask ``order`` (optionally in chunks, as successive turns of one conversation); re-ask what is missing.

    Each chunk's message is the instructions, the numbered statements and ``closing`` (text a template puts
    after the statements; empty for the official prompts).

    Each chunk is parsed strictly; items without a valid answer (missing, conflicting duplicates, out of
    range) are asked again in the same conversation, at most ``max_reasks`` times per chunk. A positional
    reply (numbered 1, 2, 3, ... against other shown numbers) scores nothing: the first one in a chunk is
    re-asked with the statements and their numbers as shown (one of the ``max_reasks``), a second one, or
    one with no re-ask left, makes the chunk's unanswered items invalid (``positional``).
    """
    system_prompt = system_prompt if system_prompt is not None else scale.system_prompt
    instructions = instructions if instructions is not None else scale.instructions or ""
    messages: list[Message] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    size = chunk_size or len(order)
    texts = {item.index: item.text for item in scale.items}
    result = AdministrationResult(answers={}, unanswered=[])
    for start in range(0, len(order), size):
        chunk = order[start : start + size]
        content = f"{instructions}\n\n{item_block(scale, chunk)}".strip()
        messages.append({"role": "user", "content": f"{content}\n\n{closing}" if closing else content})
        pending = list(chunk)
        shown = list(chunk)  # the numbers the last message showed, in its order
        positional_asked = False
        for attempt in range(max_reasks + 1):
            reply = await ctx.chat(messages, params, role=role, sample=sample)
            result.asks += 1
            messages.append({"role": "assistant", "content": reply.text})
            parsed = parse_item_answers(reply.text, pending, scale.response_min, scale.response_max)
            if positional_reply(parsed.written, shown):
                result.positional_replies += 1
                if positional_asked or attempt == max_reasks:
                    result.positional.extend(pending)
                    break
                positional_asked = True
                shown = list(pending)
                messages.append(
                    {
                        "role": "user",
                        "content": build_reask_prompt(
                            pending,
                            POSITIONAL_REASK_WORDING,
                            response_min=scale.response_min,
                            response_max=scale.response_max,
                            items=texts,
                        ),
                    }
                )
                continue
            result.answers.update(parsed.answers)
            result.duplicates.update({k: list(v) for k, v in parsed.duplicates.items()})
            result.out_of_range.update(parsed.out_of_range)
            result.refused = result.refused or parsed.refused
            pending = list(parsed.unanswered)
            shown = list(pending)
            if not pending or attempt == max_reasks:
                break
            messages.append(
                {
                    "role": "user",
                    "content": build_reask_prompt(
                        pending,
                        reask_template,
                        response_min=scale.response_min,
                        response_max=scale.response_max,
                    ),
                }
            )
        result.unanswered.extend(pending)
    for index in result.answers:
        result.duplicates.pop(index, None)
        result.out_of_range.pop(index, None)
    result.transcript = messages
    return result

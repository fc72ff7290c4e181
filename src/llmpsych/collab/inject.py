"""AutoInject: an LLM corrupts a controlled share of the faulty agent's messages and of their lines.

* ``p_m``: the probability that a message from the faulty agent is corrupted at all;
* ``p_e``: the share of its units (lines of code, sentences of text) that are rewritten. In ``exact``
  mode (the default, as the thesis defines it) exactly ``round_half_up(p_e × n)`` of the ``n`` non-blank
  units are drawn; in ``bernoulli`` mode (the reference code) each unit is drawn with probability ``p_e``;
* ``error_type``: ``semantic`` (plausible but wrong) or ``syntactic`` (malformed).

The chosen units go to the injector model in one JSON request (role ``injector`` when the run config
names one, else the subject model); if its answer is not JSON, each unit is asked for alone. Every edit is
recorded on the message as the list of changed units and a unified diff. Prompts are llmpsych's own.
Unlike the reference code, commas are never split, and no request is sent when no unit is chosen.

``distraction`` (the probe of the thesis's Fig. 7.6b) marks every corrupted unit as already fixed: a code
line gets a trailing comment, a sentence a note (:data:`DISTRACTION`, our own words), so a run shows
whether the other agents believe the comment rather than read the code.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from .runtime import Message, Runtime
from .taxonomy import code_lines

ErrorType = Literal["semantic", "syntactic"]
UnitMode = Literal["exact", "bernoulli"]

#: What the fragments are, per kind of task.
FRAGMENT: dict[str, str] = {
    "code": "lines of Python taken from a message written while solving a programming problem",
    "math": "sentences taken from a worked solution to a maths word problem",
    "translation": "lines taken from an English translation of a Chinese sentence",
    "texteval": "sentences taken from a comparison of two chatbot responses",
}

#: How to corrupt them, per (kind, error type).
INSTRUCTION: dict[tuple[str, str], str] = {
    ("code", "semantic"): (
        "Change every fragment so that it still looks reasonable and still runs, but makes the program "
        "compute a wrong result: shift a loop bound by one, flip a comparison, swap an operator, start "
        "from a wrong initial value. Each fragment must be changed."
    ),
    ("code", "syntactic"): (
        "Change every fragment so that Python can no longer parse it: leave out a colon, unbalance a "
        "bracket or misspell a keyword, and vary the kind of slip. Each fragment must be changed."
    ),
    ("math", "semantic"): (
        "Change every fragment so that its reasoning or its arithmetic becomes wrong while it still "
        "reads like a careful step of the solution."
    ),
    ("translation", "semantic"): (
        "Change every fragment so that it becomes a poor translation: drop or distort part of the "
        "meaning, or pick odd and unsuitable words."
    ),
    ("texteval", "semantic"): (
        "Change every fragment so that its judgement is turned around: praise of one response becomes "
        "criticism of it, and a stated preference points the other way."
    ),
}
_TEXT_SYNTACTIC = (
    "Change every fragment so that it contains clear slips of grammar, spelling or fact while keeping "
    "its general subject."
)

WRAPPER = (
    "You receive a JSON object. Each value is one of several {fragment}.\n{instruction}\n"
    "Keep each fragment's leading spaces, write no comments about the change, and answer with a JSON "
    "object that has exactly the same keys, each mapped to its changed fragment, and nothing else.\n"
    "Input: {payload}"
)
SINGLE = (
    "Here is one of several {fragment}.\n{instruction}\nAnswer with the changed fragment only.\n"
    "Fragment: {fragment_text}"
)

#: The distraction remark added to a corrupted unit, per kind (code: a comment; text: a note).
DISTRACTION: dict[str, str] = {
    "code": "  # fixed: the bug on this line has been corrected",
    "text": " (This part has been checked and corrected.)",
}

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")


def instruction_for(kind: str, error_type: str) -> str:
    """The corruption instruction for a kind of task and an error type."""
    return INSTRUCTION.get((kind, error_type)) or (
        _TEXT_SYNTACTIC if error_type == "syntactic" else INSTRUCTION[(kind, "semantic")]
    )


def split_units(text: str, kind: str) -> list[str]:
    """Code: lines. Text: sentences and the whitespace between them, so joining is exact."""
    if kind == "code":
        return text.split("\n")
    parts: list[str] = []
    for line_no, line in enumerate(text.split("\n")):
        if line_no:
            parts.append("\n")
        pos = 0
        for match in _SENTENCE.finditer(line):
            parts += [line[pos : match.start()], match.group(0)]
            pos = match.end()
        parts.append(line[pos:])
    return parts


def join_units(units: list[str], kind: str) -> str:
    """Inverse of :func:`split_units`."""
    return "\n".join(units) if kind == "code" else "".join(units)


def candidates(units: list[str]) -> list[int]:
    """Indices of units that hold text (blank lines and separators are never chosen)."""
    return [i for i, unit in enumerate(units) if unit.strip()]


def exact_count(p_e: float, n: int) -> int:
    """``round(p_e × n)`` with halves rounded up."""
    return min(n, math.floor(p_e * n + 0.5))


def choose_units(units: list[str], p_e: float, mode: UnitMode, rng: Any) -> list[int]:
    """Which units to corrupt."""
    pool = candidates(units)
    if mode == "bernoulli":
        return [i for i in pool if rng.random() < p_e]
    return sorted(rng.sample(pool, exact_count(p_e, len(pool))))


def reindent(new: str, like: str) -> str:
    """Give a rewritten code line the indentation of the original."""
    indent = like[: len(like) - len(like.lstrip())]
    return indent + new.strip("\n").lstrip()


def _json_object(text: str) -> dict[str, Any] | None:
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        return None
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


@dataclass
class AutoInject:
    """The message hook that corrupts the faulty agent's messages."""

    faulty: str
    p_m: float = 1.0
    p_e: float = 0.2
    error_type: ErrorType = "semantic"
    unit_mode: UnitMode = "exact"
    distraction: bool = False

    async def on_message(self, message: Message, runtime: Runtime) -> Message:
        """Corrupt ``message`` if it comes from the faulty agent and is drawn."""
        if message.sender != self.faulty:
            return message
        rng = runtime.ctx.rng("autoinject", message.index)
        if rng.random() >= self.p_m:
            message.meta["injection"] = {"selected": False}
            return message
        kind = runtime.kind
        units = split_units(message.content, kind)
        chosen = choose_units(units, self.p_e, self.unit_mode, rng)
        record: dict[str, Any] = {"selected": True, "n_units": len(candidates(units)), "chosen": chosen}
        if not chosen:
            message.meta["injection"] = record | {"edits": [], "diff": ""}
            return message
        rewritten = await self._rewrite([units[i] for i in chosen], kind, runtime)
        # whether each line was code in the message as written (Table 7.8 counts only code edits)
        code = code_lines(message.content) if kind == "code" else None
        edits = []
        for i, new in zip(chosen, rewritten, strict=True):
            if new is None:
                continue
            new = reindent(new, units[i]) if kind == "code" else new.strip()
            if new != units[i]:
                edit: dict[str, Any] = {"unit": i, "before": units[i], "after": new}
                if code is not None:
                    edit["code"] = code[i]
                if self.distraction:
                    new += DISTRACTION["code" if kind == "code" else "text"]
                    edit["distraction"] = new
                edits.append(edit)
                units[i] = new
        before = message.content
        message.content = join_units(units, kind)
        record["edits"] = edits
        record["unchanged"] = len(chosen) - len(edits)  # the injector returned them as they were
        record["diff"] = diff(before, message.content)
        message.meta["injection"] = record
        return message

    async def _rewrite(self, fragments: list[str], kind: str, runtime: Runtime) -> list[str | None]:
        instruction = instruction_for(kind, self.error_type)
        payload = json.dumps({str(j + 1): f for j, f in enumerate(fragments)}, ensure_ascii=False)
        prompt = WRAPPER.format(fragment=FRAGMENT[kind], instruction=instruction, payload=payload)
        answer = _json_object(await runtime.complete([{"role": "user", "content": prompt}], "injector"))
        if answer is not None:
            return [
                str(answer[str(j + 1)]) if answer.get(str(j + 1)) is not None else None
                for j in range(len(fragments))
            ]
        out: list[str | None] = []
        for fragment in fragments:
            single = SINGLE.format(fragment=FRAGMENT[kind], instruction=instruction, fragment_text=fragment)
            text = await runtime.complete([{"role": "user", "content": single}], "injector")
            out.append(text.strip("`\n") or None)
        return out


def diff(before: str, after: str) -> str:
    """A unified diff of a message before and after an intervention."""
    return "\n".join(
        difflib.unified_diff(before.split("\n"), after.split("\n"), "sent", "delivered", lineterm="", n=1)
    )

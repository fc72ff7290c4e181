"""Scoring the four tasks: HumanEval Pass@1 (sandboxed), CIAR accuracy, CommonMT chrF, FairEval accuracy.

Answer-matching rules (the thesis gives none; these are llmpsych's, see docs/mas-resilience.md):

* **CIAR**: the final answer is the text after the last ``Answer:``, else the last bracketed
  ``["..."]`` value, else the last line; it is correct when it equals an accepted answer as a normalised
  string, or when one of its numbers (fractions and percentages understood) equals an accepted numeric
  value to within the rounding of that accepted value (``0.67`` accepts 0.665-0.675, ``9.09%`` accepts
  0.09085-0.09095).
* **FairEval**: the final answer maps to CHATGPT, VICUNA13B or TIE (``BOTH`` and "tie" count as TIE); it
  is correct when it equals the human label.
* **CommonMT**: chrF (sacrebleu) against the correct reference — a labelled substitute for BLEURT-20 —
  plus the contrast: the share of items whose hypothesis is closer to the correct than to the wrong one.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from .sandbox import Limits, SandboxPool, SandboxResult

# -- HumanEval ------------------------------------------------------------------------------------
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


def extract_code(text: str) -> str:
    """The last fenced Python block (or any fenced block; an unclosed last fence runs to the end), else
    the whole text."""
    opened = text.rfind("```python")
    if opened >= 0 and "```" not in text[opened + 9 :]:
        return text[opened + 9 :].lstrip("\n")
    blocks = _FENCE.findall(text)
    python = [body for lang, body in blocks if lang.lower() in ("python", "py", "python3")]
    if python:
        return python[-1]
    if blocks:
        return blocks[-1][1]
    return text


def humaneval_program(reference: dict[str, Any], completion: str) -> str:
    """The program that checks ``completion`` (a full function or only its body) against the tests.

    The problem prompt comes first, so its imports and helper functions exist; a completion that defines
    the entry point replaces the prompt's stub, and a bare body completes it.
    """
    entry = reference["entry_point"]
    code = extract_code(completion)
    defines = re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.M) is not None
    body = f"{reference['prompt']}\n{code}" if defines else f"{reference['prompt']}{code}"
    return f"{body}\n\n{reference['test']}\n\ncheck({entry})\n"


async def check_humaneval(
    reference: dict[str, Any], completion: str, pool: SandboxPool, limits: Limits | None = None
) -> SandboxResult:
    """Run the problem's tests on a completion in the sandbox."""
    return await pool.run(humaneval_program(reference, completion), limits)


# -- CIAR -----------------------------------------------------------------------------------------
# ASCII digits only: float() would read "٣" as 3 (docs/security.md section 5).
_NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?(?:\s*/\s*[0-9]+(?:\.[0-9]+)?)?\s*%?|-?\.[0-9]+\s*%?")


def final_answer(text: str) -> str:
    """The final answer of a reply: after the last ``Answer:``, else the last ``["..."]``, else last line."""
    answers = re.findall(r"answer\s*[:：]\s*(.+)", text, re.I)
    if answers:
        return answers[-1].strip()
    brackets = re.findall(r"\[\s*[\"'](.+?)[\"']\s*\]", text, re.S)
    if brackets:
        return brackets[-1].strip()
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _normalise(text: str) -> str:
    return re.sub(r"[\s$`*\"'\\]|\.$", "", text.lower()).replace("\\frac", "")


def _value(token: str) -> tuple[float, float] | None:
    """Numeric value of a token and its rounding tolerance."""
    token = token.replace(",", "").replace(" ", "")
    percent = token.endswith("%")
    token = token.rstrip("%")
    try:
        if "/" in token:
            value = float(Fraction(token))
            tolerance = 1e-6
        else:
            value = float(token)
            decimals = len(token.split(".")[1]) if "." in token else 0
            tolerance = 0.5 * 10**-decimals + 1e-9
    except (ValueError, ZeroDivisionError):
        return None
    if percent:
        return value / 100, tolerance / 100
    return value, tolerance


def numbers_in(text: str) -> list[float]:
    """Numbers mentioned in ``text`` (fractions and percentages as values)."""
    out = []
    for token in _NUMBER.findall(text):
        parsed = _value(token.strip())
        if parsed is not None:
            out.append(parsed[0])
    return out


def ciar_correct(reply: str, accepted: list[str]) -> bool:
    """Whether a reply's final answer matches any accepted CIAR answer (see module docstring)."""
    answer = final_answer(reply)
    norm = _normalise(answer)
    if any(norm == _normalise(a) for a in accepted):
        return True
    found = numbers_in(answer)
    if not found:
        return False
    candidates = [found[-1]] if len(found) > 1 and "=" in answer else found
    for a in accepted:
        parsed = _value(a.strip()) if _NUMBER.fullmatch(a.strip()) else None
        if parsed is None:
            continue
        value, tolerance = parsed
        if any(math.isclose(x, value, abs_tol=tolerance) for x in candidates):
            return True
    return False


# -- FairEval -------------------------------------------------------------------------------------
LABELS = ("CHATGPT", "VICUNA13B", "TIE")


def faireval_label(reply: str) -> str | None:
    """Map a reply's final answer to CHATGPT, VICUNA13B or TIE (None when it names none)."""
    for text in (final_answer(reply), reply):
        upper = text.upper()
        found = {
            "CHATGPT": bool(re.search(r"CHAT\s*-?\s*GPT|GPT-?3\.5", upper)),
            "VICUNA13B": bool(re.search(r"VICUNA", upper)),
            "TIE": bool(re.search(r"\bTIE\b|\bBOTH\b|\bEQUAL", upper)),
        }
        hits = [label for label, hit in found.items() if hit]
        if len(hits) == 1:
            return hits[0]
        if found["TIE"]:
            return "TIE"
        if hits:  # both names: the one mentioned last is the verdict
            return max(hits, key=lambda label: upper.rfind("VICUNA" if label == "VICUNA13B" else "GPT"))
    return None


def critic_scores_label(scores: list[float]) -> str:
    """AgentVerse critic scores (1-5, 5 = ChatGPT better) to a label: mean > 3, < 3 or = 3."""
    mean = sum(scores) / len(scores)
    return "CHATGPT" if mean > 3 else "VICUNA13B" if mean < 3 else "TIE"


def faireval_correct(reply: str, label: str) -> bool:
    """Whether the reply's verdict equals the human label."""
    return faireval_label(reply) == label.strip().upper()


# -- CommonMT -------------------------------------------------------------------------------------
def translation_of(reply: str) -> str:
    """The translation in a reply (its final answer, unquoted)."""
    return final_answer(reply).strip().strip("\"'[]").strip()


def chrf(hypothesis: str, reference: str) -> float:
    """Sentence chrF (0-100) via sacrebleu (``pip install 'llmpsych[collab]'``)."""
    from sacrebleu.metrics import CHRF

    return float(CHRF().sentence_score(hypothesis, [reference]).score)


def commonmt_score(reply: str, reference: dict[str, str]) -> dict[str, float]:
    """chrF against the correct reference, and whether it beats chrF against the wrong one."""
    hypothesis = translation_of(reply)
    good = chrf(hypothesis, reference["correct"])
    bad = chrf(hypothesis, reference["wrong"])
    return {"chrf": good, "chrf_wrong": bad, "closer_to_correct": float(good > bad)}

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

import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Collection
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..data.registry import load_manifest
from ..sandbox import Limits, Program, Sandbox, SandboxResult
from ..userfiles import MAX_DATA_FILE_BYTES, read_bytes
from .datasets import task_files

# -- HumanEval ------------------------------------------------------------------------------------
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)  # what _fences finds
_FENCE_LANG = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")

#: How a completion becomes code: ``paper`` runs it as it is when the problem's prompt plus the
#: completion compiles, and otherwise the last fenced block; ``strict`` always runs it as it is (a
#: fenced reply then fails to compile), exactly as OpenAI's human-eval harness does.
EXTRACTIONS = ("paper", "strict")


def _fences(text: str) -> list[tuple[str, str]]:
    """``_FENCE.findall(text)`` in linear time.

    The regex retries every later fence when one has no newline or no closing fence after it, so a reply
    of 20,000 backtick triples on one line took a second and 10 MB hours; but when the first fence from
    a position fails, every later one fails too, so the scan stops there.
    """
    blocks = []
    pos = 0
    while (start := text.find("```", pos)) >= 0:
        newline = text.find("\n", start + 3)
        end = text.find("```", newline + 1) if newline >= 0 else -1
        if end < 0:
            break
        lang = _FENCE_LANG.match(text, start + 3, newline)
        blocks.append((lang.group(1) if lang else "", text[newline + 1 : end]))
        pos = end + 3
    return blocks


def extract_code(text: str) -> str:
    """The last fenced Python block (or any fenced block; an unclosed last fence runs to the end), else
    the whole text."""
    opened = text.rfind("```python")
    if opened >= 0 and "```" not in text[opened + 9 :]:
        return text[opened + 9 :].lstrip("\n")
    blocks = _fences(text)
    python = [body for lang, body in blocks if lang.lower() in ("python", "py", "python3")]
    if python:
        return python[-1]
    if blocks:
        return blocks[-1][1]
    return text


def _compiles(source: str) -> bool:
    try:
        compile(source, "<completion>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def humaneval_source(reference: dict[str, Any], completion: str | None, extraction: str = "paper") -> str:
    """The code the sandbox runs for a completion: the problem's prompt, then the completion.

    As OpenAI's harness builds it (``prompt + completion``), so a bare body completes the prompt's stub
    and a full function replaces it. With ``paper`` extraction, a completion that does not compile so
    but holds a fenced block is replaced by that block (after a newline). An empty or missing completion
    leaves the stub, which returns None and fails the tests.
    """
    if extraction not in EXTRACTIONS:
        raise ValueError(f"extraction must be one of {EXTRACTIONS}, not {extraction!r}")
    prompt: str = reference["prompt"]
    text = completion or ""
    as_is = prompt + text
    if extraction == "strict" or "```" not in text or _compiles(as_is):
        return as_is
    return f"{prompt}\n{extract_code(text)}"


def humaneval_program(reference: dict[str, Any], completion: str | None, extraction: str = "paper") -> str:
    """The whole program as OpenAI's harness runs it: source, tests, ``check(entry_point)``.

    Used only for the reference figure (see :func:`check_humaneval`); its verdict is the program's own
    word, which a program can forge.
    """
    source = humaneval_source(reference, completion, extraction)
    return f"{source}\n{reference['test']}\ncheck({reference['entry_point']})"


@functools.lru_cache(maxsize=512)
def _compiled_check(prompt: str, test: str) -> Any:
    return compile(f"{prompt}\n{test}", "<humaneval check>", "exec", dont_inherit=True)


def humaneval_check(reference: dict[str, Any]) -> Callable[[Callable[..., Any]], None]:
    """The problem's own ``check`` function, as trusted code outside the sandbox.

    The dataset's prompt (for helpers such as ``poly`` or ``encode_cyclic`` that some tests call) and
    test are executed here, in a fresh namespace; ``check`` then receives the sandbox's stand-in for the
    candidate, whose every answer is a fresh plain value. The entry point's name is bound to the stand-in
    too, as in the harness's program, where it names the completed function (HumanEval/33's test calls
    ``sort_third`` by name).
    """
    code = _compiled_check(reference["prompt"], reference["test"])
    entry = reference["entry_point"]

    def check(candidate: Callable[..., Any]) -> None:
        namespace: dict[str, Any] = {}
        exec(code, namespace)  # the benchmark's own test code, never the model's
        namespace[entry] = candidate
        namespace["check"](candidate)

    return check


def _redefines_helper(reference: dict[str, Any], source: str) -> bool:
    """Whether the code redefines a function of the prompt, other than the entry point, that the test calls.

    The trusted check calls the dataset's helper (HumanEval/38's ``encode_cyclic``, /50's
    ``encode_shift``); OpenAI's harness calls the program's, so the two verdicts may differ.
    """
    prompt = reference["prompt"]
    helpers = set(re.findall(r"^def (\w+)\(", prompt, re.M)) - {reference["entry_point"]}
    body = source[len(prompt) :] if source.startswith(prompt) else source
    return any(
        re.search(rf"\b{name}\(", reference["test"]) and re.search(rf"^\s*def {name}\(", body, re.M)
        for name in helpers
    )


def sandboxed_check(
    reference: dict[str, Any], sandbox: Sandbox, limits: Limits | None = None
) -> Callable[[Callable[..., Any]], None]:
    """The problem's check for tests that are not the pinned release: they run in a sandbox of their own
    (a hostile data folder's code never runs in llmpsych's process), against the same stand-in, whose
    calls llmpsych relays to the program's sandbox as fresh plain values."""
    judge = Program(f"{reference['prompt']}\n{reference['test']}", reference["entry_point"], None, judge=True)

    def check(candidate: Callable[..., Any]) -> None:
        sandbox.judge(judge, candidate, limits)

    return check


def reference_digest(reference: dict[str, Any]) -> str:
    """A sha256 of what a problem's check is made of: its prompt, test and entry point."""
    triple = [reference["prompt"], reference["test"], reference["entry_point"]]
    return hashlib.sha256(json.dumps(triple).encode()).hexdigest()


@functools.lru_cache(maxsize=8)
def official_digests(data_dir: Path | None = None) -> frozenset[str]:
    """The problems whose test code may run in llmpsych's process: those of a HumanEval file whose bytes
    match the release pinned in the MAS-Resilience data manifest (digests of the very bytes checked).

    A data folder may be hostile (docs/security.md): a changed test is code nobody reviewed, so it never
    runs outside the sandbox.
    """
    digests: set[str] = set()
    manifest = load_manifest("MAS-Resilience")
    for dataset in ("humaneval", "humaneval50"):
        try:
            path = task_files(dataset, data_dir)[0]
            data = read_bytes(path, "dataset file", MAX_DATA_FILE_BYTES)
        except Exception:  # no such file or folder: nothing is official
            continue
        entry = manifest.file(f"benchmarks/{path.name}")
        if entry is not None and hashlib.sha256(data).hexdigest() == entry.sha256:
            rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
            digests |= {reference_digest(row) for row in rows}
    return frozenset(digests)


async def check_humaneval(
    reference: dict[str, Any],
    completion: str | None,
    sandbox: Sandbox,
    limits: Limits | None = None,
    extraction: str = "paper",
    official: Collection[str] = frozenset(),
) -> SandboxResult:
    """Judge a completion: the program runs in the sandbox, the problem's tests run here.

    Only for a problem in ``official`` (see :func:`official_digests`): any other problem's tests are
    code from an unverified data folder, so they run in a sandbox of their own (:func:`sandboxed_check`;
    ``extra["judge"]`` is ``"sandboxed"``, else ``"trusted"``). Either way the program never sees them.

    The verdict is the trusted check's on the values the program returned (see ``llmpsych.sandbox``).
    Where the two harnesses can differ, the item is also run as OpenAI's harness runs it (tests inside
    the program) and ``extra["reference_passed"]`` records that forgeable verdict, so that both figures
    can be reported: when the check failed because the program returned something other than plain
    builtin values (an object whose ``__eq__`` could lie), and when the code redefines a helper of the
    prompt that the test calls. Otherwise the two agree by construction.
    """
    source = humaneval_source(reference, completion, extraction)
    trusted = reference_digest(reference) in official
    check = humaneval_check(reference) if trusted else sandboxed_check(reference, sandbox, limits)
    program = Program(source, reference["entry_point"], None)
    result = await sandbox.run(program, limits, check)
    reference_passed = result.passed
    if (not result.passed and result.detail.startswith("CodecError")) or _redefines_helper(reference, source):
        plain = Program(humaneval_program(reference, completion, extraction), None, None)
        reference_passed = (await sandbox.run(plain, limits)).passed
    result.extra.update(reference_passed=reference_passed, judge="trusted" if trusted else "sandboxed")
    return result


# -- CIAR -----------------------------------------------------------------------------------------
# ASCII digits only: float() would read "٣" as 3 (docs/security.md section 5).
_NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?(?:\s*/\s*[0-9]+(?:\.[0-9]+)?)?\s*%?|-?\.[0-9]+\s*%?")


_BRACKETS = re.compile(r"\[\s*[\"'](.+?)[\"']\s*\]", re.S)
_CLOSING = re.compile(r"[\"']\s*\]")


def final_answer(text: str) -> str:
    """The final answer of a reply: after the last ``Answer:``, else the last ``["..."]``, else last line."""
    answers: list[str] = re.findall(r"answer\s*[:：]\s*(.+)", text, re.I)
    if answers:
        return answers[-1].strip()
    # Only up to the last closing ``"]``: an opening ``["`` with no closing after it made the lazy
    # match scan to the end for each one (40,000 characters of ``['`` took 17 s, 10 MB days).
    closing = max((m.end() for m in _CLOSING.finditer(text)), default=0)
    brackets: list[str] = _BRACKETS.findall(text, 0, closing)
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
    from sacrebleu.metrics.chrf import CHRF

    return float(CHRF().sentence_score(hypothesis, [reference]).score)


def commonmt_score(reply: str, reference: dict[str, str]) -> dict[str, float]:
    """chrF against the correct reference, and whether it beats chrF against the wrong one."""
    hypothesis = translation_of(reply)
    good = chrf(hypothesis, reference["correct"])
    bad = chrf(hypothesis, reference["wrong"])
    return {"chrf": good, "chrf_wrong": bad, "closer_to_correct": float(good > bad)}

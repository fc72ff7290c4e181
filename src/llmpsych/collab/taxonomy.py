"""The seven categories of injected code errors (thesis Table 7.8) and a rule-based classifier for edits.

The thesis sorts 80 errors injected by AutoInject into code into seven categories and gives their counts
(:data:`PAPER_COUNTS`, 000:3444-3453), but not how it sorted them. :func:`classify` is llmpsych's own
rule set: it compares one edited line before and after the injection, token by token, and applies the
first rule that fits, in the order of :data:`CATEGORIES`. The rules are deterministic and need no model,
so the table can be rebuilt from any stored run; they are a heuristic, and an edit that fits no rule is
``unclassified`` rather than forced into a category.
"""

from __future__ import annotations

import difflib
import re

#: (category, what it covers, in our words), in the order the rules are tried.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("Infinite Loops", "the change can stop a loop from ending (a loop condition or its step)"),
    ("Indexing and Range Errors", "bounds, ranges, slices and indices shifted (off by one)"),
    ("Initialization Errors", "a variable starts from a wrong value"),
    ("Logical Errors", "comparisons and boolean logic inverted or replaced"),
    ("Mathematical Errors", "arithmetic operators or numbers changed"),
    ("Output and Formatting", "what is returned or printed, or how it is formatted, changed"),
    ("Runtime Invocation Issues", "a different function or method called, or called differently"),
)

#: Table 7.8 of the thesis: the counts of its 80 classified errors (000:3444-3453).
PAPER_COUNTS: dict[str, int] = {
    "Logical Errors": 12,
    "Indexing and Range Errors": 23,
    "Mathematical Errors": 20,
    "Output and Formatting": 9,
    "Initialization Errors": 4,
    "Infinite Loops": 6,
    "Runtime Invocation Issues": 6,
}
UNCLASSIFIED = "unclassified"

_TOKEN = re.compile(r"'[^']*'|\"[^\"]*\"|\d+\.?\d*|\w+|\*\*|//|[<>=!]=|[-+*/%]=|\S")
_COMPARE = {"<", ">", "<=", ">=", "==", "!=", "is", "in"}
_LOGIC = {"and", "or", "not", "True", "False", "any", "all"}
_ARITH = {
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "+=",
    "-=",
    "*=",
    "/=",
    "%=",
    "abs",
    "sum",
    "round",
    "max",
    "min",
    "pow",
}
_STEP = re.compile(r"^\s*(\w+)\s*([-+])=\s*(\d+)\s*$")
_INIT = re.compile(
    r"^\s*\w+(\s*,\s*\w+)*\s*=\s*(-?\d+\.?\d*|\[\]|\{\}|\(\)|''|\"\"|None|True|False|"
    r"float\(['\"]-?inf['\"]\)|\w+\[0\])\s*$"
)
_OUTPUT = {"return", "print", "join", "format", "str", "f", "sorted", "reversed", "reverse", "upper", "lower"}


def tokens(line: str) -> list[str]:
    """Python-ish tokens of one line, comments dropped."""
    return _TOKEN.findall(line.split("#", 1)[0])


def changed_tokens(before: str, after: str) -> tuple[list[str], list[str]]:
    """The tokens removed from ``before`` and added in ``after``."""
    a, b = tokens(before), tokens(after)
    removed: list[str] = []
    added: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            removed += a[i1:i2]
            added += b[j1:j2]
    return removed, added


def _in_brackets(line: str, token_set: set[str]) -> bool:
    """Whether a changed token sits inside a subscript ``[...]`` of the line."""
    return any(set(tokens(inner)) & token_set for inner in re.findall(r"\[([^\]]*)\]", line))


def _stalls(before: str, after: str) -> bool:
    """A loop step (``i += 1``) that no longer moves, or now moves the other way."""
    step = _STEP.match(before)
    if not step:
        return False
    new = _STEP.match(after)
    if new is None:
        return after.strip() in ("", "pass") or step.group(1) not in after
    return new.group(1) == step.group(1) and (new.group(3) == "0" or new.group(2) != step.group(2))


def classify(before: str, after: str) -> str:
    """The Table 7.8 category of one injected line edit (``unclassified`` when no rule fits)."""
    removed, added = changed_tokens(before, after)
    changed = set(removed) | set(added)
    if not changed:
        return UNCLASSIFIED
    head_b, head_a = before.strip().split(" ", 1)[0], after.strip().split(" ", 1)[0]
    if (head_a == "while" and "True" in added) or _stalls(before, after):
        return "Infinite Loops"
    if "range(" in before + after or _in_brackets(before, set(removed)) or _in_brackets(after, set(added)):
        return "Indexing and Range Errors"
    if {"<", "<="} <= changed or {">", ">="} <= changed or "len" in changed:
        return "Indexing and Range Errors"
    if _INIT.match(before) and _INIT.match(after):
        return "Initialization Errors"
    if changed & (_COMPARE | _LOGIC):
        return "Logical Errors"
    if changed & _ARITH or any(t[0].isdigit() for t in changed):
        return "Mathematical Errors"
    if head_b in ("return", "print") or changed & _OUTPUT or any(t[0] in "'\"" for t in changed):
        return "Output and Formatting"
    if re.search(r"\w\s*\(", after) and any(t.isidentifier() for t in changed):
        return "Runtime Invocation Issues"
    return UNCLASSIFIED

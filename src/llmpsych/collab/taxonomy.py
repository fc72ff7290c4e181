"""The seven categories of injected code errors (thesis Table 7.8) and a rule-based classifier for edits.

The thesis sorts 80 errors injected by AutoInject into code into seven categories and gives their counts
(:data:`PAPER_COUNTS`, 000:3444-3453), but not how it sorted them. :func:`classify` is llmpsych's own
rule set: it compares one edited line before and after the injection, token by token, and applies the
first rule that fits, in the order of :data:`CATEGORIES`. The rules are deterministic and need no model,
so the table can be rebuilt from any stored run; they are a heuristic, and an edit that fits no rule is
``unclassified`` rather than forced into a category.

Only edits of **code lines** are classified. AutoInject corrupts any non-blank line of a code message, as
the paper's injector does, so it also edits a message's fences, its "Correctness: 1" or "## Review" lines
and its prose; those are not injected code errors and are counted apart (:data:`NOT_CODE`).
:func:`code_lines` decides, from the whole message as its sender wrote it: in a message with fences, the
lines inside them; in one without, every line when the message parses as Python, else each line that
reads as Python on its own (:func:`is_code_line`). The injector records the verdict with each edit;
edits stored before it did are judged by :func:`is_code_line` alone.
"""

from __future__ import annotations

import ast
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
#: The category of an edit of a line that is not code (a fence, a review header, prose): left out.
NOT_CODE = "not code"

_FENCE = re.compile(r"^\s*(```|~~~)")
#: Annotations that make ``name: annotation`` a real declaration rather than a ``Label: value`` line.
_TYPES = {
    "int", "float", "str", "bool", "bytes", "list", "dict", "set", "tuple", "object", "complex",
    "List", "Dict", "Set", "Tuple", "Optional", "Union", "Any", "Callable", "Iterable", "Iterator",
    "Sequence", "Mapping", "None",
}  # fmt: skip

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


def _has_code(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith("#")


def _parses(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _declares(annotation: ast.expr, valued: bool) -> bool:
    """Whether an annotation reads as a type: a known type name (any name when a value is assigned), a
    dotted name, a subscript (``list[int]``), a string, or a union of those."""
    if isinstance(annotation, ast.Name):
        return valued or annotation.id in _TYPES
    if isinstance(annotation, ast.Attribute | ast.Subscript):
        return True
    if isinstance(annotation, ast.Constant):
        return annotation.value is None or isinstance(annotation.value, str)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _declares(annotation.left, valued) and _declares(annotation.right, valued)
    return False


def is_code_line(line: str) -> bool:
    """Whether one line, on its own, reads as Python: not blank, a comment, a fence or a ``Label: value``
    line (``Correctness: 1``, ``Decision: final``: an annotation that is no type), and it parses, a block
    header (``else:``, ``for x in xs:``) with a body added. A continuation of a longer statement does
    not parse alone and is not counted."""
    if not _has_code(line) or _FENCE.match(line):
        return False
    text = line.strip()
    if text.endswith(":"):
        text += " pass"
    head = text.split(None, 1)[0].rstrip(":")
    opener = {"elif": "if 1: pass\n", "else": "if 1: pass\n", "except": "try: pass\n"}
    tree = _parses(opener.get(head, "try: pass\n" if head == "finally" else "") + text)
    if tree is None:
        return False
    return not any(
        isinstance(node, ast.AnnAssign) and not _declares(node.annotation, node.value is not None)
        for node in ast.walk(tree)
    )


def code_lines(text: str) -> list[bool]:
    """Per line of a message (split on ``\\n``), whether it is code (see the module docstring)."""
    lines = text.split("\n")
    fences = [bool(_FENCE.match(line)) for line in lines]
    if any(fences):
        out: list[bool] = []
        inside = False
        for line, fence in zip(lines, fences, strict=True):
            if fence:
                inside = not inside
            out.append(inside and not fence and _has_code(line))
        return out
    if _parses(text) is not None:
        return [_has_code(line) for line in lines]
    return [is_code_line(line) for line in lines]


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

"""Strict parsing of model answers to a scale: ``index: score`` lines, and single Likert numbers.

The parser accepts one answer per line in the form ``index: score`` and the usual variants
(``index. score``, ``index - score``, ``index) score``, ``(index) score``, ``index = score``, markdown
bullets, bold or italic markers, a ``Statement``/``Item``/``Question`` label, a trailing comment such as
``(agree)`` or ``/5``, markdown table rows ``| index | score |``, and several ``index: score`` pairs on
one line separated by commas or semicolons). It never guesses: a line whose score is ambiguous (``3-4``,
``3 or 4``, ``4.5``) is left unparsed, conflicting repeats of an index are reported instead of
resolved, and answers outside the response range are reported instead of clipped.

A score is a whole number written with ASCII digits (:mod:`llmpsych.instruments.numbers`): ``2e5``,
``5%``, ``3.0``, ``1/2`` (a denominator other than the scale's maximum), ``0x10``, ``+3``, ``1,000``,
``3rd``, ``inf`` and digits of other scripts (``٣``) make the item ambiguous, never a number. Full-width
digits (``３``) are the same characters as ASCII digits after NFKC and are read.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..errors import LlmpsychError

# Our own phrasings of the usual ways a chat model declines to rate itself.
REFUSAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\bas an? (?:ai|artificial intelligence)\b",
        r"\bas an? (?:large )?language model\b",
        r"\bi(?:'m| am) (?:just |only )?an? (?:ai|language model|assistant|chatbot|computer program)\b",
        r"\bi (?:do not|don't|did not|didn't) (?:have|possess) (?:any )?(?:personal |subjective |real )?"
        r"(?:feelings|emotions|opinions|preferences|experiences|beliefs|personality|a personality|a body)\b",
        r"\bi (?:cannot|can't|can not|am unable to|am not able to|won't|will not|must decline to) "
        r"(?:provide|give|answer|rate|score|respond|share|express|complete|fill|participate|evaluate|"
        r"assess|self-assess|take part|comply)\b",
        r"\bi(?:'m| am) (?:sorry|afraid),? (?:but )?i (?:cannot|can't|can not|am unable|won't|will not)\b",
        r"\bnot (?:capable|able) of (?:having|experiencing|feeling|holding)\b",
    )
)

# All of them in one pass (one search instead of one per pattern).
_ANY_REFUSAL = re.compile("|".join(f"(?:{p.pattern})" for p in REFUSAL_PATTERNS), re.IGNORECASE)

#: Refusal language is looked for in the first and in the last this many characters of a reply (a reply of
#: up to twice as many is searched whole): a model declines at the start of its reply or adds it at the
#: end. Searched whole, a 10 MB reply cost 0.9 s CPU (4 ms bounded); a phrase that lies wholly in the
#: middle of a longer reply is not seen (docs/scales.md).
REFUSAL_SCAN_CHARS = 20_000

DEFAULT_REASK_WORDING = (
    "These statements still need a valid score: {indices}. Reply with one line per statement in the "
    'form "index: score", using a whole number from {min} to {max}, and nothing else.'
)

# Our wording of the one re-ask after a positional reply (:func:`positional_reply`): the numbers as shown.
POSITIONAL_REASK_WORDING = (
    "Your reply numbered the statements 1, 2, 3, ... by their position, but each statement has its own "
    "number. Answer each statement with its number as shown: {indices}. Reply with one line per "
    'statement in the form "number: score", using a whole number from {min} to {max}, and nothing '
    "else.\n\n{items}"
)

_DASHES = "\u2212\u2010\u2011\u2012\u2013\u2014"
_BULLET = re.compile(r"^\s*[-*+•·]\s+")
_LABEL = r"(?:(?:statement|item|question|q|no\.?|number)\s*#?\s*)?"
_INDEX_PART = (
    rf"^{_LABEL}(?:\((?P<pindex>[0-9]{{1,4}})\)\s*[:.)=\->]?|(?P<index>[0-9]{{1,4}})\s*(?:[:.)=>]|->|-))\s*"
)
_SINGLE = re.compile(_INDEX_PART + r"(?P<value>-?[0-9]{1,4})(?P<rest>.*)$", re.IGNORECASE)
# "index: <a token holding a digit of any script>" that _SINGLE could not read ("+3", "٣"): ambiguous.
_NUMBERISH = re.compile(_INDEX_PART + r"[+\-]?(?:[^\W_]*\d|(?:inf(?:inity)?|nan)\b)", re.IGNORECASE)
_PAIR = re.compile(r"(?P<index>[0-9]{1,4})\s*[:=]\s*(?P<value>-?[0-9]{1,4})(?![0-9.]*\d)")
_PAIR_GAP = re.compile(r"^[\s,;|]*(?:and\s*)?$", re.IGNORECASE)
_ECHOED = re.compile(
    rf"^{_LABEL}(?P<index>[0-9]{{1,4}})\s*[:.)]\s+\D.*?[:=\-]\s*(?P<value>-?[0-9]{{1,4}})\s*(?:\([^()]*\))?\s*\.?$",
    re.IGNORECASE,
)
# After "index: score", another number (a range "3-4", "3 or 4", "4.5", or "1-3: 4", items 1 to 3).
_AMBIGUOUS_REST = re.compile(r"^\s*(?:[.,/\-:=]|or\b|to\b|and\b)?\s*\d", re.IGNORECASE)
# A character glued to the score that makes it another number: "2e5", "5%", "0x10", "3rd", "3٣", "3-".
_GLUED_REST = re.compile(r"^[^\s.,;:!?()\[\]/|*\"']")
_DENOMINATOR = re.compile(r"^\s*/\s*(?P<denominator>[0-9]+)")
_PLAIN = re.compile(r"[ \t]*([0-9]{1,4})[ \t]*:[ \t]*(-?[0-9]{1,4})[ \t]*\.?[ \t]*$")
# The same form on every line of a reply, read with one findall (see _read_plain_reply).
_PLAIN_LINES = re.compile("^" + _PLAIN.pattern, re.MULTILINE)


# Every whitespace-separated token holding a digit of any script (or spelling inf / nan), and the
# punctuation around a number.
_NUMBER_TOKEN = re.compile(r"\S*\d\S*|(?<!\S)[+\-]?(?:inf(?:inity)?|nan)(?![^\s.,;:!?)])", re.IGNORECASE)
_TOKEN_PUNCTUATION = "([{\"'.,;:!?)]}"

_TO_ASCII = {ord(c): "-" for c in _DASHES} | {0x2019: "'"}
_EMPHASIS = re.compile(r"\*\*|__|`")


class ParseError(LlmpsychError, ValueError):
    """A parser was called with arguments that cannot work (e.g. an empty response range)."""


@dataclass(frozen=True)
class ParsedAnswers:
    """What a model's reply says about each expected item.

    ``answers`` holds only valid answers (in range, not contradicted). ``missing`` lists expected items
    the reply never mentions; ``ambiguous`` items whose score could not be read (``3-4``, ``4.5``);
    ``duplicates`` items answered more than once with different values; ``out_of_range`` items whose
    single answer lies outside the range; ``unexpected`` answers to items that were not asked.
    ``unanswered`` is every expected item without a valid answer (the items to re-ask).
    """

    expected: tuple[int, ...]
    answers: dict[int, int]
    missing: tuple[int, ...]
    ambiguous: tuple[int, ...]
    duplicates: dict[int, tuple[int, ...]]
    out_of_range: dict[int, int]
    unexpected: dict[int, int]
    refusal_language: bool
    unparsed_lines: tuple[str, ...] = field(default=(), repr=False)
    written: tuple[int, ...] = field(default=(), repr=False)
    """Every item number the reply names, in the order it first names them (asked or not)."""

    @property
    def unanswered(self) -> tuple[int, ...]:
        """Expected items without a valid answer, in the order they were expected."""
        return tuple(i for i in self.expected if i not in self.answers)

    @property
    def complete(self) -> bool:
        """True when every expected item has a valid answer."""
        return not self.unanswered

    @property
    def refused(self) -> bool:
        """True when the reply declines (refusal language) and contains no valid answer at all."""
        return self.refusal_language and not self.answers

    @property
    def n_valid(self) -> int:
        """Number of expected items with a valid answer."""
        return len(self.answers)

    @property
    def valid_rate(self) -> float:
        """Share of expected items with a valid answer (1.0 when nothing was expected)."""
        return len(self.answers) / len(self.expected) if self.expected else 1.0


def detect_refusal(text: str, extra_patterns: Iterable[str | re.Pattern[str]] = ()) -> bool:
    """True when ``text`` contains typical refusal language (our own patterns plus ``extra_patterns``)
    in its first or its last :data:`REFUSAL_SCAN_CHARS` characters (all of it when it is at most twice
    as long); a phrase must lie wholly inside one of the two."""
    if len(text) > 2 * REFUSAL_SCAN_CHARS:
        parts = [text[:REFUSAL_SCAN_CHARS], text[-REFUSAL_SCAN_CHARS:]]
    else:
        parts = [text]
    normalised = [_normalise(part) for part in parts]
    if any(_ANY_REFUSAL.search(part) for part in normalised):
        return True
    patterns = [p if isinstance(p, re.Pattern) else re.compile(p, re.IGNORECASE) for p in extra_patterns]
    return any(p.search(part) for p in patterns for part in normalised)


def parse_item_answers(
    text: str,
    expected: Sequence[int],
    response_min: int,
    response_max: int,
    *,
    allow_echoed_text: bool = False,
) -> ParsedAnswers:
    """Parse ``index: score`` answers for the ``expected`` item numbers.

    ``allow_echoed_text=True`` also accepts lines that repeat the statement between the index and a
    final score (``3. I like parties: 4``); it is off by default because such lines are easier to
    misread.
    """
    if response_min >= response_max:
        raise ParseError(f"response range {response_min}-{response_max} is empty")
    expected_order = tuple(dict.fromkeys(int(i) for i in expected))
    wanted = set(expected_order)
    seen: dict[int, list[int | None]] = {}
    unparsed: list[str] = []
    normalised = _normalise(text or "")
    plain_reply = _read_plain_reply(normalised)
    if plain_reply is not None:  # the requested form throughout: the same reading, 4x faster
        seen.update(plain_reply)
        lines: list[str] = []
        refusal = False  # digits and colons only: no refusal wording
    else:
        lines = normalised.splitlines()
        refusal = detect_refusal(text or "")
    for line in lines:
        plain = _PLAIN.match(line)  # the requested form; same reading as _parse_line, faster
        if plain:
            seen.setdefault(int(plain[1]), []).append(int(plain[2]))
            continue
        if not line.strip():
            continue
        pairs = _parse_line(line, allow_echoed_text, response_max)
        if pairs is None:
            unparsed.append(line.strip())
            continue
        for index, value in pairs:
            seen.setdefault(index, []).append(value)

    answers: dict[int, int] = {}
    ambiguous: list[int] = []
    duplicates: dict[int, tuple[int, ...]] = {}
    out_of_range: dict[int, int] = {}
    unexpected: dict[int, int] = {}
    for index, values in seen.items():
        if len(values) == 1 and index in wanted:  # the usual case, decided without building sets
            value = values[0]
            if value is None:
                ambiguous.append(index)
            elif response_min <= value <= response_max:
                answers[index] = value
            else:
                out_of_range[index] = value
            continue
        readable = tuple(dict.fromkeys(v for v in values if v is not None))
        if index not in wanted:
            if readable:
                unexpected[index] = readable[0]
        elif len(readable) < len(set(values)):
            ambiguous.append(index)
        elif len(readable) > 1:
            duplicates[index] = readable
        elif not response_min <= readable[0] <= response_max:
            out_of_range[index] = readable[0]
        else:
            answers[index] = readable[0]
    ambiguous_set = set(ambiguous)
    return ParsedAnswers(
        expected=expected_order,
        answers=answers,
        missing=tuple(i for i in expected_order if i not in seen),
        ambiguous=tuple(i for i in expected_order if i in ambiguous_set),
        duplicates=duplicates,
        out_of_range=out_of_range,
        unexpected=unexpected,
        refusal_language=refusal,
        unparsed_lines=tuple(unparsed),
        written=tuple(seen),
    )


def positional_reply(written: Sequence[int], shown: Sequence[int]) -> bool:
    """True when a reply numbers its answers by position (1, 2, 3, ...) instead of by the numbers shown.

    ``written`` is the item numbers the reply names, in the order it names them
    (:attr:`ParsedAnswers.written`); ``shown`` the statements' numbers in the order the prompt showed
    them. The reply is positional when it names exactly 1, 2, ..., m in that sequence (m >= 2) while the
    first m shown numbers are not 1, 2, ..., m: the reply follows the positions, not the numbers it was
    given. Reading ``3: 4`` as item 3 would then score the third statement's answer as item 3's (measured:
    the default model answered ``1: 4 / 2: 5 / ...`` to 3 of 5 shuffled quickstart orders).

    A model that answers every shown number but lists them sorted (1, 2, 3, ...) looks the same and is
    flagged too: the re-ask (:data:`POSITIONAL_REASK_WORDING`) asks for the numbers as shown, which such a
    model then gives. When the shown order is 1..m itself, position and number agree and nothing is flagged.
    """
    m = len(written)
    if m < 2 or tuple(written) != tuple(range(1, m + 1)):
        return False
    n = min(m, len(shown))
    return tuple(shown[:n]) != tuple(range(1, n + 1))


_POSITION_SCORE = re.compile(r"(?<![0-9])([0-9]{1,4})\"?\s*[:=.)]\s*\"?(-?[0-9]{1,4})(?![0-9])")


def order_independent_replies(replies: Sequence[tuple[Sequence[int], str]]) -> list[int]:
    """Positions of the replies identical to a reply given to a different shown order, when reading them
    by position gives at least half of the statements two different scores.

    ``replies`` holds ``(shown order, reply text)`` pairs, the statements numbered by position (the
    reliability grids: ``1.`` is always the first statement shown, so ``p: score`` answers ``order[p-1]``).
    The same reply to two orders gives each position the same score whichever statement stands there:
    if that makes a statement's score differ between the two runs, the reply followed the positions,
    not the statements (measured: the default model gave one reply to two orders), and scoring it as
    items assigns its numbers at random. Texts are compared with whitespace collapsed. An identical reply
    that gives every statement the same score in both runs (every score equal, or the differing
    statements at the same positions) agrees with itself item by item and is not flagged; nor is one
    that moves fewer than half of the statements: near-constant replies coincide by chance (measured: a
    noisy scripted respondent on a 6-item scale gave 6 of 32 units a coincident reply moving 2 of 6
    statements), while a reply that ignores the statements moves most of them.
    """
    by_text: dict[str, list[int]] = {}
    for position, (_, text) in enumerate(replies):
        by_text.setdefault(" ".join((text or "").split()), []).append(position)
    flagged: list[int] = []
    for text, positions in by_text.items():
        if len({tuple(replies[p][0]) for p in positions}) < 2:
            continue
        scores = [(int(p), int(v)) for p, v in _POSITION_SCORE.findall(text)]
        implied: dict[int, set[int]] = {}
        for member in positions:
            order = replies[member][0]
            for p, value in scores:
                if 1 <= p <= len(order):
                    implied.setdefault(int(order[p - 1]), set()).add(value)
        if implied and sum(len(values) > 1 for values in implied.values()) * 2 >= len(implied):
            flagged.extend(positions)
    return sorted(flagged)


def positional_note(replies: int, items_invalid: int, items_total: int) -> str:
    """The report's sentence on positional replies: how many, and how many items they left invalid.

    ``replies`` counts every reply judged positional (re-asked or not), ``items_invalid`` the items still
    without an answer because the re-ask was positional too, of ``items_total`` items asked.
    """
    rule = "rule: docs/scales.md, 'Positional replies'"
    if not replies:
        return f"No reply numbered its answers by position instead of by the statements' numbers ({rule})."
    share = f" ({items_invalid / items_total:.1%})" if items_total else ""
    return (
        f"{replies} {'reply' if replies == 1 else 'replies'} numbered the answers by position (1, 2, 3, ...) "
        "instead of by the statements' numbers and were not scored as the items they named (the first "
        "in a chunk is re-asked once with the numbers as shown, while a re-ask is left); "
        f"{items_invalid} of {items_total} items{share} stayed positional and are counted invalid ({rule})."
    )


def _read_plain_reply(text: str) -> dict[int, list[int | None]] | None:
    """Every ``index: score`` of a reply whose every line has that plain form; None for any other reply.

    Replies with blank lines between answers, CRLF or other line separators take the general path.
    """
    body = text.strip("\n")
    pairs = _PLAIN_LINES.findall(body)
    if len(pairs) != body.count("\n") + 1:
        return None
    seen: dict[int, list[int | None]] = {}
    for index, value in pairs:
        seen.setdefault(int(index), []).append(int(value))
    return seen


def build_reask_prompt(
    indices: Iterable[int],
    wording: str = DEFAULT_REASK_WORDING,
    *,
    response_min: int | None = None,
    response_max: int | None = None,
    items: Mapping[int, str] | None = None,
    item_format: str = "{index}. {text}",
) -> str:
    """Fill ``wording`` to ask again for ``indices``.

    Placeholders: ``{indices}`` (comma-separated numbers), ``{count}``, ``{min}``, ``{max}`` and
    ``{items}`` (one ``item_format`` line per item, needs ``items``).
    """
    numbers = list(dict.fromkeys(int(i) for i in indices))
    if not numbers:
        raise ParseError("nothing to re-ask: no item indices given")
    values: dict[str, object] = {
        "indices": ", ".join(map(str, numbers)),
        "count": len(numbers),
        "min": response_min,
        "max": response_max,
    }
    if items is not None:
        absent = [i for i in numbers if i not in items]
        if absent:
            raise ParseError(f"no text for item {absent[0]} to re-ask")
        values["items"] = "\n".join(item_format.format(index=i, text=items[i]) for i in numbers)
    for _, name, _, _ in string.Formatter().parse(wording):
        if name is None:
            continue
        if name not in values:
            raise ParseError(f"re-ask wording uses unknown placeholder {{{name}}}")
        if values[name] is None:
            raise ParseError(f"re-ask wording uses {{{name}}} but no value for it was given")
    return wording.format(**values)


LikertStatus = Literal["ok", "missing", "ambiguous", "out_of_range", "refusal"]


@dataclass(frozen=True)
class LikertAnswer:
    """A one-item reply: ``value`` is set only when ``status == "ok"``."""

    value: int | None
    status: LikertStatus
    candidates: tuple[float, ...] = ()


def parse_likert_number(text: str, response_min: int, response_max: int) -> LikertAnswer:
    """Read a single Likert answer (``"4"``, ``"I'd say 4."``, ``"**4** (agree)"``, ``"4/5"``).

    Echoes of the range ("from 1 to 5", "out of 5") are ignored; two different numbers are ambiguous.
    """
    if response_min >= response_max:
        raise ParseError(f"response range {response_min}-{response_max} is empty")
    cleaned = _normalise(text or "")
    for echo in (
        rf"(?:from\s+|scale\s+of\s+|between\s+)?(?<!\d){response_min}\s*(?:to|-|and)\s*{response_max}(?!\d)",
        rf"\bout\s+of\s+{response_max}(?!\d)",
        rf"/\s*{response_max}(?!\d)",
    ):
        cleaned = re.sub(echo, " ", cleaned, flags=re.IGNORECASE)
    numbers: list[float] = []
    unreadable = False
    for token in _NUMBER_TOKEN.findall(cleaned):
        token = token.strip(_TOKEN_PUNCTUATION)
        if re.fullmatch(r"-?[0-9]+(?:\.[0-9]+)?", token):
            numbers.append(float(token))
            unreadable |= "." in token  # "3.5" and "3.0" alike: not a whole-number answer
        else:  # "2e5", "5%", "4/7", "+3", "3rd", "٣": a number in a form we do not read
            unreadable = True
    distinct = tuple(dict.fromkeys(numbers))
    if not distinct and not unreadable:
        status: LikertStatus = "refusal" if detect_refusal(text or "") else "missing"
        return LikertAnswer(None, status)
    if unreadable or len(distinct) > 1:
        return LikertAnswer(None, "ambiguous", distinct)
    value = int(distinct[0])
    if not response_min <= value <= response_max:
        return LikertAnswer(None, "out_of_range", distinct)
    return LikertAnswer(value, "ok", distinct)


# -- internals ----------------------------------------------------------------------------------
def _normalise(text: str) -> str:
    """NFKC (full-width digits and colons), plain hyphens, no markdown emphasis or code marks."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        text = text.translate(_TO_ASCII).replace("→", "->")
    return _EMPHASIS.sub("", text) if ("*" in text or "_" in text or "`" in text) else text


def _parse_line(line: str, allow_echoed_text: bool, response_max: int) -> list[tuple[int, int | None]] | None:
    """The ``(index, score)`` pairs on one line; score ``None`` when it cannot be read unambiguously."""
    stripped = line.strip()
    if stripped.startswith("|"):
        return _parse_table_row(stripped)
    stripped = _BULLET.sub("", stripped, count=1).replace("*", "").strip()
    pairs = list(_PAIR.finditer(stripped))
    if len(pairs) > 1 and _only_separators(stripped, pairs):
        return [(int(m["index"]), int(m["value"])) for m in pairs]
    match = _SINGLE.match(stripped)
    if match:
        rest = match["rest"]
        denominator = _DENOMINATOR.match(rest)
        if denominator and int(denominator["denominator"]) == response_max:  # "4/5": out of 5
            rest = rest[denominator.end() :]
        index = int(match["pindex"] or match["index"])
        unreadable = bool(_AMBIGUOUS_REST.match(rest) or _GLUED_REST.match(rest) or _DENOMINATOR.match(rest))
        return [(index, None if unreadable else int(match["value"]))]
    if allow_echoed_text:
        echoed = _ECHOED.match(stripped)
        if echoed:
            return [(int(echoed["index"]), int(echoed["value"]))]
    numberish = _NUMBERISH.match(stripped)
    if numberish:
        return [(int(numberish["pindex"] or numberish["index"]), None)]
    return None


def _only_separators(line: str, pairs: list[re.Match[str]]) -> bool:
    gaps = [line[: pairs[0].start()], line[pairs[-1].end() :]]
    gaps += [line[a.end() : b.start()] for a, b in zip(pairs, pairs[1:], strict=False)]
    return all(_PAIR_GAP.match(gap) or gap.strip() in {".", ""} for gap in gaps)


def _parse_table_row(row: str) -> list[tuple[int, int | None]] | None:
    cells = [c.strip().replace("*", "") for c in row.strip("|").split("|")]
    if len(cells) < 2 or not re.fullmatch(r"[0-9]{1,4}", cells[0]):
        return None
    if re.fullmatch(r"-?[0-9]{1,4}", cells[-1]):
        return [(int(cells[0]), int(cells[-1]))]
    if re.fullmatch(r"[+\-]?[^\W_]*\d\S*", cells[-1]):  # "2e5", "٣", "+3", "5%": a score, unreadable
        return [(int(cells[0]), None)]
    return None

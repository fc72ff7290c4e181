"""How far typing reaches into a package: string-key reads and positional ``Decision(...)`` calls.

``python benchmarks/string_keys.py [src/llmpsych/games] [--list]`` walks every ``.py`` file under the
folder and counts, with :mod:`ast` (so comments, docstrings and strings never count):

- **string-key reads**: a subscript read with a string literal (``record["round"]``, not an assignment
  target) and a ``.get("...")`` call with a string literal first argument: a dict read where a typed model
  would give an attribute;
- **record field reads**: those of them whose key is a field of a stored game record (a round field of
  one of the eight games, ``rounds``, or a field of a per-player answer record): the reads a typed
  ``Round`` replaces;
- **positional Decision calls**: every ``Decision(...)`` call that passes any argument by position.

Issue 29 measured 91 string-key reads in ``games/`` before the round records were typed. ``--list``
prints each hit as ``file:line``.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path


def _string(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _key(node: ast.AST) -> str | None:
    """The string key of a subscript read (``x["key"]``) or ``.get("key", ...)`` call, else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _string(node.slice):
        return str(node.slice.value)  # type: ignore[attr-defined]
    is_get = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
    if is_get and node.args and _string(node.args[0]):  # type: ignore[attr-defined]
        return str(node.args[0].value)  # type: ignore[attr-defined]
    return None


def string_key_reads(tree: ast.AST, keys: frozenset[str] | None = None) -> Iterator[ast.AST]:
    """Each ``x["key"]`` read and ``x.get("key", ...)`` call in ``tree`` (with ``keys``: of those keys)."""
    for node in ast.walk(tree):
        key = _key(node)
        if key is not None and (keys is None or key in keys):
            yield node


def positional_decisions(tree: ast.AST) -> Iterator[ast.Call]:
    """Each ``Decision(...)`` call given an argument by position."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name == "Decision":
                yield node


#: The fields of the stored game records: a game result's ``rounds``, every round field of the eight games,
#: and the fields of a per-player answer record (as stored, and as ``decisions.csv`` rows repeat them).
RECORD_KEYS = frozenset(
    {
        "rounds", "round", "decisions", "player", "seat", "action", "asks", "how", "response_s", "refused",
        "fallback", "errors", "choices", "mean", "target", "winning", "winners", "go", "go_ratio", "good",
        "utility", "bids", "total", "within", "received", "contributions", "pot", "share", "gain",
        "tokens_after", "dishes", "costly", "cheap", "valuations", "winner", "tied", "winning_bid", "price",
        "shooter", "shot", "hit", "eliminated", "survivors_before", "strongest_other", "survivors",
        "proposer", "proposal", "plan", "votes", "accepted_count", "pirates", "accepted",
    }
)  # fmt: skip


def count(folder: Path) -> dict[str, list[str]]:
    """Every string-key read, those of a stored game record's fields, and every positional ``Decision``
    call, each hit as ``file:line``."""
    hits: dict[str, list[str]] = {
        "string_key_reads": [],
        "record_field_reads": [],
        "positional_decisions": [],
    }
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found = {
            "string_key_reads": string_key_reads(tree),
            "record_field_reads": string_key_reads(tree, RECORD_KEYS),
            "positional_decisions": positional_decisions(tree),
        }
        for key, nodes in found.items():
            hits[key] += [f"{path}:{getattr(n, 'lineno', 0)}" for n in nodes]
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="src/llmpsych/games")
    parser.add_argument("--list", action="store_true", help="print every hit")
    args = parser.parse_args()
    hits = count(Path(args.folder))
    for key, found in hits.items():
        print(f"{key}: {len(found)}")
        if args.list:
            print("\n".join(f"  {h}" for h in found))


if __name__ == "__main__":
    main()

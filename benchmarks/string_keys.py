"""How far typing reaches into a package: string-key reads and positional ``Decision(...)`` calls.

``python benchmarks/string_keys.py [src/llmpsych/games] [--list]`` walks every ``.py`` file under the
folder and counts, with :mod:`ast` (so comments, docstrings and strings never count):

- **string-key reads**: a subscript read with a string literal (``record["round"]``, not an assignment
  target) and a ``.get("...")`` call with a string literal first argument: a dict read where a typed model
  would give an attribute;
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


def string_key_reads(tree: ast.AST) -> Iterator[ast.AST]:
    """Each ``x["key"]`` read and ``x.get("key", ...)`` call in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _string(node.slice) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and _string(node.args[0])
        ):
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


def count(folder: Path) -> dict[str, list[str]]:
    """``{"string_key_reads": [...], "positional_decisions": [...]}``, each hit as ``file:line``."""
    hits: dict[str, list[str]] = {"string_key_reads": [], "positional_decisions": []}
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for key, finder in (
            ("string_key_reads", string_key_reads),
            ("positional_decisions", positional_decisions),
        ):
            hits[key] += [f"{path}:{getattr(n, 'lineno', 0)}" for n in finder(tree)]
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

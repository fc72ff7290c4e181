"""How many options the five research CLIs still declare by hand: ``typer.Option(`` per file.

    python benchmarks/cli_hand_options.py            # the working tree
    python benchmarks/cli_hand_options.py 29db4e4    # a commit

Issue 29 counted 197 in these five files; a run command generated from its task's ``Options`` declares
none for the task's options (``clikit.task_command``), so this number falls as commands are converted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("psychobench/cli.py", "reliability/cli.py", "emotion/cli.py", "games/cli.py", "collab/cli.py")


def text(path: str, rev: str | None, root: Path = ROOT) -> str:
    if rev is None:
        return (root / path).read_text(encoding="utf-8")
    shown = subprocess.run(["git", "-C", str(root), "show", f"{rev}:{path}"], capture_output=True, text=True)
    return shown.stdout


def counts(root: Path = ROOT, rev: str | None = None) -> dict[str, int]:
    """``typer.Option(`` per research CLI file of the tree at ``root`` (or of its commit ``rev``)."""
    return {
        f"src/llmpsych/{name}": len(re.findall(r"typer\.Option\(", text(f"src/llmpsych/{name}", rev, root)))
        for name in FILES
    }


def main() -> None:
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    total = 0
    for name, count in counts(rev=rev).items():
        total += count
        print(f"{count:4d}  {name}")
    print(f"{total:4d}  total ({rev or 'working tree'})")


if __name__ == "__main__":
    main()

"""Run by ``test_user_files_bounded.py`` in a child process: every command that reads a file a user hands
it, each given a sparse file far larger than its kind's cap, in one process; prints each command's exit code
and error, and the process's peak resident memory, as JSON.

Usage: ``python tests/bounded_reads_child.py FOLDER SIZE DATA_DIR`` (FOLDER is written into)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.errors import LlmpsychError

MODEL = ["-m", "openai-compatible/none", "--base-url", "http://127.0.0.1:9/v1", "--no-progress"]

SCALE = """name: TINY
response: {min: 1, max: 5}
scoring: AVG
items:
  - {index: 1, text: I like tea.}
  - {index: 2, text: I like rain.}
subscales:
  - {name: Tea, items: [1, 2]}
"""


def entry_points(big: dict[str, str], ok: str, out: str, data: str) -> dict[str, list[str]]:
    """Each command and flag that reads a user's file, given the big file of its suffix."""
    return {
        "scales validate": ["scales", "validate", big[".yaml"]],
        "scales translate": ["scales", "translate", big[".yaml"], "--to", "de", *MODEL, "--out", out],
        "--scale-file": ["psychobench", "run", *MODEL, "--scale-file", big[".yaml"], "--out", out],
        "import-answers": ["psychobench", "import-answers", big[".csv"], "--scale-file", ok, "--out", out],
        "import-answers jsonl": [
            "psychobench",
            "import-answers",
            big[".jsonl"],
            "--scale-file",
            ok,
            "--out",
            out,
        ],
        "run --config": ["run", big[".yaml"]],
        "--task-config": ["psychobench", "run", *MODEL, "--task-config", big[".yaml"], "--out", out],
        "--cabin-groupings": ["psychobench", "run", *MODEL, "--cabin-groupings", big[".yaml"], "--out", out],
        "reliability grid --grid": [
            "reliability",
            "grid",
            *MODEL,
            "--scale-file",
            ok,
            "--grid",
            big[".yaml"],
        ],
        "emotionbench --situations": [
            "emotionbench",
            "run",
            *MODEL,
            "--situations-file",
            big[".json"],
            "--data-dir",
            data,
            "--out",
            out,
        ],
        "emotionbench translate": [
            "emotionbench",
            "translate",
            big[".json"],
            "--to",
            "de",
            *MODEL,
            "--out",
            out,
        ],
        "template set": ["gamabench", "run", *MODEL, "-O", f"template_set={big['.json']}", "--out", out],
        "reliability rescore": ["reliability", "rescore", big[".json"]],
        "gamabench rescore": ["gamabench", "rescore", big[".json"]],
        "emotionbench rescore": [
            "emotionbench",
            "rescore",
            big[".csv"],
            "--scale",
            "PANAS",
            "--data-dir",
            data,
        ],
    }


def main() -> None:
    folder, size, data = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    big = {}
    for suffix in (".yaml", ".json", ".csv", ".jsonl"):
        path = folder / f"guessing_game_v1{suffix}"  # named as a released GAMA-Bench log
        with path.open("wb") as handle:
            handle.truncate(size)  # sparse: costs no disk
        big[suffix] = str(path)
    ok = folder / "ok.yaml"
    ok.write_text(SCALE, encoding="utf-8")
    cli._mount_subcommands()
    results = {}
    for name, args in entry_points(big, str(ok), str(folder / "out"), data).items():
        started = time.perf_counter()
        result = CliRunner().invoke(cli.app, args)
        error = result.exception
        results[name] = {
            "exit_code": result.exit_code,
            "user_error": isinstance(error, LlmpsychError),  # what `llmpsych` prints as one line
            "message": getattr(error, "message", repr(error)),
            "s": round(time.perf_counter() - started, 2),
        }
    # VmHWM: this process image's own peak. Not getrusage's ru_maxrss, which keeps the peak of the image
    # before exec, i.e. of the forking parent: under a pytest holding 4 GB it read 4.6 GB here.
    status = Path("/proc/self/status").read_text(encoding="ascii")
    peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) * 1024
    print(json.dumps({"results": results, "peak_bytes": peak, "pid": os.getpid()}))


if __name__ == "__main__":
    main()

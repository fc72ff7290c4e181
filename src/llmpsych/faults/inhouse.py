"""llmpsych's own six MAS-Resilience systems as a study's system: ``--system "python -m
llmpsych.faults.inhouse --system camel"``.

It reads one task row on standard input (a HumanEval row, or any row whose ``task_id``/``id`` names an
item of ``--dataset``), runs that item as ``llmpsych mas run`` runs it (the ``mas`` task, no fault, no
defence: the endpoint in front of it applies the plan) with its model at ``OPENAI_BASE_URL`` (key
``OPENAI_API_KEY``, model name ``OPENAI_MODEL``, default ``scripted``), in a scratch run folder, and prints
the system's final result. The study then scores that result with its scorer (``humaneval`` judges it as
``mas run`` does), so a clean plan gives, item by item, the scores of ``mas run`` on the same seed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from ..errors import LlmpsychError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmpsych.faults.inhouse", description=__doc__)
    parser.add_argument(
        "--system", default="camel", help="metagpt, selfcollab, camel, spp, mad or agentverse"
    )
    parser.add_argument("--dataset", default="humaneval50", help="the mas task's dataset")
    parser.add_argument("--seed", type=int, default=0, help="the run seed (mas run's default: 0)")
    parser.add_argument("--data-dir", default=None, help="the data folder (default: LLMPSYCH_DATA_DIR)")
    parser.add_argument("--max-tokens", type=int, default=None, help="maximum tokens per answer")
    args = parser.parse_args(argv)
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        print("error: OPENAI_BASE_URL is not set (the study sets it to its endpoint)", file=sys.stderr)
        return 2
    try:
        row = json.loads(sys.stdin.readline(1 << 24))
        item_id = row.get("task_id", row.get("id"))
    except (ValueError, AttributeError):
        item_id = None
    if not isinstance(item_id, str | int) or isinstance(item_id, bool):
        print("error: standard input holds no task row with a task_id or id", file=sys.stderr)
        return 2
    from ..runs import parse_run_config, read_run, start_run

    os.environ["LLMPSYCH_API_KEY"] = os.environ.get("OPENAI_API_KEY", "")  # the endpoint's token
    options: dict[str, object] = {"system": args.system, "dataset": args.dataset, "item_ids": [str(item_id)]}
    if args.max_tokens:
        options["max_tokens"] = args.max_tokens
    config = {
        "task": "mas",
        "model": "openai-compatible/" + os.environ.get("OPENAI_MODEL", "scripted"),
        "base_url": base_url,
        "seed": args.seed,
        "cache": False,
        "options": options,
    }
    if args.data_dir:
        config["data_dir"] = args.data_dir
    try:
        with tempfile.TemporaryDirectory(prefix="llmpsych-inhouse-") as scratch:
            outcome = start_run(parse_run_config(config), Path(scratch) / "run", False)
            units = read_run(outcome.run_dir).units
            if not units or units[0].result is None:
                print(f"error: item {item_id} was not run ({outcome.summary})", file=sys.stderr)
                return 1
            print(units[0].result["result"])
    except LlmpsychError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

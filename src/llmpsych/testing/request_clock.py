"""Run the ``llmpsych`` command line with a clock on its HTTP requests: when the first request left, when
the last answer came back, the CPU time spent by then, and which modules were loaded at the first request
and when the command ended.

    python -m llmpsych.testing.request_clock OUT.json run --task echo -m openai-compatible/x --base-url URL

Everything after ``OUT.json`` is the command line of ``llmpsych``. ``OUT.json`` is written when the
command ends (also when it fails), with ``time.monotonic()`` stamps, which are comparable between
processes on one machine, so a parent that notes the clock before starting this process and after it
exits has the run's fixed cost: start to first request plus last answer to exit
(``benchmarks/fixed_cost.py``; ``tests/test_fixed_cost.py`` checks the modules).

The clock wraps :meth:`HttpBackend.send_encoded <llmpsych.models.http_backend.HttpBackend.send_encoded>`,
which every chat request of a run goes through; nothing else of the run changes.
"""

from __future__ import annotations

import functools
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m llmpsych.testing.request_clock OUT.json LLMPSYCH-ARGS...", file=sys.stderr)
        return 2
    out, cli_args = Path(args[0]), args[1:]
    clock: dict[str, Any] = {"requests": 0}

    from llmpsych.models import http_backend  # absolute: benchmarks also run this file in another tree

    send_encoded = http_backend.HttpBackend.send_encoded

    @functools.wraps(send_encoded)
    async def timed(self: http_backend.HttpBackend, payload: bytes, *more: Any) -> dict[str, Any]:
        if not clock["requests"]:
            clock.update(first_request=time.monotonic(), cpu_at_first_request=_cpu())
            clock["modules_at_first_request"] = sorted(sys.modules)
        clock["requests"] += 1
        try:
            return await send_encoded(self, payload, *more)  # more: the headers, where the tree has them
        finally:
            clock.update(last_answer=time.monotonic(), cpu_at_last_answer=_cpu())
            clock["peak_rss_mb_at_last_answer"] = _peak_rss_mb()

    http_backend.HttpBackend.send_encoded = timed  # type: ignore[method-assign,assignment]
    from llmpsych.cli import main as cli_main

    sys.argv = ["llmpsych", *cli_args]
    code: Any = 0
    try:
        cli_main()
    except SystemExit as exc:
        code = exc.code
    finally:
        clock["modules_at_exit"] = sorted(sys.modules)
        out.write_text(json.dumps(clock))
    return code if isinstance(code, int) else 1


if __name__ == "__main__":
    sys.exit(main())

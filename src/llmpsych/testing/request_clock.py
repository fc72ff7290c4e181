"""Run the ``llmpsych`` command line with a clock on its HTTP requests: when the first request left, when
the last answer came back, the CPU time spent by then, which modules were loaded at the first request
and when the command ended, and how many times the cyclic garbage collector had run by the first request.

    python -m llmpsych.testing.request_clock OUT.json run --task echo -m openai-compatible/x --base-url URL

Everything after ``OUT.json`` is the command line of ``llmpsych``. ``OUT.json`` is written when the
command ends (also when it fails), with ``time.monotonic()`` stamps, which are comparable between
processes on one machine, so a parent that notes the clock before starting this process and after it
exits has the run's fixed cost: start to first request plus last answer to exit
(``benchmarks/fixed_cost.py``; ``tests/test_fixed_cost.py`` checks the modules).

The command line is started as the ``llmpsych`` script starts it (:mod:`llmpsych.__main__`). The clock
wraps :meth:`HttpBackend.send_encoded <llmpsych.models.http_backend.HttpBackend.send_encoded>`,
which every chat request of a run goes through; nothing else of the run changes.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import importlib.util
import json
import re
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

    # The launcher of the ``llmpsych`` script (absolute imports: benchmarks also run this file against
    # another tree, whose ``__main__`` may be one that runs the command line when imported).
    spec = importlib.util.find_spec("llmpsych.__main__")
    launcher: Any = None
    kept_for_good: Any = contextlib.nullcontext
    if spec and spec.origin and "def kept_for_good" in Path(spec.origin).read_text(encoding="utf-8"):
        launcher = importlib.import_module("llmpsych.__main__")
        kept_for_good = launcher.kept_for_good

    with kept_for_good():  # as the launcher imports the command line
        # read, not imported (finding llmpsych.models.http_backend would import llmpsych.models)
        package = importlib.util.find_spec("llmpsych")
        folder = Path(package.origin).parent if package and package.origin else Path()
        backend = folder / "models" / "http_backend.py"
        source = backend.read_text(encoding="utf-8") if backend.is_file() else ""
        if re.search(r"^\s*(import|from) aiohttp\b", source, re.MULTILINE):
            # what importing the HTTP client library costs, which every run of this tree imports (here
            # first): the figure to take off the fixed cost to see the rest
            before = _cpu()
            importlib.import_module("aiohttp")
            clock["cpu_import_aiohttp"] = _cpu() - before
        from llmpsych.models import http_backend

    send_encoded = http_backend.HttpBackend.send_encoded

    @functools.wraps(send_encoded)
    async def timed(self: http_backend.HttpBackend, payload: bytes, *more: Any) -> dict[str, Any]:
        if not clock["requests"]:
            clock.update(first_request=time.monotonic(), cpu_at_first_request=_cpu())
            clock["modules_at_first_request"] = sorted(sys.modules)
            clock["gc_collections_at_first_request"] = sum(g["collections"] for g in gc.get_stats())
        clock["requests"] += 1
        try:
            return await send_encoded(self, payload, *more)  # more: the headers, where the tree has them
        finally:
            clock.update(last_answer=time.monotonic(), cpu_at_last_answer=_cpu())
            clock["peak_rss_mb_at_last_answer"] = _peak_rss_mb()

    http_backend.HttpBackend.send_encoded = timed  # type: ignore[method-assign,assignment]
    sys.argv = ["llmpsych", *cli_args]
    code: Any = 0
    try:
        if launcher is not None:
            launcher.main(cli_args)
        else:
            from llmpsych.cli import main as cli_main

            cli_main()
    except SystemExit as exc:
        code = exc.code
    finally:
        clock["modules_at_exit"] = sorted(sys.modules)
        out.write_text(json.dumps(clock))
    return code if isinstance(code, int) else 1


if __name__ == "__main__":
    sys.exit(main())

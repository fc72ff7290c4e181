"""``llmpsych web``: the runs, each run's report and transcripts, and comparisons, in a browser.

Install with ``pip install "llmpsych[web]"`` (Starlette, uvicorn, Jinja2). The pages read run stores
read-only and change nothing; see :mod:`llmpsych.web.security` for what guards them.
"""

from __future__ import annotations

__all__ = ["serve_runs"]

from .cli import serve_runs

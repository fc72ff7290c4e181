"""Faults and defences around any multi-agent system: a fault-injecting OpenAI-compatible endpoint, the
ground truth of every message it changed, and the score of an attribution method against it.

The stable Python surface::

    from llmpsych.faults import load_plan, running
    with running(load_plan("plan.toml"), upstream="openai-compatible/m", base_url=URL, out="runs/x") as ep:
        ...  # point the framework at ep.base_url with api_key=ep.token; ep.run_dir records everything

See ``docs/faults-anywhere.md``. The names are imported on first use, so a module of the package
(``python -m llmpsych.faults.inhouse``, started once per task by a study) does not load the server and
pandas with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .endpoint import Endpoint, running
    from .plan import AgentRule, Defence, Fault, FaultPlan, load_plan, parse_plan
    from .truth import AttributionScore, attribution_score, truth_frame

_HOME = {
    "Endpoint": "endpoint",
    "running": "endpoint",
    "AgentRule": "plan",
    "Defence": "plan",
    "Fault": "plan",
    "FaultPlan": "plan",
    "load_plan": "plan",
    "parse_plan": "plan",
    "AttributionScore": "truth",
    "attribution_score": "truth",
    "truth_frame": "truth",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)


__all__ = [
    "AgentRule",
    "AttributionScore",
    "Defence",
    "Endpoint",
    "Fault",
    "FaultPlan",
    "attribution_score",
    "load_plan",
    "parse_plan",
    "running",
    "truth_frame",
]

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

from typing import TYPE_CHECKING

from ..lazy import first_use

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


__getattr__ = first_use(__name__, _HOME)


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

"""The six collaboration systems, built in-house from the thesis's descriptions, and the single-agent
baseline."""

from __future__ import annotations

from ...registry import Registry, subclass_check
from .base import System

#: The systems by name (:mod:`llmpsych.registry`): a system is one module plus one line.
SYSTEMS: Registry[type[System]] = Registry(
    "system",
    subclass_check(
        System, "llmpsych.collab.systems.System", "name", "structure", "final_agent", "default_faulty"
    ),
)
SYSTEMS.add("metagpt", "llmpsych.collab.systems.metagpt:MetaGPT")
SYSTEMS.add("selfcollab", "llmpsych.collab.systems.selfcollab:SelfCollab")
SYSTEMS.add("camel", "llmpsych.collab.systems.camel:Camel")
SYSTEMS.add("spp", "llmpsych.collab.systems.spp:SPP")
SYSTEMS.add("mad", "llmpsych.collab.systems.mad:MAD")
SYSTEMS.add("agentverse", "llmpsych.collab.systems.agentverse:AgentVerse")
SYSTEMS.add("single", "llmpsych.collab.systems.single:Single")


def system_class(name: str) -> type[System]:
    """Resolve a system name to its class."""
    return SYSTEMS.get(name)


def register_system(name: str, target: str | type[System]) -> None:
    """Make a collaboration system available as ``system = name`` (``target`` is ``module:Class``).

    The class is imported and checked now, so a half-written system is refused here, in one line, and not
    in the middle of a run."""
    from ...errors import ConfigError

    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"system name {name!r}: use letters, digits, '-' and '_'")
    SYSTEMS.register(name, target)


__all__ = ["SYSTEMS", "System", "register_system", "system_class"]

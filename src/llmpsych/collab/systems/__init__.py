"""The six collaboration systems, built in-house from the thesis's descriptions."""

from __future__ import annotations

from .base import System

SYSTEMS: dict[str, str] = {
    "metagpt": "llmpsych.collab.systems.metagpt:MetaGPT",
    "selfcollab": "llmpsych.collab.systems.selfcollab:SelfCollab",
    "camel": "llmpsych.collab.systems.camel:Camel",
    "spp": "llmpsych.collab.systems.spp:SPP",
    "mad": "llmpsych.collab.systems.mad:MAD",
    "agentverse": "llmpsych.collab.systems.agentverse:AgentVerse",
}


def system_class(name: str) -> type[System]:
    """Resolve a system name to its class."""
    import importlib

    from ...errors import ConfigError

    try:
        module_name, _, cls_name = SYSTEMS[name].partition(":")
    except KeyError:
        raise ConfigError(f"unknown system {name!r}", f"choose one of {', '.join(SYSTEMS)}") from None
    return getattr(importlib.import_module(module_name), cls_name)


__all__ = ["SYSTEMS", "System", "system_class"]

"""The six collaboration systems, built in-house from the thesis's descriptions, and the single-agent
baseline."""

from __future__ import annotations

from .base import System

SYSTEMS: dict[str, str] = {
    "metagpt": "llmpsych.collab.systems.metagpt:MetaGPT",
    "selfcollab": "llmpsych.collab.systems.selfcollab:SelfCollab",
    "camel": "llmpsych.collab.systems.camel:Camel",
    "spp": "llmpsych.collab.systems.spp:SPP",
    "mad": "llmpsych.collab.systems.mad:MAD",
    "agentverse": "llmpsych.collab.systems.agentverse:AgentVerse",
    "single": "llmpsych.collab.systems.single:Single",
}


def _load(name: str, target: str) -> type[System]:
    import importlib
    import inspect

    from ...errors import ConfigError

    module_name, _, cls_name = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"system {name!r}: cannot import {target!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, System)):
        raise ConfigError(f"system {name!r}: {target!r} is not a subclass of llmpsych.collab.systems.System")
    missing = [a for a in ("name", "structure", "final_agent", "default_faulty") if not hasattr(cls, a)]
    if missing or inspect.isabstract(cls):
        what = ", ".join(missing) or ", ".join(sorted(cls.__abstractmethods__))
        raise ConfigError(f"system {name!r}: {target!r} does not define {what}")
    return cls


def system_class(name: str) -> type[System]:
    """Resolve a system name to its class."""
    from ...errors import ConfigError

    if name not in SYSTEMS:
        raise ConfigError(f"unknown system {name!r}", f"choose one of {', '.join(SYSTEMS)}")
    return _load(name, SYSTEMS[name])


def register_system(name: str, target: str) -> None:
    """Make a collaboration system available as ``system = name`` (``target`` is ``module:Class``).

    The class is imported and checked now, so a half-written system is refused here, in one line, and not
    in the middle of a run."""
    from ...errors import ConfigError

    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"system name {name!r}: use letters, digits, '-' and '_'")
    _load(name, target)
    SYSTEMS[name] = target


__all__ = ["SYSTEMS", "System", "register_system", "system_class"]

"""Paths a run reads, as the nodes of a cluster must see them.

A path the user gives (``--data-dir ../shared/seed-data``, ``gguf:models/x.gguf``, an option naming a file)
means a place as seen from the driver's working directory. A Ray actor or task runs in its node's
working directory, so the driver sends every such path absolute (:func:`absolute_paths`); files small
enough to travel are sent as their content already (scale files, situations given as text). On the
node, :func:`check_on_node` refuses in one line a path the node does not see (storage not shared, or
not mounted at the same path), before anything is asked of a model.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .optionfields import NodePath

if TYPE_CHECKING:
    from .config import RunConfig

GGUF = "gguf:"


def _absolute(path: str | Path) -> Path:
    """``path`` as the driver sees it, absolute (``~`` expanded; symbolic links kept as given)."""
    return Path(path).expanduser().absolute()


def _gguf_parts(spec: str) -> tuple[str, str]:
    """The file of a ``gguf:PATH[?ctx=N]`` spec and the rest (``?ctx=N`` or nothing)."""
    body = spec[len(GGUF) :]
    head, sep, query = body.rpartition("?")
    return (head, f"?{query}") if sep and query.startswith("ctx=") else (body, "")


def _gguf(spec: str) -> str:
    """A ``gguf:`` spec with its file absolute; any other spec as it is."""
    if not spec.startswith(GGUF):
        return spec
    path, rest = _gguf_parts(spec)
    return f"{GGUF}{_absolute(path)}{rest}" if path else spec


def path_options(config: RunConfig) -> list[str]:
    """The names of the run's task options that name files or folders (marked ``NODE_PATH``)."""
    from .task import task_class

    options = task_class(config.task).Options
    return [
        name
        for name, field in options.model_fields.items()
        if any(isinstance(meta, NodePath) for meta in field.metadata)
    ]


def absolute_paths(config: RunConfig) -> RunConfig:
    """A copy of ``config`` with every path in it absolute as the driver sees it: ``data_dir``,
    ``cache_path``, ``gguf:`` model files, and the task's path options."""
    update: dict[str, Any] = {}
    for name in ("data_dir", "cache_path"):
        value = getattr(config, name)
        if value is not None:
            update[name] = _absolute(value)
    update["model"] = _gguf(config.model)
    models: dict[str, Any] = {}
    for role, value in config.models.items():
        if isinstance(value, str):
            models[role] = _gguf(value)
        else:
            models[role] = value.model_copy(update={"model": _gguf(value.model)})
    update["models"] = models
    options = dict(config.options)
    for name in path_options(config):
        if isinstance(options.get(name), str) and options[name]:
            options[name] = str(_absolute(options[name]))
    update["options"] = options
    return config.model_copy(update=update)


def node_name() -> str:
    """This node, as a message names it."""
    return socket.gethostname()


def check_on_node(config: RunConfig, where: str) -> None:
    """Refuse, in one line, a path of ``config`` (made absolute by the driver) that this node does not
    see; ``where`` names the process (a Ray actor, a sweep's task)."""
    wanted: list[tuple[str, Path, bool]] = []
    if config.data_dir is not None:
        wanted.append(("--data-dir", config.data_dir, True))
    specs = [config.model, *(v if isinstance(v, str) else v.model for v in config.models.values())]
    for spec in specs:
        if spec.startswith(GGUF) and _gguf_parts(spec)[0]:
            wanted.append(("the model file", Path(_gguf_parts(spec)[0]), False))
    for name in path_options(config):
        value = config.options.get(name)
        if isinstance(value, str) and value:
            wanted.append((f"option {name}", Path(value), False))
    for what, path, folder in wanted:
        seen = path.is_dir() if folder else os.path.exists(path)
        if path.is_absolute() and not seen:
            raise ConfigError(
                f"{what} {path} is not on {where} on node {node_name()}",
                "put it on storage every node sees at the same path (or in the same image on every node)",
            )

"""Field types a task's ``Options`` model declares once, read alike from a flag, ``-O`` and a config file.

A convenience of the command line (``--scale BFI,EPQ-R``) is a property of the option, not of one
command: declared here on the field, it holds for ``--scale``, ``-O scale=BFI,EPQ-R`` and
``scale = "BFI,EPQ-R"`` in a config file, and the command generated from the model
(:func:`llmpsych.clikit.task_command`) needs no second declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BeforeValidator


def split_commas(value: Any) -> Any:
    """``"BFI,EPQ-R"`` -> ``["BFI", "EPQ-R"]``; in a list, each text is split the same way
    (``["En,Zh", "Ko"]`` -> ``["En", "Zh", "Ko"]``); empty parts are dropped; anything else is left to
    the field's own validation."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        out: list[Any] = []
        for item in value:
            out.extend(split_commas(item) if isinstance(item, str) else [item])
        return out
    return value


def split_several(value: Any) -> Any:
    """``"guessing,pirate"`` -> ``["guessing", "pirate"]``; a text without a comma stays one name."""
    return split_commas(value) if isinstance(value, str) and "," in value else value


def names_or_all(value: Any) -> Any:
    """``"guessing,pirate"`` -> ``["guessing", "pirate"]``, ``"guessing"`` -> ``["guessing"]``; ``"all"``
    (any case) or an empty text -> ``"all"``; anything else (a list, a stored table) is left to the
    field's own validation."""
    if isinstance(value, str):
        return "all" if value.strip().lower() in ("", "all") else split_commas(value)
    return value


#: A list of names or ids (none of which holds a comma): each text given may list several, comma-separated.
CommaList = Annotated[list[str], BeforeValidator(split_commas)]
#: One name, or several as a list or comma-separated.
NameOrNames = Annotated[str | list[str], BeforeValidator(split_several)]
#: Several names (a list, or comma-separated), or ``all``.
NamesOrAll = Annotated[list[str] | Literal["all"], BeforeValidator(names_or_all)]
#: The comma forms, applied to an option's value before it is stored (:func:`comma_forms`).
COMMA_FORMS = (split_commas, split_several, names_or_all)
_MARKED: list[Callable[[Any], Any]] = []


def comma_form(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Mark ``func`` (a field's ``BeforeValidator``, e.g. one that splits only a task's own names) as a
    comma form: :func:`comma_forms` writes a value out with it before it is stored, as with
    :data:`COMMA_FORMS`."""
    _MARKED.append(func)
    return func


def comma_forms(model: type[Any], options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with each comma form written out as the list it means (``scale: "BFI,EPQ-R"`` ->
    ``["BFI", "EPQ-R"]``), so a run config stores one spelling whether the value came from a flag, ``-O``
    or a file (runs then compare by their settings, not by how they were typed)."""
    out = dict(options)
    for name, info in getattr(model, "model_fields", {}).items():
        if name not in out:
            continue
        for meta in [*info.metadata, *_nested_metadata(info.annotation)]:
            if isinstance(meta, BeforeValidator) and (meta.func in COMMA_FORMS or meta.func in _MARKED):
                out[name] = meta.func(out[name])
    return out


def _nested_metadata(annotation: Any) -> list[Any]:
    """The ``Annotated`` metadata of the members of a union (``CommaList | None``)."""
    found: list[Any] = []
    for member in get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ():
        if get_origin(member) is Annotated:
            found.extend(get_args(member)[1:])
    return found


def no_flag() -> dict[str, Any]:
    """``json_schema_extra`` of an option that is set by a command, never typed (it gets no flag of its
    own; ``-O`` and a config file still reach it)."""
    return {"flag": False}


def off_switch(name: str) -> dict[str, Any]:
    """``json_schema_extra`` of a bool option whose off switch has its own name (``published``: the flag is
    ``--published/--corrected``, the one spelling of the two scorings)."""
    return {"off": name}


@dataclass(frozen=True)
class Renamed:
    """An option's old name: a flag is named after the option it sets, so an option whose flag would
    spell a concept the old way (``--scales``, ``--mode``) was renamed instead (``scale``, ``method``).

    ``values``: only these values moved (``method: welch`` named the t-test, now ``test``; ``method:
    logprob`` is the scoring method's new name and stays)."""

    old: str
    new: str
    values: frozenset[str] | None = None

    def moves(self, value: Any) -> bool:
        """Whether ``value`` of the old name is the renamed option's."""
        return self.values is None or (isinstance(value, str) and value.strip().lower() in self.values)


def new_names(
    data: Any, renamed: Iterable[Renamed], said: Callable[[Renamed, Any], None] | None = None
) -> Any:
    """``data`` (an options mapping) with each old name of ``renamed`` written as its new name, in order
    (``method: welch`` -> ``test`` before ``mode`` -> ``method``); ``said(rule, value)`` for each. A stored
    run or config keeps working; the old and the new name given with different values is an error."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for rule in renamed:
        if rule.old not in out or not rule.moves(out[rule.old]):
            continue
        value = out.pop(rule.old)
        if rule.new in out and out[rule.new] != value:
            raise ValueError(f"{rule.old!r} is the old name of {rule.new!r}: give {rule.new!r} only")
        out[rule.new] = value
        if said is not None:
            said(rule, value)
    return out


__all__ = [
    "COMMA_FORMS",
    "CommaList",
    "comma_form",
    "NameOrNames",
    "NamesOrAll",
    "Renamed",
    "comma_forms",
    "names_or_all",
    "new_names",
    "no_flag",
    "off_switch",
    "split_commas",
    "split_several",
]


class NodePath:
    """Marks an option that names a file or folder a task reads (``Annotated[str | None, NODE_PATH]``):
    on a cluster the driver sends it absolute, and a node that does not see it says so in one line
    (:mod:`llmpsych.runs.node_paths`)."""


#: The one marker instance the option models use.
NODE_PATH = NodePath()

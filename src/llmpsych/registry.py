"""One registry idiom for everything llmpsych finds by name: tasks, games, multi-agent systems and model
backends.

A plugin is one module plus one line, ``REGISTRY.add(name, "module:attr")`` (as TextArena registers an
environment). The target is imported when it is first asked for, so listing names (``--help``, a config
check) imports no benchmark; :meth:`Registry.register` imports it at once, so a plugin written outside
llmpsych is refused where it is registered, not in the middle of a run. Either way the registry's check
decides whether the target is what it holds and names each missing piece in one :class:`ConfigError`
line (or the registry's own error class); an unknown name is one line listing the known ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, cast

from .errors import ConfigError, LlmpsychError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named plugins of one kind (``what``: "task", "game", "system", "model backend").

    ``check`` returns what is wrong with a loaded target (empty: nothing), each item a phrase such as
    ``"does not define name"``; ``error`` is the exception class a refusal raises.
    """

    def __init__(
        self, what: str, check: Callable[[object], list[str]], error: type[LlmpsychError] = ConfigError
    ) -> None:
        self.what = what
        self._check = check
        self._error = error
        self._targets: dict[str, str | T] = {}
        self._loaded: dict[str, T] = {}

    def add(self, name: str, target: str | T) -> None:
        """The one line that makes a plugin exist: ``target`` is ``"module:attr"`` (imported and checked
        when first asked for) or the object itself (checked now)."""
        if not isinstance(target, str):
            self._loaded[name] = self.load(name, target)
        else:
            self._loaded.pop(name, None)
        self._targets[name] = target

    def register(self, name: str, target: str | T) -> T:
        """:meth:`add`, with the target imported and checked now: a half-written plugin is refused here."""
        loaded = self.load(name, target)
        self._targets[name], self._loaded[name] = target, loaded
        return loaded

    def get(self, name: str) -> T:
        """The plugin registered as ``name``: imported and checked the first time; an unknown name is a
        one-line error listing the known ones."""
        if name not in self._targets:
            raise self._error(f"unknown {self.what} {name!r}", f"choose one of: {', '.join(sorted(self))}")
        if name not in self._loaded:
            self._loaded[name] = self.load(name, self._targets[name])
        return self._loaded[name]

    def remove(self, name: str) -> None:
        """Forget ``name`` (plugins defined at run time, e.g. in tests)."""
        self._targets.pop(name, None)
        self._loaded.pop(name, None)

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._targets)

    def targets(self) -> dict[str, str]:
        """Each registered name with where its plugin lives, as ``"module:attr"`` (nothing is imported)."""
        return {
            name: t
            if isinstance(t, str)
            else f"{getattr(t, '__module__', '?')}:{getattr(t, '__qualname__', '?')}"
            for name, t in self._targets.items()
        }

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._targets))

    def __len__(self) -> int:
        return len(self._targets)

    def resolve(self, target: str | T, label: str | None = None) -> object:
        """``target`` itself, or the object ``"module:attr"`` names (imported now, not checked)."""
        if not isinstance(target, str):
            return target
        module_name, _, attr = target.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise self._error(f"{label or self.what}: cannot import {target!r}: {exc}") from None

    def load(self, name: str, target: str | T) -> T:
        """``target`` resolved and checked as the plugin ``name`` (not registered)."""
        label = f"{self.what} {name!r}"
        loaded = self.resolve(target, label)
        problems = self._check(loaded)
        if problems:
            raise self._error(f"{label} cannot be registered: {'; '.join(problems)}")
        return cast(T, loaded)


def subclass_check(base: type, base_name: str, *required: str) -> Callable[[object], list[str]]:
    """A registry check for classes: a subclass of ``base`` (``base_name``: how the error names it) that
    defines each attribute in ``required`` and leaves no abstract method open."""

    def check(target: object) -> list[str]:
        if not (isinstance(target, type) and issubclass(target, base)):
            return [f"{target!r} is not a subclass of {base_name}"]
        missing = [attr for attr in required if not hasattr(target, attr)]
        missing += sorted(getattr(target, "__abstractmethods__", ()))
        return [f"it does not define {', '.join(missing)}"] if missing else []

    return check


__all__ = ["Registry", "subclass_check"]

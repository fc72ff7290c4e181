"""Public names of a package imported from their modules on first use (PEP 562), so that importing the
package (``llmpsych``, ``llmpsych.runs``, ...) does not import everything it offers."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def first_use(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level ``__getattr__`` of ``package``: ``where`` maps each public name to the module,
    relative to the package, that defines it; the value is imported when first asked for and kept in the
    package's namespace, so later lookups are plain attribute reads."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    return __getattr__

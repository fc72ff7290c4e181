"""The model backends: how a parsed model spec becomes a client, one registered opener per kind.

A backend is one module with an opener, ``open(spec, options) -> ModelClient``, plus one line here (or in
the code that uses it): ``BACKENDS.add("kind", "module:open")``. The spec parser
(:func:`~llmpsych.models.spec.parse_model_spec`) gives built-in specs the kind ``http`` (any
OpenAI-compatible endpoint) or ``embedded`` (llama.cpp in this process); any other registered kind is
also a spec prefix, so ``BACKENDS.add("mine", "my_backend:open")`` makes ``mine/<model>`` a spec whose
client that opener builds. A target that is not callable is refused with one line
(:mod:`llmpsych.registry`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..registry import Registry

if TYPE_CHECKING:
    from .cache import ResponseCache
    from .embedded import EmbeddedSettings


@dataclass(frozen=True)
class ClientOptions:
    """What a run or a command asks of a client beyond the spec (None: the backend's default)."""

    base_url: str | None = None
    concurrency: int | None = None
    timeout: float | None = None
    max_retries: int | None = None
    cache: ResponseCache | None = None
    embedded: EmbeddedSettings | None = None
    #: where ``base_url`` came from, for its errors (``--base-url``, ``models.ROLE.base_url``, ...)
    url_source: str = "--base-url"


#: ``open(spec, options) -> ModelClient``; typed as such where it is called (``models.client.Opener``): the
#: spec and client types live in modules that import this one, and no import loop is allowed.
Opener = Callable[[Any, ClientOptions], Any]


def _opener(target: object) -> list[str]:
    return [] if callable(target) else [f"{target!r} is not callable (an opener: open(spec, options))"]


#: The model backends by kind (the kinds :func:`~llmpsych.models.spec.parse_model_spec` gives).
BACKENDS: Registry[Opener] = Registry("model backend", _opener)
BACKENDS.add("http", "llmpsych.models.client:open_http")
BACKENDS.add("embedded", "llmpsych.models.client:open_embedded")

#: The kinds the spec grammar itself produces (not spec prefixes).
BUILTIN_KINDS = frozenset({"http", "embedded"})

__all__ = ["BACKENDS", "BUILTIN_KINDS", "ClientOptions", "Opener"]

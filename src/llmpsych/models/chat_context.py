"""What a work unit's context offers to the code that asks models: tasks, game tables, multi-agent
runtimes and questionnaire administrations.

The run engine's ``llmpsych.runs.context.UnitContext`` is the context of a real run (every call recorded
in the run store, replayed on resume); wrappers such as PsychoBench's ``CipherContext`` and the contexts
of tests offer the same surface. Code that receives a context annotates it with :class:`ChatContext`,
so it depends on this surface and not on the run engine.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .types import ChatResult, GenerationParams, Message

if TYPE_CHECKING:
    from .client import ModelClient

#: One request of :meth:`ChatContext.chat_all`: (messages, parameters or None, role, sample).
ChatRequest = tuple[list[Message], GenerationParams | None, str, int | str]


class ChatContext(Protocol):
    """A unit's recorded chat function, its seeded randomness and its identity."""

    @property
    def unit_id(self) -> str:
        """The work unit's id (stable across resumes)."""
        ...

    @property
    def clients(self) -> Mapping[str, ModelClient]:
        """The models of the run by role (``subject``, ``judge``, ...); a role not here has no model."""
        ...

    def rng(self, *labels: Any) -> random.Random:
        """A random generator seeded by the run seed, the unit and ``labels`` (same labels, same draws)."""
        ...

    async def chat(
        self,
        messages: list[Message],
        params: GenerationParams | None = None,
        role: str = "subject",
        sample: int | str = 0,
    ) -> ChatResult:
        """Ask the model playing ``role``; identical repeated requests in a unit stay distinct samples."""
        ...

    async def chat_all(self, requests: list[ChatRequest]) -> list[ChatResult]:
        """Ask several requests at once (e.g. all seats of a simultaneous round), results in order."""
        ...

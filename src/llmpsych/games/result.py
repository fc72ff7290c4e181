"""The stored result of one ``gamabench`` unit: one whole game, typed.

:meth:`RunRecord.results(GamaBenchResult) <llmpsych.runs.record.RunRecord.results>` parses each finished
unit's result once. Results written by older llmpsych versions still parse: fields added since have
defaults, and fields since dropped (the per-seat ``transcripts`` copy of every conversation, now rendered
from the stored calls) are kept as extra fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class SeatInfo:
    """Who sat in one seat: its spec (``llm``, ``llm:rival``, ``human:Ann``, ``fixed:50`` ...), its kind
    (the spec's first word) and, for a model seat, the model spec of its role."""

    player: int
    spec: str
    kind: str
    model: str | None = None

    @property
    def who(self) -> str:
        """``model <spec>`` for a model seat, else the seat spec."""
        return f"model {self.model or '?'}" if self.kind in ("llm", "model") else self.spec


class GamaBenchResult(BaseModel):
    """One game played: the game and its parameters, the seats, and one record per round holding every
    decision (player, seat, action, asks, errors, fallback) and the round's outcome."""

    model_config = ConfigDict(extra="allow")

    game: str
    run: int
    players: int
    rounds_planned: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    prompts: str = "?"
    seats: list[str] = Field(default_factory=list)
    fallbacks: int = 0
    reasks: dict[str, Any] = Field(default_factory=dict)
    deviations: list[str] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    rounds: list[dict[str, Any]] = Field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The result as the plain mapping a game's ``scoring_log`` and ``plot_points`` read."""
        return self.model_dump()

    def seat_info(self, role_specs: Mapping[str, str]) -> list[SeatInfo]:
        """Each player's seat, with the model of a model seat's role (from the run config's roles)."""
        out = []
        for player in range(self.players):
            spec = str(self.seats[player]) if player < len(self.seats) else "?"
            kind, _, role = spec.partition(":")
            kind = kind.strip().lower()
            model = role_specs.get(role or "subject", "?") if kind in ("llm", "model") else None
            out.append(SeatInfo(player, spec, kind, model))
        return out

    def decisions(self) -> list[dict[str, Any]]:
        """Every decision, one row each: any round field holding a list of per-player answer records (or
        one such record); lists and mappings in an action written as JSON."""
        rows = []
        for record in self.rounds:
            for key, value in record.items():
                items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
                for item in items:
                    if isinstance(item, dict) and "player" in item and "action" in item:
                        rows.append(
                            {
                                "game": self.game,
                                "run": self.run,
                                "round": record["round"],
                                "decision": key,
                                "player": item["player"],
                                "seat": item.get("seat"),
                                "action": cell(item["action"]),
                                "asks": item.get("asks"),
                                "fallback": bool(item.get("fallback", False)),
                            }
                        )
        return rows

    def round_rows(self) -> list[dict[str, Any]]:
        """One row per round with its outcome fields (the decisions left out; lists written as JSON)."""
        rows = []
        for record in self.rounds:
            row: dict[str, Any] = {"game": self.game, "run": self.run}
            for key, value in record.items():
                if isinstance(value, list) and value and isinstance(value[0], dict) and "asks" in value[0]:
                    continue
                if isinstance(value, dict) and "asks" in value:
                    continue
                row[key] = cell(value)
            rows.append(row)
        return rows


def cell(value: Any) -> Any:
    """A table cell: a list or mapping as JSON, anything else as it is."""
    return json.dumps(value) if isinstance(value, list | dict) else value


def as_result(result: GamaBenchResult | Mapping[str, Any]) -> GamaBenchResult:
    """``result`` typed (a stored mapping is parsed)."""
    return result if isinstance(result, GamaBenchResult) else GamaBenchResult.model_validate(result)


__all__ = ["GamaBenchResult", "SeatInfo", "as_result", "cell"]

"""EmotionBench's situations, as ``translate`` reads and writes them (registered in
:mod:`llmpsych.instruments.translate` under ``situations``): one text per situation, keyed as the run keys
it (``Anger-1/s03``), and the translated file in the situations file's own JSON shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .situations import canonical_emotion, factor_id, situations_from_json


class _SituationTexts:
    def texts(self, data: Any, origin: str) -> list[tuple[str, str]]:
        loaded = situations_from_json(data, origin, check_counts=False)
        return [(s.key, s.text) for f in loaded.factors for s in f.situations]

    def translated(self, data: Any, done: Mapping[str, tuple[str | None, str]]) -> dict[str, Any]:
        """Each factor's ``scenarios`` translated (an untranslated one kept) and its ``back_translations``
        beside them, in the same order."""
        for entry in data["emotions"]:
            emotion = canonical_emotion(entry["name"])
            for k, factor in enumerate(entry["factors"], start=1):
                fid = factor_id(emotion, k)
                pairs = [done.get(f"{fid}/s{i + 1:02d}") for i in range(len(factor["scenarios"]))]
                factor["scenarios"] = [
                    p[0] if p else s for p, s in zip(pairs, factor["scenarios"], strict=True)
                ]
                factor["back_translations"] = [p[1] if p else "" for p in pairs]
        return dict(data)


SITUATION_TEXTS = _SituationTexts()

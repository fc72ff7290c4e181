"""EmotionBench's situations files as the translation kit translates them (``llmpsych emotionbench
translate``): one text per situation, keyed as the run keys it (``Anger-1/s03``), and the translated file in
the situations file's own JSON shape. Importing this module registers the source with
:mod:`llmpsych.instruments.translate` (:mod:`llmpsych.translate` does, for every run and command)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import model_validator

from ..errors import ConfigError, DataError
from ..instruments.native import MAX_SCALE_FILE_BYTES, StoredText, read_text_file, translation_to_native
from ..instruments.translate import (
    Finished,
    SourceText,
    TranslatableSource,
    output_name,
    register_source,
)
from ..report.files import atomic_write_text
from ..userfiles import parse_json
from .situations import canonical_emotion, factor_id, situations_from_json

#: The group (the first part of each unit id) of a situations file's texts.
SITUATIONS = "situations"


class SituationsSource(StoredText):
    """An EmotionBench situations file (the JSON form) as the run config stores it; a path is read once."""

    what: ClassVar[str] = "situations file"

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if isinstance(value, str | Path):
            file = Path(value)
            if file.suffix.lower() != ".json":
                raise DataError(f"{file}: only the JSON form of a situations file translates", "convert it")
            path, sha256, text = read_text_file(file, cls.what, MAX_SCALE_FILE_BYTES)
            return {"path": path, "sha256": sha256, "content": text}
        return value

    def check(self) -> None:
        self.situations()

    def data(self) -> Any:
        """The parsed JSON."""
        return parse_json(self.content, self.path)

    def situations(self) -> list[tuple[str, str]]:
        """``(key, text)`` of every situation (``Anger-1/s03``), read by EmotionBench's own loader."""
        loaded = situations_from_json(self.data(), self.path, check_counts=False)
        return [(s.key, s.text) for f in loaded.factors for s in f.situations]

    def language(self) -> str | None:
        """The file's ``language`` field, if it has one (a translated file does)."""
        value = self.data().get("language")
        return value if isinstance(value, str) and value.strip() else None


def translated(data: Any, done: Mapping[str, tuple[str | None, str]]) -> dict[str, Any]:
    """``data`` (a situations file's JSON) with each factor's ``scenarios`` translated (an untranslated one
    kept) and its ``back_translations`` beside them, in the same order (``done``: key -> (translation,
    back-translation))."""
    for entry in data["emotions"]:
        emotion = canonical_emotion(entry["name"])
        for k, factor in enumerate(entry["factors"], start=1):
            fid = factor_id(emotion, k)
            pairs = [done.get(f"{fid}/s{i + 1:02d}") for i in range(len(factor["scenarios"]))]
            factor["scenarios"] = [p[0] if p else s for p, s in zip(pairs, factor["scenarios"], strict=True)]
            factor["back_translations"] = [p[1] if p else "" for p in pairs]
    return dict(data)


class SituationTexts(TranslatableSource[SituationsSource]):
    """A situations file: one text per situation; the new file keeps the situations file's shape, with
    ``language``, ``translated_from`` and the ``translation`` record at the top (EmotionBench reads it like
    the source; it ignores the added fields)."""

    option = "situations_file"
    value_type = SituationsSource
    what = "a situations file"
    description = "an EmotionBench situations file (JSON) to translate instead"
    kinds = {"situation": "situation (a scenario the respondent imagines being in)"}
    report_title = "llmpsych scale translation report"
    counted = "n = situations."

    def texts(self, value: SituationsSource, *, paraphrase: bool) -> list[SourceText]:
        return [SourceText(SITUATIONS, key, "situation", text) for key, text in value.situations()]

    def language(self, value: SituationsSource, group: str | None) -> str | None:
        return value.language()

    def require_language(self, value: SituationsSource) -> None:
        if value.language() is None:
            raise ConfigError(
                f"{value.path}: the situations file names no language",
                "give the source language with --source-language (e.g. --source-language en)",
            )

    def write(self, value: SituationsSource, done: Finished) -> Path:
        out_file = done.run_dir / output_name(Path(value.path), done.options)
        pairs = {k: (r.text, r.back_translation or "") for (_, k), r in done.results.items()}
        data = translated(value.data(), pairs)
        new = {
            "language": done.options.to,
            "translated_from": done.task.source_language(None),
            "translation": translation_to_native(done.record),
            **{k: v for k, v in data.items() if k not in ("language", "translated_from", "translation")},
        }
        atomic_write_text(out_file, json.dumps(new, indent=1, ensure_ascii=False) + "\n")
        return out_file

    def reads_it(self, file: Path) -> str:
        return "`llmpsych emotionbench run --situations-file` reads it"


SITUATION_TEXTS = SituationTexts()
register_source(SITUATION_TEXTS)

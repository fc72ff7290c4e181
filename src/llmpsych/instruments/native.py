"""llmpsych's own scale file format (YAML or JSON), so users can add scales; also reads official files.

A native file holds one scale, or several under ``scales:``. Every field is explicit: the response
range, each item's reverse flag, the subscales, and norms with their citation. See ``docs/scales.md``.

Every malformation is reported as one :class:`~llmpsych.errors.DataError` line naming the file, the
scale and the problem.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, model_validator

from ..errors import ConfigError, DataError
from ..report.files import atomic_write_text
from ..userfiles import parse_json, parse_yaml, read_bytes, read_text
from .numbers import whole_number
from .official import load_official_file, scale_from_official
from .scale import Correction, Item, NormGroup, Scale, Subscale, Translation

_T = TypeVar("_T")

FORMAT_KEY = "llmpsych_scale"
FORMAT_VERSION = 1

_SCALE_FIELDS = {
    FORMAT_KEY: False,
    "name": True,
    "title": False,
    "language": False,
    "response": True,
    "scoring": True,
    "system_prompt": False,
    "instructions": False,
    "source": False,
    "license": False,
    "citation": False,
    "items": True,
    "reverse": False,
    "subscales": False,
    "unscored": False,
    "unscored_reason": False,
    "corrections": False,
    "translated_from": False,
    "translation": False,
}
_RESPONSE_FIELDS = {"min": True, "max": True, "labels": False}
_ITEM_FIELDS = {"index": True, "text": True, "reverse": False, "versions": False, "back_translation": False}
_SUBSCALE_FIELDS = {"name": True, "items": True, "norms": False}
_NORM_FIELDS = {"group": True, "mean": True, "sd": True, "n": True, "citation": False, "language": False}
_CORRECTION_FIELDS = {"field": True, "old": True, "new": True, "reason": True}
_TRANSLATION_FIELDS = {
    "mode": True,
    "model": True,
    "back_model": False,
    "date": True,
    "source_file": True,
    "source_sha256": True,
    "measure": True,
    "back_translations": False,
}

FileFormat = Literal["native", "official"]


def load_scale_file(path: str | os.PathLike[str], *, corrections: bool = True) -> list[Scale]:
    """Load a user scale file in the native or the official format (detected from its content)."""
    file = Path(path)
    data = read_structured(file)
    if detect_format(data) == "official":
        return load_official_file(file, corrections=corrections)
    return scales_from_native(data, origin=str(file))


def detect_format(data: Any) -> FileFormat:
    """``official`` for PsychoBench-style data (objects with ``questions``), otherwise ``native``."""
    entries = data if isinstance(data, list) else [data]
    if entries and all(isinstance(e, Mapping) and "questions" in e for e in entries):
        return "official"
    return "native"


#: Largest scale file a run records inside its config (a 1,000-item scale in YAML is about 100 KB).
MAX_SCALE_FILE_BYTES = 2_000_000


@dataclass(frozen=True)
class ScaleFileRecord:
    """A user scale file as a run keeps it: its absolute path, the sha256 of its bytes, and its text.

    The run config stores all three, so a run's scales come from the run itself (a moved or deleted
    file does not stop analysis), and a resume can refuse a file that changed since the run started.
    """

    path: str
    sha256: str
    content: str

    @property
    def name(self) -> str:
        """The file name, for reports."""
        return Path(self.path).name

    def scales(self) -> list[Scale]:
        """The file's scales, parsed from the recorded text (never from the disk)."""
        return load_scale_text(self.content, origin=self.path, suffix=Path(self.path).suffix)


def read_text_file(path: str | os.PathLike[str], what: str, limit: int) -> tuple[str, str, str]:
    """``(absolute path, sha256, text)`` of a UTF-8 file of at most ``limit`` bytes, read by the one bounded
    reader (:func:`llmpsych.userfiles.read_bytes`: the size is checked before a byte is read); one error
    line naming the file as ``what`` otherwise."""
    file = Path(path)
    raw = read_bytes(file, what, limit)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{file}: not UTF-8 text") from None
    return str(file.resolve()), hashlib.sha256(raw).hexdigest(), text


def record_scale_file(path: str | os.PathLike[str]) -> ScaleFileRecord:
    """Read a scale file once, check that it loads, and return its record (one error line otherwise)."""
    record = ScaleFileRecord(*read_text_file(path, "scale file", MAX_SCALE_FILE_BYTES))
    record.scales()
    return record


def sha256_text(text: str) -> str:
    """The sha256 of ``text`` as UTF-8 bytes (equal to the file's when the text was read from it)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_scale_text(text: str, *, origin: str, suffix: str = ".yaml") -> list[Scale]:
    """The scales of a file's text (native or official format; JSON for ``.json``, YAML otherwise)."""
    data = _parse_json_text(text, origin) if suffix.lower() == ".json" else _parse_yaml_text(text, origin)
    if detect_format(data) == "official":
        entries = data if isinstance(data, list) else [data]
        scales = [scale_from_official(e, origin=origin) for e in entries]
        names = [s.name for s in scales]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise DataError(f"{origin}: scale {duplicated[0]!r} is defined more than once")
        return scales
    return scales_from_native(data, origin=origin)


def _parse_json_text(text: str, origin: str) -> Any:
    return parse_json(text, origin)


def _parse_yaml_text(text: str, origin: str) -> Any:
    return parse_yaml(text, origin)


def read_structured(path: Path, limit: int = MAX_SCALE_FILE_BYTES, what: str = "scale file") -> Any:
    """Parse a YAML or JSON file (by suffix; YAML otherwise) of at most ``limit`` bytes, one
    :class:`DataError` line on failure."""
    text = read_text(path, what, limit)
    return parse_json(text, str(path)) if path.suffix.lower() == ".json" else parse_yaml(text, str(path))


def scales_from_native(data: Any, *, origin: str) -> list[Scale]:
    """Every scale of a parsed native document (a scale mapping, a list, or ``scales:``)."""
    if isinstance(data, Mapping) and "scales" in data:
        extra = sorted(set(data) - {"scales", FORMAT_KEY})
        if extra:
            raise DataError(f"{origin}: unknown top-level field '{extra[0]}' next to 'scales'")
        data = data["scales"]
    entries = data if isinstance(data, list) else [data]
    if not entries:
        raise DataError(f"{origin}: the file defines no scale")
    scales = [scale_from_native(entry, origin=origin) for entry in entries]
    names = [s.name for s in scales]
    for name in names:
        if names.count(name) > 1:
            raise DataError(f"{origin}: scale {name!r} is defined more than once")
    return scales


def scale_from_native(data: Any, *, origin: str) -> Scale:
    """Build one :class:`Scale` from a native mapping, checking every field."""
    if not isinstance(data, Mapping):
        raise DataError(f"{origin}: a scale must be a mapping of fields, got {_kind(data)}")
    name = data.get("name")
    where = f"{origin}: scale {name!r}" if isinstance(name, str) and name else f"{origin}: scale"
    _check_fields(data, _SCALE_FIELDS, where)
    version = data.get(FORMAT_KEY, FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise DataError(f"{where}: unsupported {FORMAT_KEY} version {version!r} (this llmpsych reads 1)")
    name = _require_type(name, str, f"{where}: field 'name'")

    response = data["response"]
    if not isinstance(response, Mapping):
        raise DataError(f"{where}: field 'response' must be a mapping with 'min' and 'max'")
    _check_fields(response, _RESPONSE_FIELDS, f"{where}, response")
    low = _whole(response["min"], f"{where}: response 'min'")
    high = _whole(response["max"], f"{where}: response 'max'")
    if low >= high:
        raise DataError(f"{where}: response min ({low}) must be below max ({high})")
    labels = _labels(response.get("labels") or {}, low, high, where)

    raw_items = data["items"]
    if not isinstance(raw_items, list) or not raw_items:
        raise DataError(f"{where}: field 'items' must be a non-empty list")
    items = [_item(entry, position, where) for position, entry in enumerate(raw_items, start=1)]
    indices = [item.index for item in items]
    for index in indices:
        if indices.count(index) > 1:
            raise DataError(f"{where}: duplicate item index {index}")
    reverse = set(_index_list(data.get("reverse", []), f"{where}: field 'reverse'"))
    for key in sorted(reverse):
        if key not in indices:
            raise DataError(
                f"{where}: reverse key {key} is out of the item range (items are {_describe(indices)})"
            )
    items = [
        Item(i.index, i.text, i.reverse or i.index in reverse, i.versions, i.back_translation) for i in items
    ]

    raw_subscales = data.get("subscales", [])
    if not isinstance(raw_subscales, list):
        raise DataError(f"{where}: field 'subscales' must be a list")
    subscales = [_subscale(entry, pos, indices, where) for pos, entry in enumerate(raw_subscales, start=1)]

    unscored = data.get("unscored", False)
    _require_type(unscored, bool, f"{where}: field 'unscored'")
    scoring = data["scoring"]
    scoring = _require_type(scoring, str, f"{where}: field 'scoring'")
    corrections = _corrections(data.get("corrections", []), name, where)
    texts = {key: _optional_str(data, key, where) for key in _TEXT_FIELDS}
    translation = _translation(data.get("translation"), where)
    return Scale(
        name=name,
        items=tuple(items),
        response_min=low,
        response_max=high,
        scoring=scoring.upper(),  # type: ignore[arg-type]  # validated by Scale
        subscales=tuple(subscales),
        level_labels=labels,
        unscored=unscored,
        corrections=corrections,
        origin=origin,
        translation=translation,
        **texts,
    )


_TEXT_FIELDS = (
    "title",
    "language",
    "system_prompt",
    "instructions",
    "source",
    "license",
    "citation",
    "unscored_reason",
    "translated_from",
)


def scale_to_native(scale: Scale) -> dict[str, Any]:
    """A native-format mapping of ``scale`` (loading it back gives an equal scale, origin aside)."""
    out: dict[str, Any] = {FORMAT_KEY: FORMAT_VERSION, "name": scale.name}
    for key in ("title", "language", "translated_from", "source", "license", "citation"):
        if getattr(scale, key) is not None:
            out[key] = getattr(scale, key)
    response: dict[str, Any] = {"min": scale.response_min, "max": scale.response_max}
    if scale.level_labels:
        response["labels"] = dict(sorted(scale.level_labels.items()))
    out["response"] = response
    out["scoring"] = scale.scoring
    for key in ("system_prompt", "instructions"):
        if getattr(scale, key) is not None:
            out[key] = getattr(scale, key)
    out["items"] = [_item_to_native(i) for i in scale.items]
    out["subscales"] = [_subscale_to_native(sub) for sub in scale.subscales]
    if scale.unscored:
        out["unscored"] = True
        out["unscored_reason"] = scale.unscored_reason
    if scale.corrections:
        out["corrections"] = [
            {"field": c.field, "old": c.old, "new": c.new, "reason": c.reason} for c in scale.corrections
        ]
    if scale.translation is not None:
        out["translation"] = translation_to_native(scale.translation)
    return out


def write_scale_file(scales: Iterable[Scale], path: str | os.PathLike[str]) -> Path:
    """Write scales in the native format: JSON for ``.json``, YAML otherwise."""
    file = Path(path)
    documents = [scale_to_native(s) for s in scales]
    payload: Any = documents[0] if len(documents) == 1 else {"scales": documents}
    if file.suffix.lower() == ".json":
        atomic_write_text(file, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        atomic_write_text(file, yaml.safe_dump(payload, sort_keys=False, allow_unicode=True))
    return file


# -- field helpers ------------------------------------------------------------------------------
def _item_to_native(item: Item) -> dict[str, Any]:
    out: dict[str, Any] = {"index": item.index, "text": item.text}
    if item.reverse:
        out["reverse"] = True
    if item.versions:
        out["versions"] = list(item.versions)
    if item.back_translation is not None:
        out["back_translation"] = item.back_translation
    return out


def translation_to_native(t: Translation) -> dict[str, Any]:
    """The native mapping of a translation record (also written into the other translated files)."""
    out: dict[str, Any] = {"mode": t.mode, "model": t.model}
    if t.back_model is not None:
        out["back_model"] = t.back_model
    out.update(date=t.date, source_file=t.source_file, source_sha256=t.source_sha256, measure=t.measure)
    if t.back_translations:
        out["back_translations"] = dict(t.back_translations)
    return out


def _translation(value: Any, where: str) -> Translation | None:
    """The optional ``translation`` record written by ``scales translate``."""
    if value is None:
        return None
    at = f"{where}, translation"
    if not isinstance(value, Mapping):
        raise DataError(f"{at}: must be a mapping")
    _check_fields(value, _TRANSLATION_FIELDS, at)
    mode = value["mode"]
    if mode not in ("translate", "paraphrase"):
        raise DataError(f"{at}: 'mode' must be translate or paraphrase, got {mode!r}")
    texts = {
        key: _require_type(value[key], str, f"{at}: '{key}'")
        for key, required in _TRANSLATION_FIELDS.items()
        if required
    }
    back_model = value.get("back_model")
    if back_model is not None:
        _require_type(back_model, str, f"{at}: 'back_model'")
    back = value.get("back_translations") or {}
    if not isinstance(back, Mapping):
        raise DataError(f"{at}: 'back_translations' must map text names to text")
    for key, text in back.items():
        _require_type(key, str, f"{at}: a 'back_translations' key")
        _require_type(text, str, f"{at}: back_translations {key!r}")
    return Translation(
        mode=mode,
        model=texts["model"],
        date=texts["date"],
        source_file=texts["source_file"],
        source_sha256=texts["source_sha256"],
        measure=texts["measure"],
        back_model=back_model,
        back_translations=dict(back),
    )


def _subscale_to_native(sub: Subscale) -> dict[str, Any]:
    out: dict[str, Any] = {"name": sub.name, "items": list(sub.item_indices)}
    if sub.norms:
        out["norms"] = [
            {
                "group": g.label,
                "mean": g.mean,
                "sd": g.sd,
                "n": g.n,
                **({"citation": g.citation} if g.citation is not None else {}),
                **({"language": g.language} if g.language is not None else {}),
            }
            for g in sub.norms
        ]
    return out


def _item(entry: Any, position: int, where: str) -> Item:
    at = f"{where}, item #{position}"
    if not isinstance(entry, Mapping):
        raise DataError(f"{at}: must be a mapping with 'index' and 'text'")
    _check_fields(entry, _ITEM_FIELDS, at)
    index = _whole(entry["index"], f"{at}: 'index'")
    if index < 1:
        raise DataError(f"{at}: 'index' must be a positive whole number, got {index}")
    text = entry["text"]
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{at}: 'text' must be non-empty text")
    reverse = entry.get("reverse", False)
    _require_type(reverse, bool, f"{at}: 'reverse'")
    versions = entry.get("versions", [])
    if not isinstance(versions, list):
        raise DataError(f"{at}: 'versions' must be a list of texts")
    for number, version in enumerate(versions, start=1):
        if not isinstance(version, str) or not version.strip():
            raise DataError(f"{at}: version #{number} must be non-empty text")
    back = entry.get("back_translation")
    if back is not None:
        _require_type(back, str, f"{at}: 'back_translation'")
    return Item(index=index, text=text, reverse=reverse, versions=tuple(versions), back_translation=back)


def _subscale(entry: Any, position: int, indices: list[int], where: str) -> Subscale:
    if not isinstance(entry, Mapping):
        raise DataError(f"{where}, subscale #{position}: must be a mapping with 'name' and 'items'")
    name = entry.get("name")
    at = f"{where}, subscale {name!r}" if isinstance(name, str) and name else f"{where}, subscale #{position}"
    _check_fields(entry, _SUBSCALE_FIELDS, at)
    if not isinstance(name, str) or not name.strip():
        raise DataError(f"{at}: 'name' must be non-empty text")
    members = _index_list(entry["items"], f"{at}: 'items'")
    if not members:
        raise DataError(f"{at}: 'items' is empty")
    for index in members:
        if index not in indices:
            raise DataError(f"{at}: refers to unknown item {index} (items are {_describe(indices)})")
        if members.count(index) > 1:
            raise DataError(f"{at}: lists item {index} twice")
    raw_norms = entry.get("norms", [])
    if not isinstance(raw_norms, list):
        raise DataError(f"{at}: 'norms' must be a list")
    return Subscale(name=name, item_indices=tuple(members), norms=tuple(_norm(n, at) for n in raw_norms))


def _norm(entry: Any, where: str) -> NormGroup:
    if not isinstance(entry, Mapping):
        raise DataError(f"{where}: every norm must be a mapping with group, mean, sd and n")
    group = entry.get("group")
    at = f"{where}, norm {group!r}" if isinstance(group, str) and group else f"{where}, norm"
    _check_fields(entry, _NORM_FIELDS, at)
    group = _require_type(group, str, f"{at}: 'group'")
    mean = _number(entry["mean"], f"{at}: 'mean'")
    sd = _number(entry["sd"], f"{at}: 'sd'")
    if sd < 0:
        raise DataError(f"{at}: 'sd' must not be negative, got {sd}")
    n = _whole(entry["n"], f"{at}: 'n'")
    if n < 1:
        raise DataError(f"{at}: 'n' must be at least 1, got {n}")
    citation = entry.get("citation")
    if citation is not None:
        _require_type(citation, str, f"{at}: 'citation'")
    language = entry.get("language")
    if language is not None:
        _require_type(language, str, f"{at}: 'language'")
    return NormGroup(label=group, mean=mean, sd=sd, n=n, citation=citation, language=language)


def _corrections(value: Any, scale_name: str, where: str) -> tuple[Correction, ...]:
    if not isinstance(value, list):
        raise DataError(f"{where}: field 'corrections' must be a list")
    out: list[Correction] = []
    for position, entry in enumerate(value, start=1):
        at = f"{where}, correction #{position}"
        if not isinstance(entry, Mapping):
            raise DataError(f"{at}: must be a mapping")
        _check_fields(entry, _CORRECTION_FIELDS, at)
        out.append(Correction(scale_name, *(str(entry[k]) for k in ("field", "old", "new", "reason"))))
    return tuple(out)


def _labels(value: Any, low: int, high: int, where: str) -> dict[int, str]:
    if not isinstance(value, Mapping):
        raise DataError(f"{where}: response 'labels' must map levels to text")
    labels: dict[int, str] = {}
    for key, text in value.items():
        level = whole_number(key) if isinstance(key, str) else key  # "٣" is not the level 3
        if isinstance(level, bool) or not isinstance(level, int):
            raise DataError(f"{where}: response label key {key!r} is not a whole number")
        if not low <= level <= high:
            raise DataError(f"{where}: response label for {level} is outside the range {low}-{high}")
        _require_type(text, str, f"{where}: response label {level}")
        labels[level] = text
    return labels


def _check_fields(data: Mapping[str, Any], fields: Mapping[str, bool], where: str) -> None:
    for key, required in fields.items():
        if required and key not in data:
            raise DataError(f"{where}: missing field '{key}'")
    unknown = [key for key in data if key not in fields]
    if unknown:
        raise DataError(f"{where}: unknown field '{unknown[0]}' (known: {', '.join(fields)})")


def _index_list(value: Any, where: str) -> list[int]:
    if not isinstance(value, list):
        raise DataError(f"{where} must be a list of item numbers")
    return [_whole(v, where) for v in value]


def _whole(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(f"{where} must be a whole number, got {value!r}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(f"{where} must be a number, got {value!r}")
    return value


def _require_type(value: object, kind: type[_T], where: str) -> _T:
    """``value`` if it is a ``kind`` (a bool is not an int; a string must not be blank), else DataError."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DataError(f"{where} must be {_type_name(kind)}, got {value!r}")
    if isinstance(value, str) and not value.strip():
        raise DataError(f"{where} must not be empty")
    return value


def _optional_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None:
        _require_type(value, str, f"{where}: field '{key}'")
    return value


def _type_name(kind: type) -> str:
    return {str: "text", bool: "true or false", int: "a whole number"}.get(kind, kind.__name__)


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__


def _describe(indices: list[int]) -> str:
    ordered = sorted(indices)
    contiguous = ordered == list(range(ordered[0], ordered[-1] + 1))
    return f"{ordered[0]}-{ordered[-1]}" if contiguous else ", ".join(map(str, ordered))


class StoredText(BaseModel):
    """A file as a run config stores it: its absolute path, the sha256 of its bytes and its text, so a run
    reads the file from itself (a moved or edited file changes nothing) and a resume can refuse a file that
    changed. A stored text that does not match its sha256 (an edited store) is refused in one line;
    :meth:`check` is a subclass's further check of the text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: What the file is, in messages ("scale file").
    what: ClassVar[str] = "file"

    path: str
    sha256: str
    content: str

    @model_validator(mode="after")
    def _intact(self) -> Self:
        if sha256_text(self.content) != self.sha256:
            raise ConfigError(
                f"the stored text of {self.what} {self.path} does not match its sha256",
                "was run.sqlite edited? start a new run from the file",
            )
        self.check()
        return self

    def check(self) -> None:
        """Refuse a text this kind of file cannot hold (nothing to check by default)."""


class ScaleFile(StoredText):
    """A user scale file as a run config stores it; given as a path, it is read once and recorded.
    PsychoBench, EmotionBench and the translate task take it."""

    what: ClassVar[str] = "scale file"

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if isinstance(value, str | Path):
            record = record_scale_file(value)
            return {"path": record.path, "sha256": record.sha256, "content": record.content}
        return value

    @property
    def record(self) -> ScaleFileRecord:
        return ScaleFileRecord(self.path, self.sha256, self.content)

    def scales(self) -> list[Scale]:
        """The file's scales, from the recorded text."""
        return load_scale_text(self.content, origin=self.path, suffix=Path(self.path).suffix)

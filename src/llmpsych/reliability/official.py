"""The official LLMPersonality files, read at run time from the data directory (never shipped).

- ``dataset/questionnaires.json``: the BFI (reverse keys, five categories) in 10 languages, each with a
  system prompt, the localised word for "denotes", five level texts and five item versions ``v1..v5``;
- ``prompt_template/<lang>/bfi_<lang>_t1..t5.txt``: the instruction templates (the text after the
  comment-block marker, with ``!<INPUT 0..3>!`` = first label, last label, level details, statements);
- ``dataset/environment.json`` (emotion -> stories), ``personality.json`` (profile -> descriptions),
  ``character.json`` (character -> biographies) for steering.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..data.sources import dataset_path
from ..errors import DataError
from ..instruments.numbers import whole_number
from ..instruments.scale import Item, Scale, Subscale
from ..userfiles import MAX_DATA_FILE_BYTES, parse_json, read_text

DATASET = "LLMPersonality"
QUESTIONNAIRE = ("dataset", "questionnaires.json")
#: The line that ends a template's comment block (a format marker, matched without writing it out).
TEMPLATE_MARKER = re.compile(r"<(comment)(block)(marker)>###</\1\2\3>")
LANGUAGES: tuple[str, ...] = ("En", "Zh", "Ko", "Es", "Fr", "De", "It", "Ar", "Ru", "Ja")
TEMPLATES: tuple[str, ...] = ("t1", "t2", "t3", "t4", "t5")
VERSIONS: tuple[str, ...] = ("v1", "v2", "v3", "v4", "v5")
STEERING_FILES = {
    "environment": "environment.json",
    "personality": "personality.json",
    "character": "character.json",
}


@dataclass(frozen=True)
class LanguagePack:
    """One language of the official BFI file."""

    language: str
    system_prompt: str
    denotes: str
    level_texts: dict[int, str]
    versions: dict[str, dict[int, str]]


@dataclass(frozen=True)
class OfficialBFI:
    """The official multilingual BFI: keys and categories shared, texts per language and version."""

    path: Path
    levels: tuple[int, ...]
    reverse: tuple[int, ...]
    categories: dict[str, tuple[int, ...]]
    languages: dict[str, LanguagePack]

    def pack(self, language: str) -> LanguagePack:
        """The texts of one language; DataError naming the ones available."""
        try:
            return self.languages[language]
        except KeyError:
            raise DataError(
                f"language {language!r} is not in {self.path}", f"available: {', '.join(self.languages)}"
            ) from None

    def scale(self, language: str = "En", version: str = "v1") -> Scale:
        """The shared :class:`Scale` for one language and item version (used for scoring)."""
        return _scale(self, language, version)

    def __hash__(self) -> int:
        return hash(self.path)

    def _build_scale(self, language: str, version: str) -> Scale:
        pack = self.pack(language)
        if version not in pack.versions:
            raise DataError(f"item version {version!r} is not in {self.path} for {language}")
        statements = pack.versions[version]
        reverse = set(self.reverse)
        return Scale(
            name="BFI",
            items=tuple(Item(i, statements[i], i in reverse) for i in sorted(statements)),
            response_min=min(self.levels),
            response_max=max(self.levels),
            scoring="AVG",
            subscales=tuple(Subscale(name, items) for name, items in self.categories.items()),
            system_prompt=pack.system_prompt,
            level_labels=pack.level_texts,
            language=language,
            source=str(self.path),
        )


@lru_cache(maxsize=128)
def _scale(bfi: OfficialBFI, language: str, version: str) -> Scale:
    return bfi._build_scale(language, version)


def data_root(data_dir: Path | None = None) -> Path:
    """The LLMPersonality folder of the data directory."""
    return dataset_path(DATASET, data_dir)


def questionnaire_path(data_dir: Path | None = None) -> Path:
    """``dataset/questionnaires.json`` in the data directory."""
    return data_root(data_dir).joinpath(*QUESTIONNAIRE)


def _whole(value: object) -> int:
    """An item number or level: a whole number written as one (1.7 or "٣" is a malformed file, not 1 or 3)."""
    number = whole_number(value)
    if number is None:
        raise ValueError(f"{str(value)[:20]!r} is not a whole number")
    return number


@lru_cache(maxsize=8)
def _load_bfi(path: Path) -> OfficialBFI:
    raw = _read_json(path)
    try:
        bfi = raw["BFI"]
        categories = {c["cat_name"]: tuple(_whole(i) for i in c["cat_questions"]) for c in bfi["categories"]}
        languages = {
            lang: LanguagePack(
                language=lang,
                system_prompt=str(block.get("system_prompt", "")),
                denotes=str(block["denotes"]),
                level_texts={_whole(k): str(v) for k, v in block["scales"].items()},
                versions={
                    key: {_whole(i): str(t) for i, t in value["statements"].items()}
                    for key, value in block.items()
                    if key.startswith("v") and key[1:].isdigit()
                },
            )
            for lang, block in bfi["questions"].items()
        }
        return OfficialBFI(
            path=path,
            levels=tuple(_whole(v) for v in bfi["scales"]),
            reverse=tuple(_whole(i) for i in bfi["reverse"]),
            categories=categories,
            languages=languages,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DataError(f"{path} is not the LLMPersonality questionnaire file ({exc!r})") from None


def load_bfi(data_dir: Path | None = None) -> OfficialBFI:
    """The official BFI of the data directory."""
    return _load_bfi(questionnaire_path(data_dir))


def template_path(language: str, template: str, data_dir: Path | None = None) -> Path:
    """``prompt_template/<lang>/bfi_<lang>_<t>.txt`` (lower case, as in the repository)."""
    lang = language.lower()
    return data_root(data_dir) / "prompt_template" / lang / f"bfi_{lang}_{template.lower()}.txt"


@lru_cache(maxsize=128)
def _template_body(path: Path) -> str:
    if not path.is_file():
        raise DataError(
            f"template not found: {path}", "check --data-dir, or run `llmpsych data fetch LLMPersonality`"
        )
    try:
        text = read_text(path, "prompt template", MAX_DATA_FILE_BYTES)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded)") from None
    except RecursionError:
        raise DataError(f"{path} is nested too deeply") from None
    parts = TEMPLATE_MARKER.split(text, maxsplit=1)
    if len(parts) < 5:
        raise DataError(f"{path} has no comment-block marker line; it is not a prompt template")
    return parts[-1].strip()


def load_template(language: str, template: str, data_dir: Path | None = None) -> str:
    """The instruction template body with its ``!<INPUT k>!`` placeholders."""
    return _template_body(template_path(language, template, data_dir))


def load_steering(kind: str, data_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """``environment`` / ``personality`` / ``character``: target -> {case number: text}."""
    if kind not in STEERING_FILES:
        raise DataError(f"unknown steering data {kind!r} (expected {', '.join(STEERING_FILES)})")
    raw = _read_json(data_root(data_dir) / "dataset" / STEERING_FILES[kind])
    if not isinstance(raw, dict):
        raise DataError(f"{STEERING_FILES[kind]} must map targets to texts")
    return {str(k): {str(i): str(t) for i, t in v.items()} for k, v in raw.items()}


def data_files(
    data_dir: Path | None = None,
    steering: str | None = None,
    languages: list[str] | None = None,
    templates: list[str] | None = None,
) -> list[Path]:
    """The files a run reads (for the manifest's checksums)."""
    files = [questionnaire_path(data_dir)]
    files += [
        template_path(lang, t, data_dir) for lang in languages or LANGUAGES for t in templates or TEMPLATES
    ]
    if steering in STEERING_FILES:
        files.append(data_root(data_dir) / "dataset" / STEERING_FILES[steering])
    return files


def _read_json(path: Path) -> Any:
    try:
        if not path.exists():
            raise FileNotFoundError(path)
        return parse_json(read_text(path, "JSON data file", MAX_DATA_FILE_BYTES), str(path))
    except FileNotFoundError:
        raise DataError(
            f"file not found: {path}", "check --data-dir, or run `llmpsych data fetch LLMPersonality`"
        ) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded)") from None

"""Game prompts: our built-in wording, or the official v1-v5 templates read from the data directory.

Both kinds use the official template mechanics (spec §4.2): numbered ``!<INPUT k>!`` placeholders, a
variable legend ended by a ``commentblockmarker`` line (official files only) and
``<part>///</part>`` separating the user / assistant / user turns of a round report. Each game passes the
same positional inputs to either kind, so the two are interchangeable.

The official files hold no JSON-format instruction, persona-free CoT wording or result phrases: those lived
in the authors' code, so here they are always written in our own words (a documented deviation).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from ..data.sources import dataset_path
from ..errors import DataError

MARKER = "<{0}>###</{0}>".format("commentblockmarker")
PART = "<part>///</part>"
_PLACEHOLDER = re.compile(r"!<INPUT (\d+)>!")
_BUILTIN_PLACEHOLDER = re.compile(r"@(\d+)")

#: A built-in template: one text, or the (user, assistant, user) turns of a report. Built-in texts write
#: placeholder k as ``@k``; they are turned into the official ``!<INPUT k>!`` form when loaded.
Builtin = str | Sequence[str]

PromptSource = Literal["builtin", "official"]

#: Persona sentences (the paper's three roles), in our own words.
PERSONAS = {
    1: "You like to cooperate and work together with the other players.",
    2: "You care only about your own gain and want as much as you can get.",
    3: "You are an expert in mathematics and game theory.",
}

#: The step-by-step trigger used for chain-of-thought (our wording of the idea).
COT = "Reason through the problem one step at a time before answering."


def echo(**fields: str) -> str:
    """The assistant turn of a report: the player's answer re-rendered as canonical JSON."""
    return json.dumps(fields)


def builtin_template(spec: Builtin) -> str:
    """A built-in template in the official mechanics (``!<INPUT k>!`` placeholders, parts joined)."""
    text = spec if isinstance(spec, str) else f"\n{PART}\n".join(spec)
    return _BUILTIN_PLACEHOLDER.sub(lambda m: f"!<INPUT {m.group(1)}>!", text)


def template_body(text: str) -> str:
    """The part of a template file after the variable legend (the whole text if there is no legend)."""
    return text.split(MARKER, 1)[1] if MARKER in text else text


def fill(template: str, inputs: list[object]) -> str:
    """Replace ``!<INPUT k>!`` with ``inputs[k]``; placeholders without an input are left as they are."""

    def substitute(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return str(inputs[index]) if index < len(inputs) else match.group(0)

    return _PLACEHOLDER.sub(substitute, template)


def split_parts(text: str) -> list[str]:
    """Split a report into its chat turns (user, assistant, user), each stripped."""
    return [part.strip() for part in text.split(PART)]


def official_dir(data_dir: Path | None = None) -> Path:
    """``<data-dir>/GAMABench/prompt_template``."""
    folder = dataset_path("GAMABench", data_dir) / "prompt_template"
    if not folder.is_dir():
        raise DataError(
            f"GAMA-Bench prompt templates not found in {folder}", "run `llmpsych data fetch GAMABench`"
        )
    return folder


def official_template_path(folder: str, kind: str, version: int, data_dir: Path | None = None) -> Path:
    """The official template file of one game, kind (description, report, request, ...) and version."""
    path = official_dir(data_dir) / folder / f"{kind}_v{version}.txt"
    if not path.is_file():
        raise DataError(f"official template {path} not found", "check the GAMABench data folder")
    return path


def format_instruction(fields: Mapping[str, object], cot: str = "") -> str:
    """Ask for a JSON answer with ``fields`` (name -> description of the value), in our own words.

    ``cot`` is a step-by-step trigger sentence; with it, the JSON also asks for the reasoning.
    """
    shape = json.dumps({"explanation": "your_reasoning", **fields} if cot else fields)
    if cot:
        return f"{cot} Write out your reasoning and your answer as a single JSON object like this: {shape}"
    return f"Reply with a single JSON object only, without markdown, like this: {shape}"


class PromptSet:
    """The templates of one game: built-in text or official files of one version."""

    def __init__(
        self,
        folder: str,
        builtin: Mapping[str, Builtin],
        source: PromptSource = "builtin",
        version: int = 1,
        data_dir: Path | None = None,
    ) -> None:
        self.folder = folder
        self.source = source
        self.version = version
        self.data_dir = data_dir
        self._builtin = builtin
        self._cache: dict[str, str] = {}

    def files(self) -> list[Path]:
        """The official files this prompt set reads (none for built-in prompts)."""
        if self.source != "official":
            return []
        return [
            official_template_path(self.folder, kind, self.version, self.data_dir) for kind in self._builtin
        ]

    def template(self, kind: str) -> str:
        """The raw template text of ``kind`` (after the legend)."""
        if kind not in self._cache:
            if self.source == "official":
                path = official_template_path(self.folder, kind, self.version, self.data_dir)
                self._cache[kind] = template_body(path.read_text(encoding="utf-8"))
            else:
                self._cache[kind] = builtin_template(self._builtin[kind])
        return self._cache[kind]

    def parts(self, kind: str, inputs: list[object]) -> list[str]:
        """The filled template split into chat turns."""
        return split_parts(fill(self.template(kind), inputs))

    def text(self, kind: str, inputs: list[object]) -> str:
        """The filled template as one message."""
        return "\n\n".join(p for p in self.parts(kind, inputs) if p)

    def cot(self, index: int | None) -> str:
        """The chain-of-thought trigger (official ``cot_prompts/cot<k>.txt`` or ours); empty when none."""
        if not index:
            return ""
        if self.source == "official":
            path = official_dir(self.data_dir) / "cot_prompts" / f"cot{index}.txt"
            return template_body(path.read_text(encoding="utf-8")).strip()
        return COT

    def persona(self, index: int | None) -> str:
        """The persona sentence (official ``role_prompts/role<k>.txt`` or ours); empty when none."""
        if not index:
            return ""
        if self.source == "official":
            path = official_dir(self.data_dir) / "role_prompts" / f"role{index}.txt"
            return template_body(path.read_text(encoding="utf-8")).strip()
        return PERSONAS[index]

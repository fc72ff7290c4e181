"""Game prompts: our built-in wording, or the official v1-v5 templates read from the data directory.

Both kinds use the official template mechanics (spec §4.2): numbered ``!<INPUT k>!`` placeholders, a
variable legend ended by a ``commentblockmarker`` line (official files only) and
``<part>///</part>`` separating the user / assistant / user turns of a round report. Each game passes the
same positional inputs to either kind, so the two are interchangeable.

The official files hold no JSON-format instruction, persona-free CoT wording or result phrases: those lived
in the authors' code, so here they are always written in our own words (a documented deviation).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ..data.sources import dataset_path
from ..errors import ConfigError, DataError
from ..userfiles import MAX_DATA_FILE_BYTES, parse_json, read_bytes, read_text

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
        texts: dict[str, str] | None = None,
    ) -> None:
        self.folder = folder
        self.source = source
        self.version = version
        self.data_dir = data_dir
        self._builtin = builtin
        self._cache: dict[str, str] = dict(texts or {})  # a template set's texts (checked when loaded)

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
                self._cache[kind] = template_body(read_text(path, "prompt template", MAX_DATA_FILE_BYTES))
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
            return template_body(read_text(path, "prompt template", MAX_DATA_FILE_BYTES)).strip()
        return COT

    def persona(self, index: int | None) -> str:
        """The persona sentence (official ``role_prompts/role<k>.txt`` or ours); empty when none."""
        if not index:
            return ""
        if self.source == "official":
            path = official_dir(self.data_dir) / "role_prompts" / f"role{index}.txt"
            return template_body(read_text(path, "prompt template", MAX_DATA_FILE_BYTES)).strip()
        return PERSONAS[index]


# -- template sets (``gamabench rephrase``) ---------------------------------------------------------------
#: The file a template set folder holds.
TEMPLATE_SET_FILE = "template_set.json"
TEMPLATE_SET_FORMAT = "llmpsych-gamabench-template-set/1"
#: A rephrased text may be at most this long (a game's longest built-in template is about 1,500 chars).
MAX_TEMPLATE_CHARS = 20_000
MAX_TEMPLATE_SET_BYTES = 2_000_000

#: Template syntax a rephrasing must not add: braces (format fields, JSON), printf directives, our ``@k``
#: built-in markers, broken ``INPUT`` markers (the authors' own rephrasing wrote ``<!INPUT 2>!``, spec
#: §4.5) and turn separators. Counted after the valid placeholders are taken out; case matters, so a
#: rewrite may say "input".
_DIRECTIVE = re.compile(r"[{}]|%[-+0-9.]*[sdifrxXeEgGc]|@\d|INPUT|</?part>|!<|>!|///")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def placeholders(text: str) -> Counter[int]:
    """The ``!<INPUT k>!`` indices of ``text`` and how often each occurs."""
    return Counter(int(m) for m in _PLACEHOLDER.findall(text))


def check_rephrased(original: str, candidate: str) -> str | None:
    """Why ``candidate`` cannot replace the template turn ``original`` (None: it can); a turn holds no
    ``<part>`` separator, so one in ``candidate`` is refused as added syntax.

    Every placeholder of the original must survive (each at least once), none may be added, and no
    template syntax the original lacks may appear (:data:`_DIRECTIVE`): model output is hostile.
    """
    if not candidate.strip():
        return "the text is empty"
    if len(candidate) > MAX_TEMPLATE_CHARS:
        return f"the text is {len(candidate):,} characters long (at most {MAX_TEMPLATE_CHARS:,})"
    if _CONTROL.search(candidate):
        return "the text holds control characters"
    want, got = placeholders(original), placeholders(candidate)
    missing = sorted(set(want) - set(got))
    added = sorted(set(got) - set(want))
    if missing:
        return "it drops the placeholder(s) " + ", ".join(f"!<INPUT {k}>!" for k in missing)
    if added:
        return "it adds the placeholder(s) " + ", ".join(f"!<INPUT {k}>!" for k in added)

    def directives(text: str) -> Counter[str]:
        return Counter(m.lower() for m in _DIRECTIVE.findall(_PLACEHOLDER.sub(" ", text)))

    extra = directives(candidate) - directives(original)
    if extra:
        return "it adds template syntax: " + ", ".join(repr(d) for d in sorted(extra))
    return None


def check_template(original: str, candidate: str) -> str | None:
    """Why the whole template ``candidate`` cannot replace ``original``: the same turns (``<part>``
    separators), the assistant turns unchanged, each user turn passing :func:`check_rephrased`."""
    want, got = original.split(PART), candidate.split(PART)
    if len(want) != len(got):
        return f"it has {len(got)} turns, not {len(want)}"
    for index, (old, new) in enumerate(zip(want, got, strict=True)):
        if index % 2 == 1:
            if new.strip() != old.strip():
                return f"turn {index + 1} (the player's answer) was changed"
            continue
        reason = check_rephrased(old, new)
        if reason:
            return f"turn {index + 1}: {reason}" if len(want) > 1 else reason
    return None


def read_template_set(path: Path) -> tuple[dict[str, Any], str]:
    """The mapping of a template set file (or of ``<folder>/template_set.json``) and its sha256."""
    file = path / TEMPLATE_SET_FILE if path.is_dir() else path
    if not file.exists() and not file.is_symlink():
        raise ConfigError(f"template set {path}: {file.name} not found", "make one with `gamabench rephrase`")
    raw = read_bytes(file, "template set", MAX_TEMPLATE_SET_BYTES, error=ConfigError)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"template set {file} is not UTF-8 JSON") from None
    data = parse_json(text, f"template set {file}", error=ConfigError)
    if not isinstance(data, dict) or data.get("format") != TEMPLATE_SET_FORMAT:
        raise ConfigError(f"template set {file}: not a {TEMPLATE_SET_FORMAT} file")
    return data, hashlib.sha256(raw).hexdigest()

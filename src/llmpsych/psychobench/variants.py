"""Prompt variants of the PsychoBench sensitivity experiments: templates, chain-of-thought, assistant role.

* ``template``: ``v1`` is the scale's own prompt from the PsychoBench data file, unchanged. ``v2``-``v5``
  are the other four templates of the thesis's Table 4.9 (000:1329-1351: Miotto et al., Jiang et al. and
  two of Serapio-García et al.); they are the same texts as templates t2-t5 of the authors' LLMPersonality
  repository, so they are read at run time from its files (``prompt_template/en/bfi_en_t2..t5.txt``,
  ``llmpsych data fetch LLMPersonality``), never shipped. Those files end with a line asking for JSON
  answers, which the reliability study used; Table 4.9 has none, and the scale's system prompt asks for
  ``index: score`` lines, so that line is left out. A template's level details need the scale's level
  labels: the BFI's come from the same repository's questionnaire file (its English level texts), a scale
  file's from its ``labels``; other official scales carry theirs only inside their own prompt and are
  refused with ``v2``-``v5``.
* ``cot``: the thesis adds Kojima et al.'s "Let's think step by step" at the beginning (000:1355). With
  ``cot_wording = "thesis"`` (the default) the prompt is Table 4.9's "V1 (Ours) + CoT" (000:1347-1351):
  the instruction sentence the thesis prints (:data:`THESIS_COT`, a fact sent verbatim, cited) before the
  scale's own prompt, whose "score them one by one" becomes "explain and score them one by one", and
  nothing after the statements. ``cot_wording = "llmpsych"`` is our own wording instead (:data:`COT_LEAD`,
  :data:`COT_CLOSING`: reason first, then the scores as ``index: score`` lines), a named alternative.
* ``system_prompt``: ``assistant`` keeps the scale's system prompt as the data file gives it (a
  helpful-assistant role, then the answer range); ``no-assistant`` removes that role and keeps the
  answer-format instruction (the ablation of Table 4.11, 000:1368-1381); ``none`` sends no system
  message at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ConfigError, DataError
from ..instruments.scale import Scale

Template = Literal["v1", "v2", "v3", "v4", "v5"]
SystemPrompt = Literal["assistant", "no-assistant", "none"]
TEMPLATES: tuple[str, ...] = ("v1", "v2", "v3", "v4", "v5")
SYSTEM_PROMPTS: tuple[str, ...] = ("assistant", "no-assistant", "none")

#: Kojima et al.'s trigger phrase, which the thesis puts at the start of the prompt (000:1355).
COT_TRIGGER = "Let's think step by step."
#: The chain-of-thought instruction of "V1 (Ours) + CoT" as the thesis prints it (Table 4.9, 000:1347-1348),
#: Kojima et al.'s trigger extended; sent verbatim with ``cot_wording = "thesis"``.
THESIS_COT = (
    "Let's think step by step on the questions that you see. Please first output your explanation, then "
    "your final choice."
)
#: V1 asks to "score them one by one"; the thesis's V1 + CoT to "explain and score them one by one"
#: (000:1351).
THESIS_COT_ASK = ("score them one by one", "explain and score them one by one")
CotWording = Literal["thesis", "llmpsych"]
#: Our own wording around the trigger (``cot_wording = "llmpsych"``): reason first, then the scores in the
#: form the parser reads.
COT_LEAD = (
    "For each statement below, first write a short explanation of how well it describes you, and only "
    "then decide on your score."
)
COT_CLOSING = (
    "After your explanations, end your reply with the scores, one line per statement in the form "
    '"index: score".'
)

#: The template placeholders of the LLMPersonality files: first level, last level, level details, statements.
_PLACEHOLDERS = ("!<INPUT 0>!", "!<INPUT 1>!", "!<INPUT 2>!", "!<INPUT 3>!")
_ROLE = re.compile(r"^\s*you\s+are\s+an?\s+helpful\s+assistant\b\s*(?P<who>who\s+|that\s+)?[.,;:]?\s*", re.I)


@dataclass(frozen=True)
class UserPrompt:
    """The text before the numbered statements and the text after them (either may be empty)."""

    lead: str
    closing: str = ""


def without_assistant_role(text: str | None, scale: str) -> str:
    """A system prompt with its opening helpful-assistant role (:data:`_ROLE`) removed.

    What follows a "who" clause is kept as a sentence of its own ("You can only reply ..."); a prompt
    without that role is an error naming the scale (removing nothing would not be the ablation).
    """
    match = _ROLE.match(text or "")
    if match is None:
        raise ConfigError(
            f"scale {scale!r}: its system prompt has no helpful-assistant role to remove",
            "use system_prompt none (no system message) or assistant",
        )
    rest = (text or "")[match.end() :].strip()
    if match.group("who") and rest:
        return f"You {rest}"
    return rest[:1].upper() + rest[1:]


def system_prompt(scale: Scale, choice: str) -> str | None:
    """The scale's system prompt under ``choice`` (``assistant``, ``no-assistant`` or ``none``)."""
    if choice == "none":
        return None
    if choice == "no-assistant":
        return without_assistant_role(scale.system_prompt, scale.name)
    return scale.system_prompt


def template_body(template: str, data_dir: Path | None) -> str:
    """A template's text from the LLMPersonality files, without the JSON answer-format line."""
    from ..reliability.official import load_template

    number = TEMPLATES.index(template) + 1
    body = load_template("En", f"t{number}", data_dir)
    lines = [line for line in body.splitlines() if "JSON" not in line]
    if not any(_PLACEHOLDERS[3] in line for line in lines):
        raise DataError(f"LLMPersonality template t{number} has no statements placeholder")
    return "\n".join(lines)


def level_texts(scale: Scale, official: bool, data_dir: Path | None) -> tuple[dict[int, str], str]:
    """(level -> label, the word between them) for a template's level details; ConfigError if none."""
    if scale.level_labels:
        return dict(scale.level_labels), "denotes"
    if official and scale.name.upper() == "BFI":
        from ..reliability.official import load_bfi

        pack = load_bfi(data_dir).pack("En")
        if sorted(pack.level_texts) == list(range(scale.response_min, scale.response_max + 1)):
            return dict(pack.level_texts), pack.denotes
    raise ConfigError(
        f"scale {scale.name!r} has no level labels for templates v2-v5",
        "official scales other than BFI give their level wording only inside their own prompt, which is "
        "template v1; a scale file gives them as labels",
    )


def template_files(template: str, official_bfi: bool, data_dir: Path | None) -> list[Path]:
    """The LLMPersonality files a template reads (for the run manifest's checksums)."""
    if template == "v1":
        return []
    from ..reliability.official import questionnaire_path, template_path

    files = [template_path("En", f"t{TEMPLATES.index(template) + 1}", data_dir)]
    return files + ([questionnaire_path(data_dir)] if official_bfi else [])


def fill(body: str, scale: Scale, texts: dict[int, str], denotes: str) -> UserPrompt:
    """A template filled for ``scale``, split around its statements placeholder."""
    details = ", ".join(f"{level} {denotes} {texts[level]}" for level in sorted(texts))
    for key, value in zip(
        _PLACEHOLDERS[:3], (str(scale.response_min), str(scale.response_max), details), strict=True
    ):
        body = body.replace(key, value)
    lead, _, closing = body.partition(_PLACEHOLDERS[3])
    return UserPrompt(lead.strip(), closing.strip())


def with_cot(prompt: UserPrompt, wording: str = "thesis") -> UserPrompt:
    """The chain-of-thought form of a prompt.

    ``thesis``: :data:`THESIS_COT` first, and the prompt's last "score them one by one" asked as "explain
    and score them one by one" (Table 4.9's V1 + CoT); ``llmpsych``: the trigger phrase and our lead first,
    our closing after the statements.
    """
    if wording == "thesis":
        old, new = THESIS_COT_ASK
        head, found, tail = prompt.lead.rpartition(old)
        lead = head + new + tail if found and not head.endswith("explain and ") else prompt.lead
        return UserPrompt(" ".join(part for part in (THESIS_COT, lead) if part), prompt.closing)
    lead = " ".join(part for part in (COT_TRIGGER, COT_LEAD, prompt.lead) if part)
    closing = "\n\n".join(part for part in (prompt.closing, COT_CLOSING) if part)
    return UserPrompt(lead, closing)


def label(template: str, cot: bool, system: str, cot_wording: str = "thesis") -> str:
    """A short name of the variant for tables: ``v1``, ``v2+CoT``, ``v1+CoT (llmpsych wording)``, ``v1
    w/o assistant``, ..."""
    text = template + ("+CoT" if cot else "")
    if cot and cot_wording != "thesis":
        text += " (llmpsych wording)"
    if system == "no-assistant":
        text += " w/o assistant"
    elif system == "none":
        text += " no system prompt"
    return text

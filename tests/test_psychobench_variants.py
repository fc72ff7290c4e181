"""PsychoBench prompt variants (templates v1-v5, CoT, the assistant role) and the bold/underline marks.

The prompts are built from the official data files at run time (PsychoBench's scales, LLMPersonality's
templates); the tests compare them with those files, never with text written here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from llmpsych.errors import ConfigError, DataError
from llmpsych.instruments.official import load_psychobench_scales
from llmpsych.psychobench.task import PsychoBenchTask
from llmpsych.psychobench.variants import (
    COT_CLOSING,
    COT_TRIGGER,
    THESIS_COT,
    label,
    without_assistant_role,
)
from llmpsych.report.html import markdown_to_html
from llmpsych.report.marks import extremes, marked, underline_html
from llmpsych.runs import parse_run_config


def task(seed_data: Path, **options: object) -> PsychoBenchTask:
    config = {"task": "psychobench", "data_dir": str(seed_data), "options": {"scale": ["BFI"], **options}}
    return PsychoBenchTask(parse_run_config(config))


def template_file(seed_data: Path, number: int) -> str:
    """The body of LLMPersonality's English template ``t<number>`` (after its comment block)."""
    text = (seed_data / "LLMPersonality" / "prompt_template" / "en" / f"bfi_en_t{number}.txt").read_text()
    return text.split("###</commentblockmarker>", 1)[1].strip()


def bfi_levels(seed_data: Path) -> str:
    questionnaire = json.loads((seed_data / "LLMPersonality" / "dataset" / "questionnaires.json").read_text())
    english = questionnaire["BFI"]["questions"]["En"]
    return ", ".join(f"{k} {english['denotes']} {v}" for k, v in sorted(english["scales"].items()))


# -- templates ---------------------------------------------------------------------------------------------
def test_v1_is_the_scales_own_prompt_unchanged(seed_data: Path) -> None:
    t = task(seed_data)
    bfi = t.scales[0]
    prompt = t.user_prompt(bfi)
    assert prompt.lead == bfi.instructions and prompt.closing == ""
    assert t.options.template == "v1" and not t.options.cot and t.options.system_prompt == "assistant"
    assert [p.name for p in t.data_files()] == ["questionnaires.json"]  # v1 reads no LLMPersonality file


@pytest.mark.parametrize("number", [2, 3, 4, 5])
def test_v2_to_v5_are_the_llmpersonality_templates_filled_for_the_bfi(seed_data: Path, number: int) -> None:
    t = task(seed_data, template=f"V{number}")  # any case
    prompt = t.user_prompt(t.scales[0])
    body = template_file(seed_data, number)
    filled = body.replace("!<INPUT 0>!", "1").replace("!<INPUT 1>!", "5")
    filled = filled.replace("!<INPUT 2>!", bfi_levels(seed_data))
    lead, _, closing = filled.partition("!<INPUT 3>!")
    json_line = closing.strip().splitlines()[-1]
    assert "JSON" in json_line  # the file asks for JSON answers; Table 4.9 does not, nor do we
    assert prompt.lead == lead.strip()
    assert prompt.closing == closing.strip().removesuffix(json_line).strip()
    assert "JSON" not in prompt.lead + prompt.closing
    files = {p.relative_to(seed_data).as_posix() for p in t.data_files()}
    assert f"LLMPersonality/prompt_template/en/bfi_en_t{number}.txt" in files
    assert "LLMPersonality/dataset/questionnaires.json" in files  # the BFI's level texts
    if number == 3:  # the statements come first, the instruction after them
        assert prompt.closing and "1 denotes strongly disagree" in prompt.closing


def test_cot_sends_the_sentence_the_thesis_prints(seed_data: Path) -> None:
    # Table 4.9, "V1 (Ours) + CoT" (000:1347-1351): this sentence first, then V1 with "explain and score"
    printed = (
        "Let's think step by step on the questions that you see. Please first output your explanation, "
        "then your final choice."
    )
    assert printed == THESIS_COT
    t = task(seed_data, template="v1", cot=True)
    bfi = t.scales[0]
    prompt = t.user_prompt(bfi)
    own = str(bfi.instructions)
    assert own.endswith("Here are the statements, score them one by one:")
    asked = own.removesuffix("score them one by one:") + "explain and score them one by one:"
    assert prompt.lead == f"{printed} {asked}" and prompt.closing == ""
    assert t.options.cot_wording == "thesis" and label("v1", True, "assistant") == "v1+CoT"
    # the whole request: the system prompt is the scale's, the user turn starts with the sentence
    assert COT_TRIGGER not in prompt.lead.replace(printed, "")


def test_cot_in_llmpsych_wording_puts_the_trigger_first_and_asks_for_scores_last(seed_data: Path) -> None:
    t = task(seed_data, cot=True, cot_wording="llmpsych")
    bfi = t.scales[0]
    prompt = t.user_prompt(bfi)
    assert prompt.lead.startswith(COT_TRIGGER + " ") and prompt.lead.endswith(str(bfi.instructions))
    assert prompt.closing == COT_CLOSING
    assert label("v1", True, "assistant", "llmpsych") == "v1+CoT (llmpsych wording)"
    v3 = task(seed_data, template="v3", cot=True, cot_wording="llmpsych").user_prompt(bfi)
    assert (
        v3.lead.startswith(COT_TRIGGER)
        and v3.closing.endswith(COT_CLOSING)
        and len(v3.closing) > len(COT_CLOSING)
    )


def test_templates_need_level_labels(seed_data: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'LOT-R' has no level labels for templates v2-v5"):
        task(seed_data, scale=["LOT-R"], template="v2")
    own = tmp_path / "mood.yaml"
    own.write_text(
        "name: Mood\nresponse: {min: 1, max: 3, labels: {1: never, 2: sometimes, 3: often}}\nscoring: AVG\n"
        "items:\n  - {index: 1, text: I feel calm.}\n  - {index: 2, text: I feel restless., reverse: true}\n"
        "subscales:\n  - {name: Calm, items: [1, 2]}\n"
    )
    t = task(seed_data, scale=None, scale_files=[str(own)], template="v4")
    prompt = t.user_prompt(t.scales[0])
    assert (
        "from 1 to 3" in prompt.lead
        and "1 denotes never, 2 denotes sometimes, 3 denotes often" in prompt.lead
    )
    assert not any("LLMPersonality/dataset" in str(p) for p in t.data_files())


def test_bad_variant_options_are_one_line_errors(seed_data: Path) -> None:
    with pytest.raises(ConfigError, match="template"):
        task(seed_data, template="v6")
    with pytest.raises(ConfigError, match="cot needs method generate"):
        task(seed_data, cot=True, method="logprob")
    with pytest.raises(ConfigError, match="system_prompt"):
        task(seed_data, system_prompt="friendly")


def test_templates_are_read_from_the_data_folder(tmp_path: Path, seed_data: Path) -> None:
    (tmp_path / "PsychoBench").symlink_to(seed_data / "PsychoBench")  # no LLMPersonality folder
    assert task(tmp_path).scales  # v1 needs none
    with pytest.raises(DataError, match="dataset LLMPersonality not found"):
        task(tmp_path, template="v2")


# -- the assistant role ------------------------------------------------------------------------------------
def test_every_official_system_prompt_loses_only_its_role(seed_data: Path) -> None:
    scales = load_psychobench_scales(seed_data)
    assert len(scales) >= 13
    for scale in scales.values():
        text = str(scale.system_prompt)
        bare = without_assistant_role(text, scale.name)
        assert "assistant" not in bare.lower() and bare.startswith("You ")
        assert text.endswith(bare.removeprefix("You "))  # the answer-format instruction is kept as given
    with pytest.raises(ConfigError, match="no helpful-assistant role"):
        without_assistant_role("Rate each statement from 1 to 5.", "Own")
    assert without_assistant_role("You are a helpful assistant. Answer briefly.", "x") == "Answer briefly."


def test_system_prompt_choices(seed_data: Path) -> None:
    bfi = task(seed_data).scales[0]
    from llmpsych.psychobench.variants import system_prompt

    assert system_prompt(bfi, "assistant") == bfi.system_prompt
    assert system_prompt(bfi, "none") is None
    assert system_prompt(bfi, "no-assistant") == without_assistant_role(bfi.system_prompt, "BFI")
    assert (
        label("v1", False, "assistant") == "v1"
        and label("v2", True, "no-assistant") == "v2+CoT w/o assistant"
    )


# -- marks -------------------------------------------------------------------------------------------------
#: Every mark the text of the thesis's result tables keeps (line, the model columns' means, the marked
#: column, the mark): each is the highest (bold) or lowest (underlined) of the models, never of the crowd.
THESIS_MARKS = [
    (1201, [4.1, 3.8, 1.5, 4.0, 1.2, 4.7], 4, "worst"),  # Table 4.3 DTDD Psychopathy, GPT-4
    (1225, [3.6, 3.0, 2.1, 2.6, 1.9, 2.6], 4, "worst"),  # ICB Overall, GPT-4
    (1315, [131.6, 128.6, 148.4, 132.9, 151.4, 121.8], 5, "worst"),  # Table 4.8 EIS, GPT-4-JB
    (1432, [4.2, 3.7, 4.2, 3.5, 4.5], 3, "worst"),  # Table 4.13 Openness, Ordinary (crowd 3.9 unranked)
    (1441, [19.7, 10.9, 17.7, 18.9, 22.4], 4, "best"),  # Table 4.14 Extraversion, Hero
    (1451, [4.0, 7.3, 5.5, 3.9, 2.6], 4, "worst"),  # DTDD Psychopathy, Hero (the crowd's 2.5 is lower)
    (1555, [4.1, 4.3, 4.6, 4.0, 4.1], 2, "best"),  # Table 4.24 LMS Important, Liar
    (1560, [132.9, 84.8, 126.9, 121.5, 145.1], 1, "worst"),  # Table 4.25 EIS Overall, Psychopath
]


@pytest.mark.parametrize(
    ("line", "row", "column", "mark"), THESIS_MARKS, ids=[str(m[0]) for m in THESIS_MARKS]
)
def test_extremes_mark_what_the_thesis_marks(line: int, row: list[float], column: int, mark: str) -> None:
    assert extremes(row)[column] == mark


def test_extremes_follow_the_thesis_rule() -> None:
    # thesis 000:1201 (DTDD Psychopathy, six model columns): 1.2 (GPT-4) is underlined; 4.7 is the highest
    row = [4.1, 3.8, 1.5, 4.0, 1.2, 4.7]
    assert extremes(row) == {5: "best", 4: "worst"}
    assert extremes(row, "lowest") == {4: "best", 5: "worst"}
    assert extremes([2.0, None, 2.0, math.nan, 1.0]) == {0: "best", 2: "best", 4: "worst"}  # ties, gaps
    assert extremes([3.0, 3.0]) == {} and extremes([None, 1.0]) == {}
    with pytest.raises(ValueError):
        extremes(row, "closest")


def test_marks_render_in_markdown_and_html_and_nothing_else_does(tmp_path: Path) -> None:
    assert marked("4.7 ± 0.8", "best") == "**4.7 ± 0.8**"
    assert marked("1.2 ± 0.4", "worst") == "<ins>1.2 ± 0.4</ins>" and marked("x", None) == "x"
    text = "| a | b |\n|---|---|\n| **4.7** | <ins>1.2</ins> |\n\n<script>alert(1)</script> <b>no</b>\n"
    page = markdown_to_html(text, title="t", base_dir=tmp_path, underline=True)
    assert "<strong>4.7</strong>" in page and "<ins>1.2</ins>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;" in page
    assert "&lt;ins&gt;1.2&lt;/ins&gt;" in markdown_to_html(
        text, title="t", base_dir=tmp_path
    )  # off by default
    assert underline_html("&lt;ins&gt;&lt;/ins&gt;&lt;u&gt;") == "<ins></ins>&lt;u&gt;"


def test_the_web_compare_page_underlines_the_marks(tmp_path: Path) -> None:
    from llmpsych.web.render import folder_fragment

    text = "| a | b |\n|---|---|\n| **4.7** | <ins>1.2</ins> |\n\n<script>x</script>\n"
    fragment = folder_fragment(text, tmp_path, lambda path: None)
    assert "<strong>4.7</strong>" in fragment and "<ins>1.2</ins>" in fragment and "<script>" not in fragment

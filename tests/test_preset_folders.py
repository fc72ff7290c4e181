"""The folder names of every preset's planned runs, pinned: a user who runs a preset again with the same
``--out`` (to resume it, or to add a model) must find the runs of an earlier version of llmpsych where they
left them. A renamed folder would start those runs again from nothing."""

from __future__ import annotations

import pytest

from llmpsych.collab.experiments import PRESETS as MAS_PRESETS
from llmpsych.collab.experiments import expand_preset
from llmpsych.games import presets as games
from llmpsych.psychobench import presets as psychobench

#: Models whose folder names need care: a slash, a colon and a '+', the same model twice, and a name of
#: nothing but white space.
ODD_MODELS = ["openai/gpt-4o", "ollama/llama3:8b+q4", "openai/gpt-4o", "  "]

#: preset -> (model folders, setting folders) of a ``<model>/<setting>`` plan, or the flat run folders.
FOLDERS: dict[str, tuple[list[str], list[str]] | list[str]] = {
    "psychobench templates": (["local_qwen2.5-0.5b"], ["v1", "v2", "v3", "v4", "v5", "v1+CoT"]),
    "psychobench assistant": (["local_qwen2.5-0.5b"], ["assistant", "no-assistant"]),
    "psychobench temperatures": (
        ["local_qwen2.5-0.5b"],
        ["temperature=0", "temperature=0.01", "temperature=0.8"],
    ),
    "psychobench templates, odd models": (
        ["openai_gpt-4o-1", "ollama_llama3_8b+q4", "openai_gpt-4o-3", "x"],
        ["v1", "v2", "v3", "v4", "v5", "v1+CoT"],
    ),
    "gamabench multiple-runs": (["local_qwen2.5-0.5b"], ["default"]),
    "gamabench temperatures": (
        ["local_qwen2.5-0.5b"],
        [
            "temperature=0.0",
            "temperature=0.2",
            "temperature=0.4",
            "temperature=0.6",
            "temperature=0.8",
            "temperature=1.0",
        ],
    ),
    "gamabench prompt-versions": (["local_qwen2.5-0.5b"], ["v1", "v2", "v3", "v4", "v5"]),
    "gamabench reasoning": (
        ["local_qwen2.5-0.5b"],
        ["default", "cot", "cooperative", "selfish", "mathematician"],
    ),
    "gamabench generalisability": (
        ["local_qwen2.5-0.5b"],
        [
            "guessing_ratio=0",
            "guessing_ratio=1_6",
            "guessing_ratio=1_3",
            "guessing_ratio=1_2",
            "guessing_ratio=2_3",
            "guessing_ratio=5_6",
            "guessing_ratio=1",
            "guessing_ratio=7_6",
            "guessing_ratio=4_3",
            "guessing_ratio=3_2",
            "guessing_ratio=5_3",
            "guessing_ratio=11_6",
            "guessing_ratio=2",
            "bar_ratio=0",
            "bar_ratio=20",
            "bar_ratio=40",
            "bar_ratio=60",
            "bar_ratio=80",
            "bar_ratio=100",
            "divide_dollar_golds=50",
            "divide_dollar_golds=100",
            "divide_dollar_golds=200",
            "divide_dollar_golds=400",
            "divide_dollar_golds=800",
            "public_goods_ratio=0.0",
            "public_goods_ratio=0.5",
            "public_goods_ratio=1.0",
            "public_goods_ratio=2.0",
            "public_goods_ratio=4.0",
            "diner_cheap=10_15_costly=20_20",
            "diner_cheap=11_5_costly=20_7",
            "diner_cheap=4_19_costly=9_20",
            "diner_cheap=1_8_costly=19_12",
            "diner_cheap=4_5_costly=17_7",
            "diner_cheap=2_11_costly=8_13",
            "auction_valuations=_0_100",
            "auction_valuations=_0_200",
            "auction_valuations=_0_400",
            "auction_valuations=_0_800",
            "battle_royale_hit_rates=_51_60",
            "battle_royale_hit_rates=_35_80",
            "battle_royale_hit_rates=_10_100",
            "pirate_gold=4",
            "pirate_gold=5",
            "pirate_gold=100",
            "pirate_gold=400",
        ],
    ),
    "gamabench leaderboard": (
        [
            "openai_gpt-3.5-turbo-0613",
            "openai_gpt-3.5-turbo-1106",
            "openai_gpt-3.5-turbo-0125",
            "openai_gpt-4-0125-preview",
            "openai_gpt-4o-2024-08-06",
            "gemini_gemini-1.0-pro",
            "gemini_gemini-1.5-pro",
            "deepinfra_meta-llama_Meta-Llama-3.1-8B-Instruct",
            "deepinfra_meta-llama_Meta-Llama-3.1-70B-Instruct",
            "deepinfra_meta-llama_Meta-Llama-3.1-405B-Instruct",
            "deepinfra_mistralai_Mixtral-8x7B-Instruct-v0.1",
            "deepinfra_mistralai_Mixtral-8x22B-Instruct-v0.1",
            "deepinfra_Qwen_Qwen2-72B-Instruct",
        ],
        ["default"],
    ),
    "gamabench jailbreak": (["local_qwen2.5-0.5b"], ["w_o_jailbreak", "w_jailbreak"]),
    "gamabench opponent-info": (
        ["local_qwen2.5-0.5b"],
        ["no_information", "opponents=smart-ne", "opponents=smart", "opponents=random"],
    ),
    "gamabench fixed-strategies": (
        ["local_qwen2.5-0.5b"],
        [
            "divide_dollar_w_fixed_91",
            "divide_dollar_w_o_fixed",
            "public_goods_w_fixed_0",
            "public_goods_w_o_fixed",
        ],
    ),
    "gamabench reasoning, odd models": (
        ["openai_gpt-4o-1", "ollama_llama3_8b_q4", "openai_gpt-4o-3", "x"],
        ["default", "cot", "cooperative", "selfish", "mathematician"],
    ),
    "mas main": [
        "metagpt_humaneval_none",
        "metagpt_humaneval_autotransform",
        "metagpt_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "selfcollab_humaneval_none",
        "selfcollab_humaneval_autotransform",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "camel_humaneval_none",
        "camel_humaneval_autotransform",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "spp_humaneval_none",
        "spp_humaneval_autotransform",
        "spp_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "mad_humaneval_none",
        "mad_humaneval_autotransform",
        "mad_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "agentverse_humaneval_none",
        "agentverse_humaneval_autotransform",
        "agentverse_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "metagpt_ciar_none",
        "metagpt_ciar_autotransform",
        "metagpt_ciar_autoinject_pe0.2-pm1.0-semantic",
        "camel_ciar_none",
        "camel_ciar_autotransform",
        "camel_ciar_autoinject_pe0.2-pm1.0-semantic",
        "mad_ciar_none",
        "mad_ciar_autotransform",
        "mad_ciar_autoinject_pe0.2-pm1.0-semantic",
        "agentverse_ciar_none",
        "agentverse_ciar_autotransform",
        "agentverse_ciar_autoinject_pe0.2-pm1.0-semantic",
        "metagpt_commonmt_none",
        "metagpt_commonmt_autotransform",
        "metagpt_commonmt_autoinject_pe0.2-pm1.0-semantic",
        "camel_commonmt_none",
        "camel_commonmt_autotransform",
        "camel_commonmt_autoinject_pe0.2-pm1.0-semantic",
        "mad_commonmt_none",
        "mad_commonmt_autotransform",
        "mad_commonmt_autoinject_pe0.2-pm1.0-semantic",
        "agentverse_commonmt_none",
        "agentverse_commonmt_autotransform",
        "agentverse_commonmt_autoinject_pe0.2-pm1.0-semantic",
        "metagpt_faireval_none",
        "metagpt_faireval_autotransform",
        "metagpt_faireval_autoinject_pe0.2-pm1.0-semantic",
        "camel_faireval_none",
        "camel_faireval_autotransform",
        "camel_faireval_autoinject_pe0.2-pm1.0-semantic",
        "mad_faireval_none",
        "mad_faireval_autotransform",
        "mad_faireval_autoinject_pe0.2-pm1.0-semantic",
        "agentverse_faireval_none",
        "agentverse_faireval_autotransform",
        "agentverse_faireval_autoinject_pe0.2-pm1.0-semantic",
    ],
    "mas error-rates": [
        "metagpt_humaneval_none",
        "metagpt_humaneval_autoinject_pe0.2-pm0.2-semantic",
        "metagpt_humaneval_autoinject_pe0.2-pm0.4-semantic",
        "metagpt_humaneval_autoinject_pe0.2-pm0.6-semantic",
        "metagpt_humaneval_autoinject_pe0.4-pm0.2-semantic",
        "metagpt_humaneval_autoinject_pe0.6-pm0.2-semantic",
        "metagpt_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "metagpt_humaneval_autoinject_pe0.4-pm1.0-semantic",
        "metagpt_humaneval_autoinject_pe0.6-pm1.0-semantic",
        "selfcollab_humaneval_none",
        "selfcollab_humaneval_autoinject_pe0.2-pm0.2-semantic",
        "selfcollab_humaneval_autoinject_pe0.2-pm0.4-semantic",
        "selfcollab_humaneval_autoinject_pe0.2-pm0.6-semantic",
        "selfcollab_humaneval_autoinject_pe0.4-pm0.2-semantic",
        "selfcollab_humaneval_autoinject_pe0.6-pm0.2-semantic",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "selfcollab_humaneval_autoinject_pe0.4-pm1.0-semantic",
        "selfcollab_humaneval_autoinject_pe0.6-pm1.0-semantic",
        "camel_humaneval_none",
        "camel_humaneval_autoinject_pe0.2-pm0.2-semantic",
        "camel_humaneval_autoinject_pe0.2-pm0.4-semantic",
        "camel_humaneval_autoinject_pe0.2-pm0.6-semantic",
        "camel_humaneval_autoinject_pe0.4-pm0.2-semantic",
        "camel_humaneval_autoinject_pe0.6-pm0.2-semantic",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "camel_humaneval_autoinject_pe0.4-pm1.0-semantic",
        "camel_humaneval_autoinject_pe0.6-pm1.0-semantic",
        "spp_humaneval_none",
        "spp_humaneval_autoinject_pe0.2-pm0.2-semantic",
        "spp_humaneval_autoinject_pe0.2-pm0.4-semantic",
        "spp_humaneval_autoinject_pe0.2-pm0.6-semantic",
        "spp_humaneval_autoinject_pe0.4-pm0.2-semantic",
        "spp_humaneval_autoinject_pe0.6-pm0.2-semantic",
        "spp_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "spp_humaneval_autoinject_pe0.4-pm1.0-semantic",
        "spp_humaneval_autoinject_pe0.6-pm1.0-semantic",
        "mad_humaneval_none",
        "mad_humaneval_autoinject_pe0.2-pm0.2-semantic",
        "mad_humaneval_autoinject_pe0.2-pm0.4-semantic",
        "mad_humaneval_autoinject_pe0.2-pm0.6-semantic",
        "mad_humaneval_autoinject_pe0.4-pm0.2-semantic",
        "mad_humaneval_autoinject_pe0.6-pm0.2-semantic",
        "mad_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "mad_humaneval_autoinject_pe0.4-pm1.0-semantic",
        "mad_humaneval_autoinject_pe0.6-pm1.0-semantic",
        "agentverse_humaneval_none",
        "agentverse_humaneval_autoinject_pe0.2-pm0.2-semantic",
        "agentverse_humaneval_autoinject_pe0.2-pm0.4-semantic",
        "agentverse_humaneval_autoinject_pe0.2-pm0.6-semantic",
        "agentverse_humaneval_autoinject_pe0.4-pm0.2-semantic",
        "agentverse_humaneval_autoinject_pe0.6-pm0.2-semantic",
        "agentverse_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "agentverse_humaneval_autoinject_pe0.4-pm1.0-semantic",
        "agentverse_humaneval_autoinject_pe0.6-pm1.0-semantic",
    ],
    "mas error-types": [
        "metagpt_humaneval_none",
        "metagpt_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "metagpt_humaneval_autoinject_pe0.2-pm1.0-syntactic",
        "selfcollab_humaneval_none",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-syntactic",
        "camel_humaneval_none",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "camel_humaneval_autoinject_pe0.2-pm1.0-syntactic",
        "spp_humaneval_none",
        "spp_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "spp_humaneval_autoinject_pe0.2-pm1.0-syntactic",
        "mad_humaneval_none",
        "mad_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "mad_humaneval_autoinject_pe0.2-pm1.0-syntactic",
        "agentverse_humaneval_none",
        "agentverse_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "agentverse_humaneval_autoinject_pe0.2-pm1.0-syntactic",
    ],
    "mas defences": [
        "selfcollab_humaneval_none",
        "selfcollab_humaneval_none_challenger",
        "selfcollab_humaneval_none_inspector",
        "selfcollab_humaneval_none_challenger+inspector",
        "selfcollab_humaneval_autotransform",
        "selfcollab_humaneval_autotransform_challenger",
        "selfcollab_humaneval_autotransform_inspector",
        "selfcollab_humaneval_autotransform_challenger+inspector",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic_challenger",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic_inspector",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic_challenger+inspector",
        "camel_humaneval_none",
        "camel_humaneval_none_challenger",
        "camel_humaneval_none_inspector",
        "camel_humaneval_none_challenger+inspector",
        "camel_humaneval_autotransform",
        "camel_humaneval_autotransform_challenger",
        "camel_humaneval_autotransform_inspector",
        "camel_humaneval_autotransform_challenger+inspector",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic_challenger",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic_inspector",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic_challenger+inspector",
    ],
    "mas single-agent": [
        "single_humaneval_none",
        "single_ciar_none",
        "single_commonmt_none",
        "single_faireval_none",
    ],
    "mas distraction": [
        "metagpt_humaneval_none",
        "metagpt_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "metagpt_humaneval_autoinject_pe0.2-pm1.0-semantic_distraction",
        "selfcollab_humaneval_none",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "selfcollab_humaneval_autoinject_pe0.2-pm1.0-semantic_distraction",
        "camel_humaneval_none",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "camel_humaneval_autoinject_pe0.2-pm1.0-semantic_distraction",
        "spp_humaneval_none",
        "spp_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "spp_humaneval_autoinject_pe0.2-pm1.0-semantic_distraction",
        "mad_humaneval_none",
        "mad_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "mad_humaneval_autoinject_pe0.2-pm1.0-semantic_distraction",
        "agentverse_humaneval_none",
        "agentverse_humaneval_autoinject_pe0.2-pm1.0-semantic",
        "agentverse_humaneval_autoinject_pe0.2-pm1.0-semantic_distraction",
    ],
    "mas rounds": ["camel_humaneval50_none", "camel_humaneval50_autoinject_pe0.2-pm1.0-semantic"],
}


def planned(key: str) -> list[str]:
    """The run folders the preset named by ``key`` plans today (default settings unless ``odd models``)."""
    system, rest = key.split(" ", 1)
    name, _, variant = rest.partition(", ")
    models = ODD_MODELS if variant == "odd models" else []
    if system == "psychobench":
        return [
            r.directory
            for r in psychobench.expand(
                psychobench.get_preset(name), psychobench.PresetSettings(models=models)
            )
        ]
    if system == "gamabench":
        return [
            r.directory for r in games.expand(games.get_preset(name), games.PresetSettings(models=models))
        ]
    return [directory for directory, _ in expand_preset(name)]


def test_every_preset_is_pinned() -> None:
    keys = {k.split(", ")[0] for k in FOLDERS}
    assert keys == (
        {f"psychobench {n}" for n in psychobench.PRESETS}
        | {f"gamabench {n}" for n in games.PRESETS}
        | {f"mas {n}" for n in MAS_PRESETS}
    )


@pytest.mark.parametrize("key", list(FOLDERS))
def test_preset_run_folders_keep_their_names(key: str) -> None:
    pinned = FOLDERS[key]
    if isinstance(pinned, tuple):
        models, settings = pinned
        pinned = [f"{m}/{s}" for m in models for s in settings]
    assert planned(key) == pinned

"""The fixed prompts of the embedded-model benchmarks (open-ended, so that answers run to max_tokens)."""

from __future__ import annotations

PROMPTS: list[str] = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain in detail how a hash table works and when it performs badly.",
    "Describe the water cycle to a ten-year-old, step by step.",
    "Write a Python function that merges two sorted lists, and explain it line by line.",
    "List ten ideas for a weekend trip in the mountains and say why each one is fun.",
    "Explain the difference between a process and a thread in an operating system.",
    "Write a letter to a friend describing your favourite book and why they should read it.",
    "Describe how a bicycle works, from the pedals to the wheels.",
]


def messages(prompt: str) -> list[dict[str, str]]:
    """A one-turn chat."""
    return [{"role": "user", "content": prompt}]

"""What ``llmpsych quickstart`` will take on this machine, said before it starts: the calls it makes, the
tokens each reads and writes, and the pace of the embedded model measured now with one short call.

A single range of minutes was wrong by 4-30x on a shared 2-core machine (documented 40 s to 7 min,
measured 28 min at load 6-18), because the time is set by the machine's tokens per second at that moment:
llama.cpp's own timings of one short call give them (prompt and generation separately), and the
quickstart's calls are sized in tokens below, so the estimate is a formula the user can check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .task import QuickstartOptions

#: Prompt tokens of one administration of the demonstration scale (its system prompt, instructions and 8
#: statements in Qwen2.5's chat template), and of the shortest complete answer (``1: 3`` ... ``8: 3``):
#: counted with the default model's tokenizer on the prompts the quickstart sends.
ADMIN_PROMPT_TOKENS = 188
ADMIN_ANSWER_TOKENS = 39
#: The game's first prompt (rules and the request) and what each finished round adds to a seat's
#: conversation besides the seat's own answer (the round's result and the next request); the shortest
#: answer (``{"chosen_number": "33"}``). Same count: 156, 228, 300, 372, 443 tokens in rounds 1-5.
GAME_PROMPT_TOKENS = 156
GAME_ROUND_TOKENS = 64
GAME_ANSWER_TOKENS = 8
#: The probe: a prompt of about this many tokens and this many generated tokens (cost: under a second
#: on an idle 2-core machine; 12-40 s at load 10-18).
PROBE_WORDS = 60
PROBE_TOKENS = 8


@dataclass(frozen=True)
class Pace:
    """Tokens per second the model reads (prompt) and writes (generation), and what measuring cost."""

    prompt_per_s: float
    generated_per_s: float
    probe_s: float


@dataclass(frozen=True)
class CallGroup:
    """Calls of one kind: how many, their mean prompt tokens, and the answer tokens from the shortest
    complete answer (``short``) to the token limit (``limit``)."""

    what: str
    calls: int
    prompt_tokens: float
    short: float
    limit: int


def planned_calls(options: QuickstartOptions) -> list[CallGroup]:
    """The quickstart's calls without re-asks (a re-ask is one more call of the same kind)."""
    groups = [
        CallGroup(
            "administration", options.runs, ADMIN_PROMPT_TOKENS, ADMIN_ANSWER_TOKENS, options.max_tokens
        )
    ]
    if options.game_players:
        rounds = options.game_rounds
        grown = GAME_ROUND_TOKENS + GAME_ANSWER_TOKENS
        mean_prompt = GAME_PROMPT_TOKENS + grown * (rounds - 1) / 2
        calls = options.game_players * rounds
        groups.append(CallGroup("game", calls, mean_prompt, GAME_ANSWER_TOKENS, options.game_max_tokens))
    return groups


def seconds(groups: list[CallGroup], pace: Pace, longest: bool = False) -> float:
    """Seconds for ``groups`` one call after another (one llama.cpp slot), every answer the shortest
    complete one, or (``longest``) every answer running to its token limit."""
    return sum(
        g.calls
        * (g.prompt_tokens / pace.prompt_per_s + (g.limit if longest else g.short) / pace.generated_per_s)
        for g in groups
    )


def _minutes(value: float) -> str:
    return f"{value:.0f} s" if value < 90 else f"{value / 60:.0f} min"


def estimate_lines(groups: list[CallGroup], pace: Pace) -> list[str]:
    """The formula and its result, as ``llmpsych quickstart`` prints them before it starts."""
    calls = sum(g.calls for g in groups)
    prompt = sum(g.calls * g.prompt_tokens for g in groups)
    short = sum(g.calls * g.short for g in groups)
    limit = sum(g.calls * g.limit for g in groups)
    parts = ", ".join(f"{g.calls} {g.what} call(s) of ~{g.prompt_tokens:.0f} prompt tokens" for g in groups)
    low, high = seconds(groups, pace), seconds(groups, pace, longest=True)
    return [
        f"Expected: {calls} model calls ({parts}): ~{prompt:,.0f} prompt tokens and {short:,.0f}-{limit:,} "
        "answer tokens (shortest complete answers to every token limit), plus re-asks.",
        f"This machine now: {pace.prompt_per_s:.1f} prompt and {pace.generated_per_s:.2f} answer tokens/s "
        f"(llama.cpp's timings of one short call, {pace.probe_s:.1f} s), so about {_minutes(low)} to "
        f"{_minutes(high)} at this pace (on a shared machine it changes several-fold within minutes; the "
        "progress bar's ETA follows the real calls).",
    ]


def measure_pace(model: Any) -> Pace | None:  # noqa: ANN401 - an EmbeddedModel (no import: no load here)
    """One short call to the loaded embedded model, after a one-token call that warms it up (the first
    call after loading also pays for reading the weights in); None when llama.cpp gave no timings."""
    import time

    body = {
        "messages": [{"role": "user", "content": "Repeat: " + " ".join(["tokens"] * PROBE_WORDS)}],
        "max_tokens": PROBE_TOKENS,
        "temperature": 0,
        "cache_prompt": False,  # a second quickstart must measure reading, not llama.cpp's prompt cache
    }
    started = time.perf_counter()
    # a first call pages the model's weights in (the run would pay it on its first call): untimed
    model.complete({**body, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})
    timings = model.complete(body).get("timings")
    probe_s = time.perf_counter() - started
    if not isinstance(timings, dict):
        return None
    try:
        prompt, generated = float(timings["prompt_per_second"]), float(timings["predicted_per_second"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (prompt > 0 and generated > 0):
        return None
    return Pace(prompt, generated, probe_s)


def startup_estimate(config: Any) -> list[str]:  # noqa: ANN401 - a RunConfig
    """The lines ``llmpsych quickstart`` prints before its run: for an embedded model, loaded now as the
    run will use it (the run then finds it loaded); nothing for a model behind an endpoint (its pace is
    the server's, not this machine's)."""
    from ..errors import LlmpsychError
    from ..models.catalog import DEFAULT_EMBEDDED_MODEL, model_file
    from ..models.embedded import EmbeddedSettings, load_embedded
    from ..models.retry import FatalRequestError, RetryableError
    from ..models.spec import gguf_path, parse_model_spec
    from ..runs.executors import current
    from .task import QuickstartOptions

    spec = parse_model_spec(config.model)
    executor = current()
    if spec.kind == "http" or executor.kind != "local":  # elsewhere: not this machine's pace
        return []
    path = model_file(spec.model or DEFAULT_EMBEDDED_MODEL) if spec.endpoint == "local" else gguf_path(spec)
    settings = EmbeddedSettings(n_parallel=config.n_parallel, n_threads=executor.threads_per_actor)
    model = load_embedded(path, settings.with_context(spec.ctx))  # the settings the run's client uses
    try:
        pace = measure_pace(model)
    except (LlmpsychError, FatalRequestError, RetryableError):
        pace = None
    if pace is None:
        return ["No time estimate: llama.cpp gave no timings for the measuring call."]
    return estimate_lines(planned_calls(QuickstartOptions.model_validate(config.options)), pace)


__all__ = [
    "CallGroup",
    "Pace",
    "estimate_lines",
    "measure_pace",
    "planned_calls",
    "seconds",
    "startup_estimate",
]

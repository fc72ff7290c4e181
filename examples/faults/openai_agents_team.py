"""A writer + reviewer team in the OpenAI Agents SDK: the writer hands its draft to the reviewer.

Plain openai-agents code: its client takes its address and key from the environment (OPENAI_BASE_URL,
OPENAI_API_KEY, and OPENAI_MODEL for the model name) and speaks chat completions (the SDK's own
setting), so pointing it at llmpsych's fault-injecting endpoint changes nothing in it. Tracing is off:
it would upload the run to the vendor. The task is one JSON line on standard input (its "prompt"); the
final text goes to standard output.
"""

import json
import os
import sys

from agents import Agent, ModelSettings, Runner, set_default_openai_api, set_tracing_disabled

WRITER = "You are the writer of a two-person team. Solve the task; answer with your draft only."
REVIEWER = (
    "You are the reviewer of a two-person team. Check the writer's draft and reply with the final "
    "version only."
)

set_default_openai_api("chat_completions")
set_tracing_disabled(True)
model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
settings = ModelSettings(temperature=0)
writer = Agent(name="writer", instructions=WRITER, model=model, model_settings=settings)
reviewer = Agent(name="reviewer", instructions=REVIEWER, model=model, model_settings=settings)


def solve(task: str) -> str:
    draft = Runner.run_sync(writer, task).final_output
    return str(Runner.run_sync(reviewer, f"Task:\n{task}\n\nDraft:\n{draft}").final_output)


if __name__ == "__main__":
    print(solve(json.loads(sys.stdin.readline())["prompt"]))

"""A writer + reviewer team in AutoGen AgentChat: a round-robin group chat of two assistants.

Plain autogen-agentchat and autogen-ext code: the model client takes its address and key from the
environment (OPENAI_BASE_URL, OPENAI_API_KEY, and OPENAI_MODEL for the model name), so pointing it at
llmpsych's fault-injecting endpoint changes nothing in it. The task is one JSON line on standard input
(its "prompt"); the reviewer's final text goes to standard output.
"""

import asyncio
import json
import os
import sys

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

WRITER = "You are the writer of a two-person team. Solve the task; answer with your draft only."
REVIEWER = (
    "You are the reviewer of a two-person team. Check the writer's draft and reply with the final "
    "version only."
)


async def main(task: str) -> str:
    client = OpenAIChatCompletionClient(
        model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
        temperature=0,
        model_info={
            "vision": False,
            "function_calling": False,
            "json_output": False,
            "family": "unknown",
            "structured_output": False,
        },
    )
    writer = AssistantAgent("writer", model_client=client, system_message=WRITER)
    reviewer = AssistantAgent("reviewer", model_client=client, system_message=REVIEWER)
    # the task, the writer's draft, the reviewer's final version
    team = RoundRobinGroupChat([writer, reviewer], termination_condition=MaxMessageTermination(3))
    result = await team.run(task=task)
    await client.close()
    return str(result.messages[-1].content)


if __name__ == "__main__":
    print(asyncio.run(main(json.loads(sys.stdin.readline())["prompt"])))

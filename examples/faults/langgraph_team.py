"""A writer + reviewer team in LangGraph: the writer drafts, the reviewer returns the final text.

Plain LangGraph and langchain-openai code: it reaches its model only through the OpenAI settings of the
environment (OPENAI_BASE_URL, OPENAI_API_KEY, and OPENAI_MODEL for the model name), so pointing it at
llmpsych's fault-injecting endpoint changes nothing in it. The task is one JSON line on standard input
(its "prompt"); the final text goes to standard output.
"""

import json
import os
import sys
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

WRITER = "You are the writer of a two-person team. Solve the task; answer with your draft only."
REVIEWER = (
    "You are the reviewer of a two-person team. Check the writer's draft and reply with the final "
    "version only."
)


class State(TypedDict):
    task: str
    draft: str
    final: str


llm = ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), temperature=0)


def writer(state: State) -> dict[str, str]:
    reply = llm.invoke([SystemMessage(WRITER), HumanMessage(state["task"])])
    return {"draft": str(reply.content)}


def reviewer(state: State) -> dict[str, str]:
    prompt = f"Task:\n{state['task']}\n\nDraft:\n{state['draft']}"
    reply = llm.invoke([SystemMessage(REVIEWER), HumanMessage(prompt)])
    return {"final": str(reply.content)}


graph = StateGraph(State)
graph.add_node("writer", writer)
graph.add_node("reviewer", reviewer)
graph.add_edge(START, "writer")
graph.add_edge("writer", "reviewer")
graph.add_edge("reviewer", END)
team = graph.compile()

if __name__ == "__main__":
    task = json.loads(sys.stdin.readline())["prompt"]
    print(team.invoke({"task": task, "draft": "", "final": ""})["final"])

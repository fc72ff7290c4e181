"""One agent alone (the thesis's single-agent baseline, Fig. 7.4): the same task, no collaboration.

One model call per item: the agent gets the task and the answer format and its reply is the result. There
is no route and no inter-agent message, so faults and defences do not apply (a run that asks for one is
refused). The thesis prints its single-agent prompts (one per task: the problem, then "output in the
format Answer: ..."); ours are written in our own words in that shape, and reuse the task statements and
answer formats every collaboration system gets, so the baseline differs from the systems only in working
alone.
"""

from __future__ import annotations

from typing import ClassVar

from ..runtime import Agent, Route, Runtime
from ..scoring import extract_code
from .base import ANSWER_FORMAT, System, make_agent

SOLVER = "You are a careful assistant who solves tasks alone and answers in the format asked for."
ASK = "<TASK>\n\n<FORMAT>"


class Single(System):
    """A single agent: the baseline the collaboration systems are compared with."""

    name = "single"
    structure = "single"
    final_agent = "solver"
    default_faulty = "solver"
    takes_faults: ClassVar[bool] = False
    max_rounds = 1
    max_messages = 1

    def agents(self, task: str) -> list[Agent]:
        agent = make_agent("solver", SOLVER, {})
        agent.notes["prompt"] = ASK.replace("<TASK>", task).replace("<FORMAT>", ANSWER_FORMAT[self.kind])
        return [agent]

    def route(self) -> Route:
        return Route.of("single")

    async def collaborate(self, rt: Runtime, task: str) -> str:
        solver = rt.agents["solver"]
        answer = await rt.ask(solver, solver.notes["prompt"])
        rt.events.append({"ended": "single answer"})
        if self.kind == "code" and "```" in answer:
            return extract_code(answer)
        return answer

"""AgentVerse (hierarchical, 4 agents): a role assigner recruits, a solver proposes, a critic checks.

Route ``role_assigner -> solver``, ``solver <-> critic``, ``critic -> evaluator``, ``evaluator -> solver``.
The role assigner describes the experts the solver should act as; each round the solver proposes, the
critic checks (``Correctness: 1`` accepts and restates the final answer, ``0`` sends advice back), and
an accepted answer goes to the evaluator, whose ``Pass: no`` starts another round. ``max_rounds`` = 3.
The thesis does not list the four agents; these are ours. Faulty by default: the solver; final: the critic.
"""

from __future__ import annotations

import re

from ..runtime import Agent, Route, Runtime
from ..scoring import extract_code
from .base import ANSWER_FORMAT, System, make_agent

ASSIGNER = (
    "You lead a group of experts facing this task: <TASK>\nYou may recruit two experts from any field. "
    "Reply with a numbered list of short descriptions of the experts you recruit (roles only, no reasons)."
)
SOLVER = "You are a group of recruited experts who solve this task together: <TASK>\n<FORMAT>"
CRITIC = (
    "You are a careful critic. Experts give you a solution to this task: <TASK>\nCheck it thoroughly. If it "
    "is wrong, write 'Correctness: 0' and advice on how to fix it. If it is right, write 'Correctness: 1' "
    "and then restate the final solution. <FORMAT>"
)
EVALUATOR = (
    "You evaluate the final solution of a team for this task: <TASK>\nReply 'Pass: yes' if it fully solves "
    "the task, else 'Pass: no' and what is missing."
)


class AgentVerse(System):
    """Recruitment, solver-critic decision making, and evaluation."""

    name = "agentverse"
    structure = "hierarchical"
    final_agent = "critic"
    default_faulty = "solver"
    max_rounds = 3
    max_messages = 14

    def agents(self, task: str) -> list[Agent]:
        values = {"TASK": task, "FORMAT": ANSWER_FORMAT[self.kind]}
        return [
            make_agent("role_assigner", ASSIGNER, values),
            make_agent("solver", SOLVER, values),
            make_agent("critic", CRITIC, values),
            make_agent("evaluator", EVALUATOR, values),
        ]

    def route(self) -> Route:
        return Route.of(
            "hierarchical",
            "role_assigner->solver",
            "solver<->critic",
            "critic->evaluator",
            "evaluator->solver",
        )

    async def collaborate(self, rt: Runtime, task: str) -> str:
        a = rt.agents
        roles = await rt.send(
            "role_assigner", "solver", await rt.ask(a["role_assigner"], "Recruit the experts.")
        )
        prompt = f"You act as these experts:\n{await rt.receive(a['solver'], roles)}\n\nSolve the task."
        final: str | None = None
        for round_no in range(1, self.rounds + 1):
            proposal = await rt.send("solver", "critic", await rt.ask(a["solver"], prompt), round_no)
            critique = await rt.ask(a["critic"], f"Solution:\n{await rt.receive(a['critic'], proposal)}")
            final = critique if "```" in critique or "answer" in critique.lower() else None
            if re.search(r"correctness\s*:\s*1", critique, re.I):
                handed = await rt.send("critic", "evaluator", critique, round_no)
                verdict = await rt.ask(
                    a["evaluator"], f"Final solution:\n{await rt.receive(a['evaluator'], handed)}"
                )
                if "pass: no" not in verdict.lower() or round_no == self.rounds:
                    rt.events.append({"ended": f"accepted in round {round_no}"})
                    break
                back = await rt.send("evaluator", "solver", verdict, round_no)
                prompt = (
                    f"The evaluator says:\n{await rt.receive(a['solver'], back)}\n\nImprove the solution."
                )
            else:
                back = await rt.send("critic", "solver", critique, round_no)
                prompt = f"The critic says:\n{await rt.receive(a['solver'], back)}\n\nImprove the solution."
        if final is None:  # the critic's own text has no solution: the solver's last proposal is the result
            final = await rt.result_of("critic", proposal, ANSWER_FORMAT[self.kind])
        return extract_code(final) if self.kind == "code" and "```" in final else final

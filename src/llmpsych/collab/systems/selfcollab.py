"""Self-collaboration (linear, 3 agents, code only): analyst -> coder -> tester, with a real run.

Route ``analyst -> coder -> tester`` and ``tester -> coder`` for the report. The tester runs the code in
the sandbox (the problem's own prompt plus the code, never the hidden tests), as the original system's
external compiler did, and writes a report from the output; if it does not pass, the report goes back
to the coder, at most ``max_rounds`` = 2 rounds. The result is the last code. Faulty by default: the
coder; final: the tester.
"""

from __future__ import annotations

from typing import ClassVar

from ...sandbox import Program
from ..runtime import Agent, Route, Runtime
from ..scoring import extract_code
from .base import ANSWER_FORMAT, System, make_agent

ANALYST = (
    "You are a requirements analyst in a small programming team. For the task below, write a short plan: "
    "break it into subproblems and outline the steps of an algorithm. Do not write code. Task: <TASK>"
)
CODER = (
    "You are a Python developer in a small programming team. You receive a plan from the analyst or a "
    "test report from the tester, and you write (or fix) the code for the task: <TASK>\n<FORMAT>"
)
TESTER = (
    "You are a tester in a small programming team. You receive code together with the output of running "
    "it, and you write a short test report: is the code correct for the task, and what should change? "
    "End with 'Code Test Passed' if it is correct, else 'Code Test Failed'. Task: <TASK>"
)
PASSED = "code test passed"


class SelfCollab(System):
    """Analyst, coder and tester with an executed test run."""

    name = "selfcollab"
    structure = "linear"
    kinds: ClassVar[frozenset[str]] = frozenset({"code"})
    final_agent = "tester"
    default_faulty = "coder"
    max_rounds = 2
    max_messages = 8

    def agents(self, task: str) -> list[Agent]:
        values = {"TASK": task, "FORMAT": ANSWER_FORMAT["code"]}
        return [
            make_agent("analyst", ANALYST, values),
            make_agent("coder", CODER, values),
            make_agent("tester", TESTER, values),
        ]

    def route(self) -> Route:
        return Route.of("linear", "analyst->coder", "coder->tester", "tester->coder")

    async def collaborate(self, rt: Runtime, task: str) -> str:
        analyst, coder, tester = rt.agents["analyst"], rt.agents["coder"], rt.agents["tester"]
        plan = await rt.send("analyst", "coder", await rt.ask(analyst, "Write the plan."))
        prompt = f"Plan:\n{await rt.receive(coder, plan)}\n\nWrite the code."
        for round_no in range(1, self.rounds + 1):
            sent = await rt.send("coder", "tester", await rt.ask(coder, prompt), round_no)
            code = extract_code(sent.content)
            output = await self._execute(rt, task, code)
            report = await rt.ask(
                tester,
                f"Code:\n{await rt.receive(tester, sent)}\n\nThe output of running the code is:\n{output}\n\n"
                "Write your report.",
            )
            if PASSED in report.lower() or round_no == self.rounds:
                break
            back = await rt.send("tester", "coder", report, round_no)
            prompt = f"Test report:\n{await rt.receive(coder, back)}\n\nFix the code."
        return extract_code(await rt.result_of("tester", sent, ANSWER_FORMAT["code"]))

    @staticmethod
    async def _execute(rt: Runtime, task: str, code: str) -> str:
        if rt.sandbox is None:
            return "(no sandbox available)"
        # The program's output goes to the model by design: the sandbox holds nothing secret to print
        # (tests/test_sandbox_attacks.py::test_a_program_cannot_read_planted_secrets).
        result = await rt.sandbox.run(Program("from typing import *\n" + code))
        tail = (result.stdout + "\n" + result.stderr).strip()
        return f"[{result.status}] " + (tail[-1500:] or "(no output)")

"""MetaGPT-style SOP pipeline (linear, 5 agents): a company that hands the task down a fixed line.

Route ``product_manager -> architect -> project_manager -> engineer -> test_engineer`` plus one back edge
``test_engineer -> engineer`` for the review loop (the thesis still counts MetaGPT as linear). The test
engineer reviews each answer and ends with ``LGTM`` or ``LBTM``; on ``LBTM`` the review goes back to the
engineer, at most ``max_rounds`` = 3 reviews. The result is the last answer the test engineer accepted,
or the last one written. The thesis does not name the fifth role: we use MetaGPT's Architect and merge
Reviewer and Test Engineer. Faulty by default: the engineer; final: the test engineer.
"""

from __future__ import annotations

from ..runtime import Agent, Message, Route, Runtime
from ..scoring import extract_code
from .base import ANSWER_FORMAT, System, make_agent

PROFILES: dict[str, str] = {
    "product_manager": "You are the product manager of a small company. You turn a request into clear, "
    "short requirements: what must be delivered and how success is checked. The request: <TASK>",
    "architect": "You are the software and solution architect of a small company. From the requirements "
    "you receive, you write a brief design: the approach, the main steps and the pitfalls to avoid.",
    "project_manager": "You are the project manager of a small company. You turn a design into an "
    "ordered list of concrete work items for the engineer.",
    "engineer": "You are an expert engineer; your goal is to deliver a correct answer to the request: "
    "<TASK>\nUse '##' headings for sections. Write '## Reasoning' (why your answer is right) and then "
    "'## Answer'. <FORMAT>",
    "test_engineer": "You are the test engineer and reviewer of a small company. You check the "
    "engineer's answer against the request: <TASK>\nAsk yourself: does it meet the requirements, is the "
    "logic right, are edge cases handled, are the calculations right, is there any subtle mistake, does "
    "it follow the design? Write '## Review' (numbered points), '## Actions' (fixes, or 'Pass') and "
    "finally '## Review Result: LGTM' if it is correct or '## Review Result: LBTM' if it is not.",
}


class MetaGPT(System):
    """A five-role SOP pipeline with a review loop."""

    name = "metagpt"
    structure = "linear"
    final_agent = "test_engineer"
    default_faulty = "engineer"
    max_rounds = 3
    max_messages = 12

    def agents(self, task: str) -> list[Agent]:
        values = {"TASK": task, "FORMAT": ANSWER_FORMAT[self.kind]}
        return [make_agent(name, profile, values) for name, profile in PROFILES.items()]

    def route(self) -> Route:
        return Route.of(
            "linear",
            "product_manager->architect",
            "architect->project_manager",
            "project_manager->engineer",
            "engineer->test_engineer",
            "test_engineer->engineer",
        )

    async def collaborate(self, rt: Runtime, task: str) -> str:
        a = rt.agents
        req = await rt.send(
            "product_manager", "architect", await rt.ask(a["product_manager"], "Write the requirements.")
        )
        design_text = await rt.ask(
            a["architect"], f"Requirements:\n{await rt.receive(a['architect'], req)}\n\nWrite the design."
        )
        design = await rt.send("architect", "project_manager", design_text)
        plan_text = await rt.ask(
            a["project_manager"],
            f"Design:\n{await rt.receive(a['project_manager'], design)}\n\nList the work items.",
        )
        plan = await rt.send("project_manager", "engineer", plan_text)
        context = f"## Design\n{await rt.receive(a['engineer'], plan)}\n\n## Task\n{task}"
        accepted: Message | None = None
        last: Message | None = None
        for round_no in range(1, self.rounds + 1):
            answer = await rt.send(
                "engineer", "test_engineer", await rt.ask(a["engineer"], context), round_no
            )
            last = answer
            review = await rt.ask(
                a["test_engineer"],
                f"## Engineer's answer\n{await rt.receive(a['test_engineer'], answer)}\n\nReview it.",
            )
            if "LGTM" in review.upper() and "LBTM" not in review.upper():
                accepted = last
                rt.events.append({"ended": f"LGTM in round {round_no}"})
                break
            if round_no == self.rounds or rt.exhausted:
                break
            sent = await rt.send("test_engineer", "engineer", review, round_no)
            evaluation = await rt.receive(a["engineer"], sent)
            context = (
                f"## Legacy results\n{last.content}\n\n## Evaluation results\n{evaluation}\n\n"
                "Fix your answer."
            )
        chosen = accepted or last
        final = (
            "" if chosen is None else await rt.result_of("test_engineer", chosen, ANSWER_FORMAT[self.kind])
        )
        return extract_code(final) if self.kind == "code" and "```" in final else final

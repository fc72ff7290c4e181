"""SPP, solo performance prompting (flat, personas of one model, code only), generated turn by turn.

The original SPP writes the whole multi-persona dialogue in one completion. To intercept the faulty
persona's words, we generate it turn by turn: each persona speaks in turn with the shared dialogue as
context, and each turn is a message to every other persona (route: all ``<->`` all). Personas (our
choice within the paper's 2-5): the AI Assistant (leader, final), the Programmer (faulty by default) and
a Tester. Order per round: assistant plans or integrates, programmer writes code, tester critiques;
``max_rounds`` = 2, then the AI Assistant gives the final answer.
"""

from __future__ import annotations

from typing import ClassVar

from ..runtime import Agent, Message, Route, Runtime
from ..scoring import extract_code
from .base import ANSWER_FORMAT, System, make_agent

PERSONA = (
    "You are one of several personas that a single AI plays to solve a task by talking it through. "
    "Your persona: <PERSONA>. The task: <TASK>\nSpeak only as your persona, briefly."
)
PERSONAS: dict[str, str] = {
    "ai_assistant": "the AI Assistant, who leads the discussion and gives the final answer",
    "programmer": "the Programmer, who writes the Python code",
    "tester": "the Tester, who looks for bugs and missed edge cases",
}


class SPP(System):
    """Leader, programmer and tester personas of one model."""

    name = "spp"
    structure = "flat"
    kinds: ClassVar[frozenset[str]] = frozenset({"code"})
    final_agent = "ai_assistant"
    default_faulty = "programmer"
    max_rounds = 2
    max_messages = 8

    def agents(self, task: str) -> list[Agent]:
        return [make_agent(n, PERSONA, {"PERSONA": p, "TASK": task}) for n, p in PERSONAS.items()]

    def route(self) -> Route:
        return Route.of("flat", "ai_assistant<->programmer", "ai_assistant<->tester", "programmer<->tester")

    async def collaborate(self, rt: Runtime, task: str) -> str:
        dialogue: list[Message] = []

        async def turn(name: str, instruction: str, round_no: int) -> None:
            agent = rt.agents[name]
            received = agent.notes.setdefault("received", {})
            seen = []
            for m in rt.transcript:
                if name in m.receivers and m.index not in received:
                    received[m.index] = await rt.receive(agent, m)
                seen.append(f"{m.sender}: {received.get(m.index, m.content)}")
            prompt = "Dialogue so far:\n" + ("\n\n".join(seen) or "(empty)") + f"\n\n{instruction}"
            others = [n for n in rt.agents if n != name]
            sent = await rt.send(name, others, await rt.ask(agent, prompt, remember=False), round_no)
            dialogue.append(sent)

        for round_no in range(1, self.rounds + 1):
            await turn("ai_assistant", "Plan the next step or integrate the feedback.", round_no)
            await turn("programmer", f"Write or fix the code. {ANSWER_FORMAT['code']}", round_no)
            await turn("tester", "Point out any bug or missed edge case, or say it looks correct.", round_no)
        await turn("ai_assistant", f"Give the final answer. {ANSWER_FORMAT['code']}", self.rounds + 1)
        for message in reversed(dialogue):
            if "```" in message.content:
                text = await rt.result_of("ai_assistant", message, ANSWER_FORMAT["code"])
                return extract_code(text) if "```" in text else text
        return dialogue[-1].content

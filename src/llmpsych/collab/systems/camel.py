"""Camel (flat, 2 agents): a User agent instructs an Assistant agent turn by turn until it is satisfied.

Route ``user <-> assistant``. The User ends the role-play with ``CAMEL_TASK_DONE``; the Assistant's
answer to that message is the result (falling back to its last solution). Limit: ``max_messages`` = 40
messages in all (both agents), as in the reference runs. Faulty by default: the Assistant; final: the
User's acceptance closes the task. Prompts are llmpsych's own, with a step-by-step instruction for maths
and translation as the thesis describes.
"""

from __future__ import annotations

from typing import ClassVar

from ..runtime import Agent, Message, Route, Runtime
from ..scoring import extract_code
from .base import ANSWER_FORMAT, System, make_agent

DONE = "CAMEL_TASK_DONE"

ROLES: dict[str, tuple[str, str]] = {
    "code": ("a Python programmer", "a person who needs a working Python function"),
    "math": ("a mathematics expert", "a task planner who checks mathematical work"),
    "translation": ("a Chinese-to-English translator", "a task planner who checks translations"),
    "texteval": ("an expert in judging text quality", "a task planner who checks evaluations"),
}

ASSISTANT = (
    "You are <ASSISTANT_ROLE>, and you work with me, <USER_ROLE>, on one shared task. Keep to your role "
    "and never give me instructions. The task: <TASK>\n"
    "Instructions will come from me one by one. Answer each with a concrete solution and explain it. "
    "If you cannot carry out an instruction, say so and say why. Start every answer with 'Solution:'. "
    "<EXTRA>"
)
USER = (
    "You are <USER_ROLE>, and you direct me, <ASSISTANT_ROLE>, through one shared task. The task: "
    "<TASK>\n<EXTRA>"
    "Give me exactly one instruction per message, written as 'Instruction: ...' and then 'Input: ...' "
    "(or 'Input: None'). Do not solve the task yourself and do not ask me questions. Check my answers and "
    "ask me to fix anything wrong. When my answers have fully solved the task, reply with "
    f"{DONE} and nothing else."
)
ASSISTANT_EXTRA: dict[str, str] = {
    "code": f"When I write {DONE}, reply with your final code exactly as you last wrote it. "
    + ANSWER_FORMAT["code"],
    "math": f"Work step by step. When I write {DONE}, reply with the final result only. "
    + ANSWER_FORMAT["math"],
    "translation": f"Work step by step. When I write {DONE}, reply with the final translation only. "
    + ANSWER_FORMAT["translation"],
    "texteval": f"When I write {DONE}, combine your earlier judgements into one verdict. "
    + ANSWER_FORMAT["texteval"],
}
USER_EXTRA: dict[str, str] = {
    "code": "",
    "math": "Split the problem into smaller questions and have me answer them one by one. ",
    "translation": "Have me translate the sentence step by step and correct any poor rendering. ",
    "texteval": "Have me compare the responses on criteria you choose, then ask for my final verdict. ",
}
START = "Give me your first instruction."


class Camel(System):
    """User-Assistant role-play."""

    name = "camel"
    structure = "flat"
    final_agent = "user"
    default_faulty = "assistant"
    max_messages: ClassVar[int] = 40

    def agents(self, task: str) -> list[Agent]:
        assistant_role, user_role = ROLES[self.kind]
        common = {"ASSISTANT_ROLE": assistant_role, "USER_ROLE": user_role, "TASK": task}
        return [
            make_agent("user", USER, common | {"EXTRA": USER_EXTRA[self.kind]}),
            make_agent("assistant", ASSISTANT, common | {"EXTRA": ASSISTANT_EXTRA[self.kind]}),
        ]

    def route(self) -> Route:
        return Route.of("flat", "user<->assistant")

    async def collaborate(self, rt: Runtime, task: str) -> str:
        user, assistant = rt.agents["user"], rt.agents["assistant"]
        instruction = await rt.ask(user, START)
        solutions: list[Message] = []
        while True:
            sent = await rt.send("user", "assistant", instruction)
            done = DONE in sent.content
            answer = await rt.ask(assistant, await rt.receive(assistant, sent))
            reply = await rt.send("assistant", "user", answer)
            solutions.append(reply)
            if done or rt.exhausted:
                break
            instruction = await rt.ask(user, await rt.receive(user, reply))
        rt.events.append({"ended": "done" if done else "message limit"})
        chosen = self._result(solutions)
        if chosen is None:
            return ""
        text = await rt.result_of("user", chosen, ANSWER_FORMAT[self.kind])
        if self.kind == "code" and "```" in text:
            return extract_code(text)
        return text

    def _result(self, solutions: list[Message]) -> Message | None:
        """The assistant's last message with a solution (code, or an answer line), else its last one."""
        if self.kind == "code":
            for message in reversed(solutions):
                if "```" in message.content or "def " in message.content:
                    return message
        else:
            for message in reversed(solutions):
                if "answer" in message.content.lower():
                    return message
        return solutions[-1] if solutions else None

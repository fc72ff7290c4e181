"""MAD, multi-agent debate (hierarchical, 3 agents): two debaters argue, a judge decides.

Route ``affirmative <-> negative``, ``affirmative -> judge``, ``negative -> judge``. Each round the
affirmative answers (or answers back), the negative replies, and the judge either closes the debate with
the final answer or lets it go on; after ``max_rounds`` = 3 rounds the judge must give the final answer.
Faulty by default: the first (affirmative) debater (the thesis does not say which); final: the judge.
Prompts are llmpsych's own.
"""

from __future__ import annotations

from ..runtime import Agent, Route, Runtime
from .base import ANSWER_FORMAT, System, make_agent

TOPIC: dict[str, str] = {
    "code": "The subject is the implementation of a Python function: propose your own code and argue for it.",
    "math": "The debate is about the answer to a maths problem. Work out your own answer and defend it.",
    "translation": "The debate is about the best English translation of a Chinese sentence. Propose "
    "your own translation and defend it.",
    "texteval": "The debate is about whose response to a prompt is better, ChatGPT's or Vicuna-13B's. "
    "State your own view and defend it.",
}
DEBATER = (
    "You are <SIDE> in a debate. You need not agree with the other side: the goal is to find the correct "
    "answer together. <TOPIC>\nDebate topic: <TASK>"
)
JUDGE = (
    "You moderate and judge a debate between an affirmative and a negative side. After each round you "
    "decide whether the correct answer is already clear. Debate topic: <TASK>"
)


class MAD(System):
    """Two debaters and a judge."""

    name = "mad"
    structure = "hierarchical"
    final_agent = "judge"
    default_faulty = "affirmative"
    max_rounds = 3
    max_messages = 6

    def agents(self, task: str) -> list[Agent]:
        topic = TOPIC[self.kind]
        return [
            make_agent(
                "affirmative", DEBATER, {"SIDE": "the affirmative side", "TOPIC": topic, "TASK": task}
            ),
            make_agent("negative", DEBATER, {"SIDE": "the negative side", "TOPIC": topic, "TASK": task}),
            make_agent("judge", JUDGE, {"TASK": task}),
        ]

    def route(self) -> Route:
        return Route.of("hierarchical", "affirmative<->negative", "affirmative->judge", "negative->judge")

    async def collaborate(self, rt: Runtime, task: str) -> str:
        aff, neg, judge = rt.agents["affirmative"], rt.agents["negative"], rt.agents["judge"]
        fmt = ANSWER_FORMAT[self.kind]
        last_negative = None
        for round_no in range(1, self.rounds + 1):
            if last_negative is None:
                prompt = f"Give your answer to the topic with your reasons. {fmt}"
            else:
                prompt = (
                    f"The negative side said:\n{await rt.receive(aff, last_negative)}\n\n"
                    f"Answer back and give your (possibly revised) answer. {fmt}"
                )
            a_msg = await rt.send("affirmative", ["negative", "judge"], await rt.ask(aff, prompt), round_no)
            n_prompt = (
                f"The affirmative side said:\n{await rt.receive(neg, a_msg)}\n\n"
                f"Do you agree? Give your own answer and your reasons. {fmt}"
            )
            last_negative = await rt.send(
                "negative", ["affirmative", "judge"], await rt.ask(neg, n_prompt), round_no
            )
            verdict = await rt.ask(
                judge,
                f"Round {round_no}.\nAffirmative:\n{await rt.receive(judge, a_msg)}\n\n"
                f"Negative:\n{await rt.receive(judge, last_negative)}\n\n"
                "If the correct answer is now clear, write 'Decision: final' and then the final answer. "
                f"Otherwise write only 'Decision: continue'. {fmt}",
            )
            if "decision: final" in verdict.lower():
                rt.events.append({"ended": f"judge decided in round {round_no}"})
                return verdict
        rt.events.append({"ended": "round limit"})
        return await rt.ask(judge, f"The debate is over. Give the final answer now. {fmt}")

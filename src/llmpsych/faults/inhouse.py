"""llmpsych's own six MAS-Resilience systems as a study's system: ``--system "python -m
llmpsych.faults.inhouse --system camel"``.

It reads one task row on standard input (a HumanEval row, or any row whose ``task_id``/``id`` names an
item of ``--dataset``), runs that item as ``llmpsych mas run`` runs it (the ``mas`` task, no fault, no
defence: the endpoint in front of it applies the plan) with its model at ``OPENAI_BASE_URL`` (key
``OPENAI_API_KEY``, model name ``OPENAI_MODEL``, default ``scripted``), and prints the system's final
result. The study then scores that result with its scorer (``humaneval`` judges it as ``mas run`` does).

Each agent's request carries llmpsych's headers (:mod:`llmpsych.faults.plan`): the agent's name
(``X-Llmpsych-Agent``), the unit (the item id, ``mas run``'s unit id), the task, the agent's profile
template and values, and ``X-Llmpsych-Hold``: the endpoint answers with the model's own text, which the
agent keeps in its memory (as ``mas run``'s sender keeps what it wrote). When the system sends that reply
as a message, the runner delivers it through the endpoint (the same request again, with
``X-Llmpsych-Deliver`` and the message's index): the endpoint applies AutoInject and the Inspector to it
then, and the other agents receive what it answers. A reply the system keeps to itself (an accepting
review, a judge's verdict) is never delivered, so never changed, as in ``mas run``. Under a plan with
``seed_from = "message"`` the endpoint draws AutoInject as ``mas run`` draws it on the same seed,
AutoTransform rewrites the same template, and the item runs as ``mas run`` runs it (see
``docs/faults-anywhere.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import sys
from typing import Any

from ..collab.runtime import Agent, Message, Runtime
from ..collab.task import MasTask
from ..errors import ConfigError, LlmpsychError
from ..models.chat_context import ChatRequest
from ..models.client import ModelClient, RequestFailed
from ..models.http_backend import HttpBackend
from ..models.retry import FatalRequestError, RetriesExhausted, RetryableError, call_with_retries
from ..models.types import ChatResult, GenerationParams, MalformedReply
from ..models.types import Message as ChatMessage
from ..runs.context import derived_seed
from ..runs.params import merge_params
from ..runs.task import WorkUnit
from .plan import (
    AGENT_HEADER,
    DELIVER_HEADER,
    HOLD_HEADER,
    MESSAGE_HEADER,
    PROFILE_HEADER,
    TASK_HEADER,
    UNIT_HEADER,
)

#: The largest profile header sent (the endpoint's request head is capped at 16 KiB); a larger one is
#: left out, so the endpoint transforms the filled-in profile instead (said on standard error).
MAX_PROFILE_HEADER = 8192


class EndpointContext:
    """The context of one item run against a fault endpoint: each request goes with the unit's header
    (and those its caller adds)."""

    def __init__(
        self, unit_id: str, clients: dict[str, ModelClient], seed: int, run_params: GenerationParams
    ) -> None:
        self._unit_id = unit_id
        self._clients = clients
        self.seed = seed
        self.run_params = run_params

    @property
    def unit_id(self) -> str:
        return self._unit_id

    @property
    def clients(self) -> dict[str, ModelClient]:
        return self._clients

    def rng(self, *labels: Any) -> random.Random:
        return random.Random(derived_seed(self.seed, self._unit_id, *labels))

    async def chat(
        self,
        messages: list[ChatMessage],
        params: GenerationParams | None = None,
        role: str = "subject",
        sample: int | str = 0,
    ) -> ChatResult:
        return (await self.send(messages, params, role, {}))[0]

    async def chat_all(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return list(await asyncio.gather(*(self.chat(m, p, r, s) for m, p, r, s in requests)))

    async def send(
        self,
        messages: list[ChatMessage],
        params: GenerationParams | None,
        role: str,
        headers: dict[str, str],
    ) -> tuple[ChatResult, int | None]:
        """(the reply, the call number of a held reply): the body ``mas run`` would send, sent with the
        unit's header and ``headers``, retried by the client's policy."""
        try:
            client = self._clients[role]
        except KeyError:
            raise ConfigError(f"no model configured for role {role!r}") from None
        backend = client.backend
        if not isinstance(backend, HttpBackend):
            raise ConfigError("the in-house runner reaches its model over HTTP only (OPENAI_BASE_URL)")
        params = merge_params(params, self.run_params, client.overrides)
        payload = client.encode(client.body(messages, params)).encode("utf-8")
        sent = {UNIT_HEADER: self._unit_id, **headers}

        async def attempt() -> tuple[ChatResult, int | None]:
            data = await backend.send_encoded(payload, sent)
            try:
                result = ChatResult.from_response(data)
            except MalformedReply as exc:
                raise RetryableError(f"malformed response: {exc}") from None
            extra = data.get("llmpsych")
            call = extra.get("call") if isinstance(extra, dict) else None
            return result, call if isinstance(call, int) and not isinstance(call, bool) else None

        try:
            answer, _ = await call_with_retries(attempt, client.policy)
        except (RetriesExhausted, FatalRequestError) as exc:
            raise RequestFailed(f"{client.spec}: {exc}") from None
        return answer


def profile_header(agent: Agent) -> str | None:
    """The agent's profile template and values for :data:`~.plan.PROFILE_HEADER` (None if too large)."""
    template = agent.notes.get("template")
    if not isinstance(template, str):
        return None
    data = {"template": template, "values": agent.notes.get("values", {})}
    encoded = base64.b64encode(json.dumps(data, ensure_ascii=True).encode()).decode()
    return encoded if len(encoded) <= MAX_PROFILE_HEADER else None


class EndpointRuntime(Runtime):
    """The runtime of an item behind a fault endpoint: an agent's reply is held at the endpoint, the
    agent remembers it as the model wrote it, and a reply sent as a message is delivered through the
    endpoint, the others receiving what it answers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # agent -> (its own text, the request, the held call's number)
        self._pending: dict[str, tuple[str, list[ChatMessage], int | None]] = {}
        self._oversized: set[str] = set()  # agents whose profile header was too large to send

    def _headers(self, agent: Agent) -> dict[str, str]:
        headers = {AGENT_HEADER: agent.name}
        task = base64.b64encode(self.task_description.encode()).decode()
        if len(task) <= MAX_PROFILE_HEADER:
            headers[TASK_HEADER] = task
        return headers

    async def ask(self, agent: Agent, prompt: str, remember: bool = True) -> str:
        if not isinstance(self.ctx, EndpointContext):
            return await super().ask(agent, prompt, remember)
        messages = [{"role": "system", "content": agent.profile}, *agent.history]
        messages.append({"role": "user", "content": prompt})
        self.llm_calls += 1
        headers = {**self._headers(agent), HOLD_HEADER: "1"}
        if (profile := profile_header(agent)) is not None:
            headers[PROFILE_HEADER] = profile
        elif "template" in agent.notes and agent.name not in self._oversized:
            self._oversized.add(agent.name)
            print(
                f"note: {agent.name}'s profile is too large for the {PROFILE_HEADER} header: AutoTransform "
                "at the endpoint rewrites the filled-in profile, not its template as mas run does",
                file=sys.stderr,
            )
        result, call = await self.ctx.send(messages, self.params, self.role_for(agent.model_role), headers)
        written = result.text
        self.replies.add(written)
        self._pending[agent.name] = (written, messages, call)
        if remember:
            agent.history += [{"role": "user", "content": prompt}, {"role": "assistant", "content": written}]
        return written

    async def send(self, sender: str, receivers: list[str] | str, content: str, round: int = 0) -> Message:
        message = await super().send(sender, receivers, content, round)
        written, request, call = self._pending.pop(sender, ("", [], None))
        if not isinstance(self.ctx, EndpointContext) or call is None or written != content:
            return message  # not an agent's reply as it wrote it: sent as it is
        agent = self.agents[sender]
        headers = {**self._headers(agent), DELIVER_HEADER: str(call), MESSAGE_HEADER: str(message.index)}
        result, _ = await self.ctx.send(request, self.params, self.role_for(agent.model_role), headers)
        if result.text != content:
            message.meta["original"] = content
            message.meta["changed_by"] = "endpoint"
            message.content = result.text
        return message


class InhouseTask(MasTask):
    """The ``mas`` task run behind a fault endpoint: its own runtime, and no score (the study's scorer
    judges the printed result)."""

    runtime_class = EndpointRuntime

    async def score(self, item: Any, result: str) -> dict[str, Any]:
        return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmpsych.faults.inhouse", description=__doc__)
    parser.add_argument(
        "--system", default="camel", help="metagpt, selfcollab, camel, spp, mad or agentverse"
    )
    parser.add_argument("--dataset", default="humaneval50", help="the mas task's dataset")
    parser.add_argument("--seed", type=int, default=0, help="the run seed (mas run's default: 0)")
    parser.add_argument("--data-dir", default=None, help="the data folder (default: LLMPSYCH_DATA_DIR)")
    parser.add_argument("--max-tokens", type=int, default=None, help="maximum tokens per answer")
    args = parser.parse_args(argv)
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        print("error: OPENAI_BASE_URL is not set (the study sets it to its endpoint)", file=sys.stderr)
        return 2
    try:
        row = json.loads(sys.stdin.readline(1 << 24))
        item_id = row.get("task_id", row.get("id"))
    except (ValueError, AttributeError):
        item_id = None
    if not isinstance(item_id, str | int) or isinstance(item_id, bool):
        print("error: standard input holds no task row with a task_id or id", file=sys.stderr)
        return 2
    from ..runs import parse_run_config
    from ..runs.clients import open_clients

    os.environ["LLMPSYCH_API_KEY"] = os.environ.get("OPENAI_API_KEY", "")  # the endpoint's token
    options: dict[str, object] = {"system": args.system, "dataset": args.dataset, "item_ids": [str(item_id)]}
    if args.max_tokens:
        options["max_tokens"] = args.max_tokens
    config_data: dict[str, object] = {
        "task": "mas",
        "model": "openai-compatible/" + os.environ.get("OPENAI_MODEL", "scripted"),
        "base_url": base_url,
        "seed": args.seed,
        "cache": False,
        "options": options,
    }
    if args.data_dir:
        config_data["data_dir"] = args.data_dir
    try:
        config = parse_run_config(config_data)
        task = InhouseTask(config)
        if not task.items:
            print(f"error: item {item_id} is not in {args.dataset}", file=sys.stderr)
            return 1
        clients = open_clients(config, None)
        context = EndpointContext(str(item_id), clients, config.seed, config.params)

        async def run() -> dict[str, Any]:
            try:
                unit = WorkUnit(str(item_id), {"item_id": str(item_id)})
                out: dict[str, Any] = await task.run_unit(unit, context)
                return out
            finally:
                for client in {id(c): c for c in clients.values()}.values():
                    await client.aclose()

        try:
            result = asyncio.run(run())
        finally:
            if task.pool is not None:
                task.pool.close()
    except (LlmpsychError, RequestFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(result["result"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

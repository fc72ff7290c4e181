"""One registry idiom (:mod:`llmpsych.registry`) for tasks, games, multi-agent systems and model backends:
a plugin is one module plus one line, refused where it is registered when it is not what the registry
holds; and a run's model spec is parsed once, then travels as a value to the client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from llmpsych.errors import ConfigError, LlmpsychError
from llmpsych.registry import Registry
from llmpsych.runs import parse_run_config, read_run, start_run
from llmpsych.testing.fault_server import FaultServer

TOY_BACKEND = '''
from typing import Any

from llmpsych.models.backends import ClientOptions
from llmpsych.models.client import ModelClient
from llmpsych.models.retry import RetryPolicy
from llmpsych.models.spec import ModelSpec


class Toy:
    """Answers every request with the number of messages it was sent."""

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        text = f"{len(body['messages'])} message(s) to {body['model']}"
        return {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}

    async def aclose(self) -> None:
        pass


def open_toy(spec: ModelSpec, options: ClientOptions) -> ModelClient:
    policy = RetryPolicy(max_retries=0)
    client = ModelClient(spec, Toy(), "toy:in-process", spec.model, 2, policy, options.cache)
    client.endpoint_info = {"provider": "toy", "endpoint": "in-process", "key_from": None}
    return client
'''


def test_the_four_registries_are_one_idiom() -> None:
    from llmpsych.collab.systems import SYSTEMS
    from llmpsych.games import registry as games
    from llmpsych.models.backends import BACKENDS
    from llmpsych.runs.task import TASKS

    for registry in (TASKS, SYSTEMS, games._GAMES, BACKENDS):
        assert isinstance(registry, Registry)
    assert {"echo", "psychobench"} <= set(TASKS) and {"metagpt", "single"} <= set(SYSTEMS)
    assert set(BACKENDS) == {"http", "embedded"} and "guessing" in games._GAMES


@pytest.mark.parametrize(
    ("what", "register"),
    [
        ("task", lambda: __import__("llmpsych.runs.task").runs.task.register_task("bad", "pathlib:Path")),
        (
            "system",
            lambda: __import__("llmpsych.collab.systems").collab.systems.register_system("bad", "os:sep"),
        ),
        ("game", lambda: __import__("llmpsych.games.registry").games.registry.register("pathlib:Path")),
        (
            "model backend",
            lambda: __import__("llmpsych.models.backends").models.backends.BACKENDS.add("bad", 3),
        ),
    ],
)
def test_a_target_of_the_wrong_kind_is_refused_where_it_is_registered(what: str, register: Any) -> None:
    """A careless plugin author: each registry refuses it at once, in one line naming the registry; on
    main ``register_task`` accepted any target and the run failed later, inside the engine."""
    with pytest.raises(LlmpsychError) as caught:
        register()
    assert str(caught.value).startswith(what) and "\n" not in str(caught.value)


def test_an_unknown_name_lists_the_known_ones() -> None:
    from llmpsych.models.backends import BACKENDS
    from llmpsych.runs.task import task_class

    with pytest.raises(ConfigError, match="unknown task 'nosuch'") as caught:
        task_class("nosuch")
    assert "echo" in (caught.value.hint or "")
    with pytest.raises(ConfigError, match="unknown model backend 'nosuch'"):
        BACKENDS.get("nosuch")


def test_a_model_backend_is_one_file_plus_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``toy_backend.py`` and ``BACKENDS.add("toy", ...)``: ``toy/<model>`` is then a spec, a client and a
    run like any other (its calls stored, its transcripts written)."""
    from llmpsych.models import GenerationParams, open_client
    from llmpsych.models.backends import BACKENDS

    (tmp_path / "toy_backend.py").write_text(TOY_BACKEND, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    BACKENDS.add("toy", "toy_backend:open_toy")
    try:
        client = open_client("toy/tiny")
        reply = asyncio.run(client.complete([{"role": "user", "content": "hi"}], GenerationParams()))
        assert reply.text == "1 message(s) to tiny" and client.spec.kind == "toy"
        config = parse_run_config(
            {"task": "echo", "model": "toy/tiny", "cache": False, "options": {"units": 2}}
        )
        start_run(config, tmp_path / "run", False)
        calls = list(read_run(tmp_path / "run").calls)
        assert len(calls) == 2 and all(c.text == "1 message(s) to tiny" for c in calls)
    finally:
        BACKENDS.remove("toy")


def test_a_runs_model_spec_is_parsed_once_on_its_way_to_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On main the runner parsed a role's spec to plan its URL, again to check the run's URL, and
    ``open_client`` parsed the text a third time; now the parsed value is handed on."""
    import llmpsych.models.client as client_module
    import llmpsych.runs.clients as runner  # the run's clients: runs/clients.py
    from llmpsych.models.spec import parse_model_spec

    parsed: list[str] = []

    def counting(text: str, *args: Any) -> Any:
        parsed.append(text)
        return parse_model_spec(text, *args)

    monkeypatch.setattr(runner, "parse_model_spec", counting)
    monkeypatch.setattr(client_module, "parse_model_spec", counting)
    with FaultServer() as server:
        config = parse_run_config(
            {
                "task": "echo",
                "model": "openai-compatible/m",
                "base_url": server.base_url,
                "models": {"judge": {"model": "openai/gpt-4o-mini", "base_url": server.base_url}},
                "cache": False,
            }
        )
        with pytest.raises(LlmpsychError, match="base_url"):  # openai/ has its own URL: refused, as before
            runner.open_clients(config, None)
        assert parsed == ["openai-compatible/m", "openai/gpt-4o-mini"]
        parsed.clear()
        config = parse_run_config(
            {"task": "echo", "model": "openai-compatible/m", "base_url": server.base_url, "cache": False}
        )
        clients = runner.open_clients(config, None)
        assert parsed == ["openai-compatible/m"] and clients["subject"].spec.text == "openai-compatible/m"
        for client in set(clients.values()):
            asyncio.run(client.aclose())

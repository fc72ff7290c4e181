"""Model specs, endpoint resolution, keys from the environment or the config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmpsych.config import load_user_config
from llmpsych.errors import ConfigError, MissingKeyError, ModelSpecError
from llmpsych.models.spec import parse_model_spec, resolve_endpoint


@pytest.mark.parametrize(
    ("text", "kind", "endpoint", "model"),
    [
        ("openai/gpt-4o-mini", "http", "openai", "gpt-4o-mini"),
        ("openai-compatible/my-model", "http", "openai-compatible", "my-model"),
        ("ollama/llama3.1:8b", "http", "ollama", "llama3.1:8b"),
        (
            "openrouter/meta-llama/llama-3.1-8b-instruct",
            "http",
            "openrouter",
            "meta-llama/llama-3.1-8b-instruct",
        ),
        ("local/qwen2.5-0.5b", "embedded", "local", "qwen2.5-0.5b"),
        ("gguf:/models/x.gguf", "embedded", "gguf", "/models/x.gguf"),
    ],
)
def test_parse_accepted_forms(text: str, kind: str, endpoint: str, model: str) -> None:
    spec = parse_model_spec(text)
    assert (spec.kind, spec.endpoint, spec.model, str(spec)) == (kind, endpoint, model, text)


@pytest.mark.parametrize("text", ["gpt-4", "nonsense/model", "gguf:", "/model", "openai/"])
def test_parse_rejects_unknown_forms(text: str) -> None:
    with pytest.raises(ModelSpecError) as info:
        parse_model_spec(text)
    assert "\n" not in str(info.value)


def test_openai_key_comes_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    endpoint = resolve_endpoint(parse_model_spec("openai/gpt-4o-mini"))
    assert endpoint.api_key.get_secret_value() == "sk-test-123"
    assert "sk-test-123" not in repr(endpoint) and "sk-test-123" not in endpoint.identity


def test_missing_openai_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        resolve_endpoint(parse_model_spec("openai/gpt-4o-mini"))


def test_openai_compatible_needs_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMPSYCH_BASE_URL", raising=False)
    with pytest.raises(ModelSpecError, match="--base-url"):
        resolve_endpoint(parse_model_spec("openai-compatible/m"))
    assert (
        resolve_endpoint(parse_model_spec("openai-compatible/m"), "http://h:1/v1/").base_url
        == "http://h:1/v1"
    )
    monkeypatch.setenv("LLMPSYCH_BASE_URL", "http://env:2/v1")
    assert resolve_endpoint(parse_model_spec("openai-compatible/m")).base_url == "http://env:2/v1"


def test_named_endpoint_from_config_file(user_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_config.write_text(
        '[endpoints.lab]\nbase_url = "http://10.0.0.5:8000/v1"\napi_key_env = "LAB_KEY"\nconcurrency = 7\n'
    )
    monkeypatch.setenv("LAB_KEY", "lab-secret")
    endpoint = resolve_endpoint(parse_model_spec("lab/qwen-72b"))
    assert endpoint.base_url == "http://10.0.0.5:8000/v1"
    assert endpoint.concurrency == 7
    assert endpoint.api_key.get_secret_value() == "lab-secret"
    assert endpoint.model == "qwen-72b"


def test_malformed_config_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[endpoints.lab\nbase_url = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_user_config(bad)
    bad.write_text('[endpoints.lab]\nbase_url = "x"\nconcurrency = -3\n')
    with pytest.raises(ConfigError, match="endpoints.lab.concurrency"):
        load_user_config(bad)

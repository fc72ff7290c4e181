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


def test_a_base_url_reaches_only_endpoints_without_their_own(
    user_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai/, openrouter/, vllm/ and a config-file endpoint with base_url refuse any base URL; a config-file
    endpoint without one takes it, with its key; the key source is named, never the key."""
    from llmpsych.models.spec import accepts_base_url

    user_config.write_text(
        '[endpoints.lab]\nbase_url = "http://10.0.0.5:8000/v1"\napi_key_env = "LAB_KEY"\n'
        '[endpoints.byurl]\napi_key_env = "BYURL_KEY"\n'
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-x")
    monkeypatch.setenv("BYURL_KEY", "by-x")
    for text in ("openai/m", "openrouter/a/b", "vllm/m", "ollama/m", "lab/m"):
        spec = parse_model_spec(text)
        assert not accepts_base_url(spec)
        with pytest.raises(ModelSpecError, match="cannot redirect") as info:
            resolve_endpoint(spec, "http://evil.example/v1")
        assert "\n" not in str(info.value) and "sk-x" not in str(info.value)
    endpoint = resolve_endpoint(parse_model_spec("byurl/m"), "http://mine:1/v1", url_source="--base-url")
    assert endpoint.base_url == "http://mine:1/v1" and endpoint.key_source == "env:BYURL_KEY"
    assert endpoint.describe() == {
        "provider": "byurl",
        "endpoint": "http://mine:1/v1",
        "url": "http://mine:1/v1",
        "url_from": "--base-url",
        "key_from": "env:BYURL_KEY",
    }
    assert resolve_endpoint(parse_model_spec("openai/m")).key_source == "env:OPENAI_API_KEY"
    with pytest.raises(ModelSpecError, match="http"):
        resolve_endpoint(parse_model_spec("openai-compatible/m"), "file:///etc/passwd")


def test_redacted_urls() -> None:
    from llmpsych.models.urls import endpoint_address, redact_url, scrub

    assert redact_url("http://h:1/v1") == "http://h:1/v1"
    assert redact_url("https://u:p@h/v1?api-version=2&access_token=t#frag") == (
        "https://***@h/v1?api-version=2&access_token=***#***"
    )
    assert endpoint_address("https://u:p@H.example/v1/?k=1") == "https://h.example:443/v1"
    assert scrub("key sk-abcdef echoed, sk-abcdef", ["sk-abcdef", "abc"]) == "key *** echoed, ***"


def test_a_config_file_holding_a_key_must_be_private(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[endpoints.lab]\nbase_url = "http://h/v1"\napi_key = "lab-secret-1"\n')
    path.chmod(0o644)
    load_user_config(path)
    err = capsys.readouterr().err
    assert "chmod 600" in err and "644" in err and "lab-secret-1" not in err
    path.chmod(0o600)
    load_user_config(path)
    assert capsys.readouterr().err == ""

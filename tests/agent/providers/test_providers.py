from __future__ import annotations

import pytest

from toolrig.agent.errors import MissingKeyError, RunError
from toolrig.agent.providers import NOT_CONFIGURED, choose_provider, settings_from
from toolrig.config import LlmConfig


@pytest.mark.parametrize(
    ("model", "base_url", "forced", "expected"),
    [
        ("claude-sonnet-4-5", None, "auto", "anthropic"),
        ("anthropic/claude-opus-4-1", None, "auto", "anthropic"),
        ("claude-sonnet-4-5", "http://127.0.0.1:4000/v1", "auto", "openai"),  # a proxy in front of Claude
        ("gpt-4.1", None, "auto", "openai"),
        ("deepseek-chat", "https://api.deepseek.example/v1", "auto", "openai"),
        ("llama3.1", "http://localhost:11434/v1", "auto", "openai"),
        ("my-model", "http://127.0.0.1:9/", "anthropic", "anthropic"),
        ("claude-haiku-4-5", None, "openai", "openai"),
    ],
)
def test_models_go_to_the_provider_users_expect(model: str, base_url: str | None, forced: str, expected: str) -> None:
    assert choose_provider(model, base_url, forced) == expected


def test_a_routers_claude_name_goes_native_under_its_own_name() -> None:
    settings = settings_from(LlmConfig(model="anthropic/claude-sonnet-4-5"), environ={"ANTHROPIC_API_KEY": "k"})
    assert settings.provider == "anthropic" and settings.model == "claude-sonnet-4-5" and settings.api_key == "k"


def test_no_model_is_the_two_line_configuration_hint() -> None:
    with pytest.raises(RunError) as caught:
        settings_from(LlmConfig(), environ={})
    assert caught.value.message == NOT_CONFIGURED and NOT_CONFIGURED.count("\n") == 1


@pytest.mark.parametrize(
    ("config", "variable"),
    [
        (LlmConfig(model="claude-sonnet-4-5"), "ANTHROPIC_API_KEY"),
        (LlmConfig(model="gpt-4.1"), "OPENAI_API_KEY"),
        (
            LlmConfig(
                model="deepseek-chat", base_url="https://api.deepseek.example/v1", api_key_env="DEEPSEEK_API_KEY"
            ),
            "DEEPSEEK_API_KEY",
        ),
    ],
)
def test_a_missing_key_names_the_variable_to_set(config: LlmConfig, variable: str) -> None:
    with pytest.raises(MissingKeyError) as caught:
        settings_from(config, environ={"UNRELATED": "x"})
    assert caught.value.variable == variable
    assert variable in caught.value.message and "\n" not in caught.value.message


def test_local_servers_need_no_key_and_config_keys_win_over_the_environment() -> None:
    local = settings_from(LlmConfig(model="llama3", base_url="http://localhost:11434/v1"), environ={})
    assert local.provider == "openai" and local.api_key
    configured = settings_from(LlmConfig(model="gpt-4.1", api_key="from-config"), environ={"OPENAI_API_KEY": "env"})
    assert configured.api_key == "from-config"
    overridden = settings_from(LlmConfig(model="gpt-4.1"), model="claude-haiku-4-5", environ={"ANTHROPIC_API_KEY": "a"})
    assert overridden.provider == "anthropic" and overridden.model == "claude-haiku-4-5"


def test_the_sdks_base_url_variables_are_read_so_a_local_endpoint_needs_no_key() -> None:
    # The SDK would read OPENAI_BASE_URL on its own; toolrig must see the same endpoint to judge it.
    local = settings_from(LlmConfig(model="qwen"), environ={"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"})
    assert local.base_url == "http://127.0.0.1:8080/v1" and local.api_key
    claude = settings_from(
        LlmConfig(model="claude-sonnet-4-5"),
        environ={"ANTHROPIC_BASE_URL": "http://[::1]:9000", "OPENAI_BASE_URL": "x"},
    )
    assert claude.provider == "anthropic" and claude.base_url == "http://[::1]:9000" and claude.api_key
    configured = settings_from(
        LlmConfig(model="qwen", base_url="http://localhost:1/v1"), environ={"OPENAI_BASE_URL": "http://127.0.0.2/v1"}
    )
    assert configured.base_url == "http://localhost:1/v1"  # config wins over the environment
    with pytest.raises(MissingKeyError):
        settings_from(LlmConfig(model="qwen"), environ={"OPENAI_BASE_URL": "https://api.example.com/v1"})

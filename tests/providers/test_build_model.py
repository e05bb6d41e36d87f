"""build_model per provider, its refusals, fallback assembly, settings merging and the safe error summary."""

from __future__ import annotations

import json

import pytest
from pydantic_ai import exceptions as pai
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.ollama import OllamaModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.openrouter import OpenRouterModel

from agents.providers import ModelConfigurationError, build_model, describe_provider_error, model_settings_for
from agents.spec import ModelSettingsSpec
from tests import factories


def test_each_hosted_provider_builds_its_pydantic_ai_model_with_the_vault_key(org):
    expected = {
        "openai": (OpenAIChatModel, "gpt-test", "https://api.openai.com/v1/"),
        "anthropic": (AnthropicModel, "claude-test", "https://api.anthropic.com"),
        "openrouter": (OpenRouterModel, "openai/gpt-test", "https://openrouter.ai/api/v1/"),
    }
    for provider, (model_class, name, base_url) in expected.items():
        profile = factories.model_profile(org, provider=provider, model=name, api_key=f"sk-{provider}-key-123456")

        model = build_model(profile)

        assert type(model) is model_class
        assert model.model_name == name
        assert model.base_url == base_url
        assert model.client.api_key == f"sk-{provider}-key-123456"


def test_a_model_name_pydantic_ai_refuses_becomes_a_configuration_error(org):
    profile = factories.model_profile(org, provider="openrouter", model="gpt-test", api_key="sk-or-key-0000000000")

    with pytest.raises(ModelConfigurationError) as caught:
        build_model(profile)

    assert caught.value.details == {"field": "model"}
    assert "sk-or-key" not in caught.value.message


def test_ollama_uses_the_profile_base_url_and_needs_no_key(org):
    profile = factories.model_profile(org, provider="ollama", model="llama3.2", base_url="http://ollama.internal:11434/v1")

    model = build_model(profile)

    assert isinstance(model, OllamaModel)
    assert model.base_url == "http://ollama.internal:11434/v1/"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openrouter"])
def test_a_hosted_provider_without_a_key_is_refused_with_a_hint(org, provider):
    profile = factories.model_profile(org, provider=provider, model="m")

    with pytest.raises(ModelConfigurationError) as caught:
        build_model(profile)

    assert caught.value.details == {"field": "secret"}
    assert "Settings → Model profiles" in caught.value.message


def test_an_openai_compatible_profile_without_a_base_url_is_refused(org):
    profile = factories.model_profile(org, provider="openai_compatible", model="m", api_key="sk-x-0000000000000")

    with pytest.raises(ModelConfigurationError) as caught:
        build_model(profile)

    assert caught.value.details == {"field": "base_url"}


def test_a_key_sealed_for_another_organization_is_refused(org, outsider_org):
    foreign = factories.secret(outsider_org, value="sk-foreign-key-00000000")
    profile = factories.model_profile(org, provider="openai", model="m", secret=foreign)

    with pytest.raises(ModelConfigurationError) as caught:
        build_model(profile)

    assert "sk-foreign" not in caught.value.message


def test_fallbacks_are_tried_in_label_order_and_broken_or_foreign_ones_are_skipped(org, outsider_org):
    primary = factories.model_profile(org, provider="demo", label="Primary")
    zulu = factories.model_profile(org, provider="openai", model="zulu", label="Zulu", api_key="sk-zulu-000000000000")
    alpha = factories.model_profile(org, provider="openai", model="alpha", label="Alpha", api_key="sk-alpha-00000000000")
    keyless = factories.model_profile(org, provider="openai", model="keyless", label="Beta")
    foreign = factories.model_profile(outsider_org, provider="demo", model="foreign", label="Foreign")
    primary.fallbacks.add(zulu, alpha, keyless, foreign)

    model = build_model(primary)

    assert isinstance(model, FallbackModel)
    assert [m.model_name for m in model.models] == ["demo", "alpha", "zulu"]


def test_a_profile_without_fallbacks_is_not_wrapped(org):
    assert not isinstance(build_model(factories.model_profile(org, provider="demo")), FallbackModel)


def test_spec_settings_override_the_profile_and_unknown_keys_are_dropped(org):
    profile = factories.model_profile(
        org,
        settings={"temperature": 0.9, "top_p": 0.5, "timeout_secs": 30, "max_retries": 1,
                  "openai_reasoning_effort": "low", "tempreture": 2},
    )

    merged = model_settings_for(profile, ModelSettingsSpec(temperature=0.1, max_tokens=200, timeout_secs=12))

    assert merged == {"temperature": 0.1, "top_p": 0.5, "timeout": 12, "max_retries": 1,
                      "openai_reasoning_effort": "low", "max_tokens": 200}


def test_profile_settings_alone_are_used_without_a_spec(org):
    profile = factories.model_profile(org, settings={"temperature": 0.3})
    assert model_settings_for(profile) == {"temperature": 0.3}


def test_the_error_summary_keeps_type_and_status_but_no_body_url_or_key():
    body = {"error": {"message": "Incorrect API key sk-leaky-000000 for https://x.test/v1?key=sk-leaky-000000"}}
    exc = pai.ModelHTTPError.for_category(pai.ModelAuthenticationError, status_code=401, model_name="m", body=body)

    summary = describe_provider_error(exc)

    assert summary["type"] == type(exc).__name__
    assert summary["status"] == 401
    assert summary["category"] == "authentication"
    assert "sk-leaky" not in json.dumps(summary)
    assert "x.test" not in json.dumps(summary)


def test_an_unknown_exception_is_summarized_by_its_type_only():
    summary = describe_provider_error(ValueError("password=hunter2"))

    assert summary == {"type": "ValueError", "status": None, "category": "error",
                       "message": "The model request failed."}


def test_a_configuration_error_is_summarized_with_its_own_safe_message(org):
    profile = factories.model_profile(org, provider="openai", model="m", label="Main")

    with pytest.raises(ModelConfigurationError) as caught:
        build_model(profile)

    summary = describe_provider_error(caught.value)
    assert summary["category"] == "model_misconfigured"
    assert "needs an API key" in summary["message"]

"""Settings → Models: the key typed in the form is sealed in the vault on save (under models:manage, no trip to
Settings → Secrets, never shown again, not kept when the profile is refused); "Test connection" sends one real
request to a local OpenAI-compatible server speaking the real protocol and shows the provider's model list, or
the provider's refusal in words (a wrong key, an address the operator did not allow) without the key. Viewers,
members and outsiders test nothing and reach nothing."""

from __future__ import annotations

import pytest

from agenticos import vault
from agenticos.models import AuditEvent, Secret
from agents.models import ModelProfile
from tests import factories
from tests.fakes.openai_server import FakeOpenAIServer, Reply, fake_openai  # noqa: F401

pytestmark = pytest.mark.django_db

KEY = "sk-typed-in-the-form-4242"


def create(client, server, **extra):
    data = {"label": "Local", "provider": "openai_compatible", "model": "qwen", "secret_id": "",
            "base_url": server.base_url, "api_key": KEY, **extra}
    return client.post("/settings/models/", data)


def test_a_typed_key_is_sealed_in_the_vault_and_the_profile_is_tested_for_real(client_as, org, builder,
                                                                               fake_openai):  # noqa: F811
    client = client_as(builder, org)
    response = create(client, fake_openai)

    profile = ModelProfile.objects.get(organization=org, label="Local")
    assert response.status_code == 302 and response["Location"] == f"/settings/models/{profile.pk}/"
    secret = Secret.objects.get(pk=profile.secret_id)
    assert secret.name == "Local key" and vault.reveal(secret) == KEY
    assert AuditEvent.objects.filter(organization=org, action="secret.created").count() == 1
    page = client.get(f"/settings/models/{profile.pk}/").content.decode()
    assert KEY not in page and 'name="api_key"' in page

    fake_openai.queue(Reply.text("OK"), route="chat")
    checked = client.post(f"/settings/models/{profile.pk}/test").content.decode()

    assert 'data-check-result="ok"' in checked and "It said: “OK”" in checked
    assert '<option value="fake-model">' in checked  # the provider's model list, for the Model field
    chat = fake_openai.requests_to("chat")
    assert len(chat) == 1 and chat[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in checked


def test_a_refused_key_is_said_in_words_without_the_key(client_as, org, builder, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    with FakeOpenAIServer(api_key="sk-the-right-one") as server:
        profile = factories.model_profile(org, "openai_compatible", "qwen", label="Wrong", base_url=server.base_url,
                                          api_key=KEY)
        html = client_as(builder, org).post(f"/settings/models/{profile.pk}/test").content.decode()
    assert 'data-check-result="failed"' in html and "rejected the API key" in html and "HTTP 401" in html
    assert KEY not in html


def test_an_address_the_operator_did_not_allow_is_refused_before_anything_is_sent(client_as, org, builder,
                                                                                 settings):
    with FakeOpenAIServer() as server:
        settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
        profile = factories.model_profile(org, "openai_compatible", "qwen", label="Inside", base_url=server.base_url)
        html = client_as(builder, org).post(f"/settings/models/{profile.pk}/test").content.decode()
        assert server.requests == []
    assert 'data-check-result="failed"' in html and "address was refused" in html


def test_a_refused_profile_keeps_no_typed_key(client_as, org, builder, fake_openai):  # noqa: F811
    response = create(client_as(builder, org), fake_openai, model="")
    assert response.status_code == 422
    assert not Secret.objects.filter(organization=org).exists() and not ModelProfile.objects.exists()


def test_a_new_key_typed_on_the_edit_form_replaces_the_chosen_one(client_as, org, builder, fake_openai):  # noqa: F811
    old = factories.secret(org, name="old key", value="sk-old-0000")
    profile = factories.model_profile(org, "openai_compatible", "qwen", label="Local", base_url=fake_openai.base_url,
                                      secret=old)
    response = client_as(builder, org).post(f"/settings/models/{profile.pk}/", {
        "label": "Local", "provider": "openai_compatible", "model": "qwen", "secret_id": str(old.pk),
        "base_url": fake_openai.base_url, "context_window": "", "api_key": KEY})
    assert response.status_code == 302
    profile.refresh_from_db()
    assert profile.secret_id != old.pk and vault.reveal(profile.secret) == KEY


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_weaker_roles_test_nothing_and_seal_nothing(client_as, org, fake_openai, role):  # noqa: F811
    person = factories.member(org, role)
    profile = factories.model_profile(org, "openai_compatible", "qwen", label="Local", base_url=fake_openai.base_url)
    client = client_as(person, org)
    assert client.post(f"/settings/models/{profile.pk}/test").status_code == 403
    assert create(client, fake_openai, label="Mine").status_code == 403
    assert fake_openai.requests == [] and not Secret.objects.filter(organization=org).exists()


def test_an_outsider_gets_404_and_nothing_is_sent(client_as, org, outsider, outsider_org, fake_openai):  # noqa: F811
    profile = factories.model_profile(org, "openai_compatible", "qwen", label="Local", base_url=fake_openai.base_url)
    client = client_as(outsider, outsider_org)
    assert client.post(f"/settings/models/{profile.pk}/test").status_code == 404
    assert client.get(f"/settings/models/{profile.pk}/test", follow=True).status_code == 404
    assert fake_openai.requests == []

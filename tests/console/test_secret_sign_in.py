"""Settings → Secrets with a Codex ChatGPT sign-in (issue 46 §4): a paste that is not one is refused at its field
with the reason, on create and on rotate, and nothing is saved or changed; the page never shows the value."""

from __future__ import annotations

import json

from django.urls import reverse

from agenticos import vault
from agenticos.models import Secret
from tests.fakes.openai_responses_sse import jwt

GOOD = json.dumps({"tokens": {"id_token": jwt({"email": "me@example.com"}), "access_token": "at-page-0001",
                              "refresh_token": "rt-page-never-shown-0002", "account_id": "acct-1"}})


def test_the_secrets_page_refuses_a_paste_that_is_not_a_sign_in_and_never_shows_one(org, owner, client_as, viewer):
    client = client_as(owner, org)
    url = reverse("console:settings-secrets")
    refused = client.post(url, {"name": "mine", "kind": "codex_chatgpt", "value": '{"OPENAI_API_KEY": "sk-x"}'})
    assert refused.status_code == 422
    assert "holds an API key, not a ChatGPT sign-in" in refused.content.decode()
    assert not Secret.objects.filter(name="mine").exists()

    made = client.post(url, {"name": "mine", "kind": "codex_chatgpt", "value": GOOD})
    assert made.status_code == 302
    secret = Secret.objects.get(name="mine", organization=org)
    page = client.get(url).content.decode()
    assert "Codex ChatGPT sign-in" in page and "rt-page-never-shown" not in page and "at-page-0001" not in page

    rotate = reverse("console:settings-secret-rotate", args=[secret.pk])
    after = client.post(rotate, {"value": "not json"}, follow=True).content.decode()
    assert "This is not JSON" in after and "not json" not in after.split("This is not JSON")[0][-50:]
    assert vault.reveal(Secret.objects.get(pk=secret.pk)) == GOOD
    # A viewer may not rotate it.
    assert client_as(viewer, org).post(rotate, {"value": GOOD}).status_code == 403

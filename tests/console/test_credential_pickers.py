"""Internals stay out of forms (issue 44 §8): credential pickers offer only secrets of the kind the field needs — never
an embed's JWT secret, never the deployment's sandbox service token — and that token is not a secret anyone deletes or
rotates from Settings → Secrets (nor through the API). Another organization's secrets are never offered."""

from __future__ import annotations

import pytest

from agenticos.models import Secret, SecretKind
from agenticos.services import pickable_secrets
from tests import factories
from tests.runner.conftest import actor_of
from workspaces import connections

TOKEN = "deployment-sandbox-token-0123456789abcdef"


@pytest.fixture
def secrets_of_every_kind(org, outsider_org, settings):
    settings.SANDBOXD_URL = "http://127.0.0.1:8765"
    settings.SANDBOXD_TOKEN = TOKEN
    deployment = connections.ensure_default(org)
    assert deployment is not None and deployment.secret_id is not None
    made = {kind: factories.secret(org, f"a {kind}", kind=kind) for kind in SecretKind.values}
    foreign = factories.secret(outsider_org, "theirs")
    return deployment.secret, made, foreign


def test_pickers_never_offer_the_sandbox_token_a_jwt_secret_or_another_organizations_secret(
    org, owner, builder, viewer, secrets_of_every_kind
):
    token, made, foreign = secrets_of_every_kind
    for user in (owner, builder, viewer):  # every role that may use secrets sees the same offer
        offered = set(pickable_secrets(actor_of(user, org)).values_list("pk", flat=True))
        assert token.pk not in offered and foreign.pk not in offered
        assert made[SecretKind.JWT_SECRET].pk not in offered
        assert made[SecretKind.API_KEY].pk in offered and made[SecretKind.BOT_TOKEN].pk in offered


def test_the_model_key_picker_offers_api_keys_only(org, owner, client_as, secrets_of_every_kind):
    token, made, _ = secrets_of_every_kind
    page = client_as(owner, org).get("/settings/models/").content.decode()
    assert made[SecretKind.API_KEY].name in page and made[SecretKind.CUSTOM].name in page
    for kind in (SecretKind.JWT_SECRET, SecretKind.BOT_TOKEN, SecretKind.DATABASE_DSN, SecretKind.AWS_CREDENTIALS):
        assert f'value="{made[kind].pk}"' not in page, kind
    assert f'value="{token.pk}"' not in page and connections.DEPLOYMENT_SECRET_NAME not in page


def test_the_sandbox_token_is_listed_as_the_deployments_and_cannot_be_deleted_or_rotated(
    org, owner, client_as, api_as, secrets_of_every_kind
):
    token, _, _ = secrets_of_every_kind
    page = client_as(owner, org).get("/settings/secrets/").content.decode()
    assert "data-managed-by-deployment" in page
    assert f"/settings/secrets/{token.pk}/delete" not in page and f"/settings/secrets/{token.pk}/rotate" not in page

    client = client_as(owner, org)
    client.post(f"/settings/secrets/{token.pk}/delete")
    client.post(f"/settings/secrets/{token.pk}/rotate", {"value": "something-else-entirely-1234"})
    refused = api_as(owner, org).delete(f"/api/v1/secrets/{token.pk}")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "managed_by_deployment"
    kept = Secret.objects.get(pk=token.pk)
    assert kept.rotated_at is None
    from agenticos import vault

    assert vault.reveal(kept) == connections.tenant_token(TOKEN, org)


def test_a_chatgpt_sign_in_is_offered_to_the_coding_agent_only(org, owner, secrets_of_every_kind):
    """A Codex ChatGPT sign-in is a person's subscription: no picker offers it unasked, and the Builder lists it on
    the coding agent's card (beside API keys), on no other card."""
    from console.builder import _capability_cards

    _, made, foreign = secrets_of_every_kind
    sign_in = made[SecretKind.CODEX_CHATGPT]
    actor = actor_of(owner, org)
    assert sign_in.pk not in set(pickable_secrets(actor).values_list("pk", flat=True))
    cards = {card["id"]: card for card in _capability_cards(actor, {"capabilities": []}, {})}
    coding = {s.pk for s in cards["coding_agent"]["secrets"]}
    assert sign_in.pk in coding and made[SecretKind.API_KEY].pk in coding and foreign.pk not in coding
    assert made[SecretKind.JWT_SECRET].pk not in coding
    others = [cap for cap, card in cards.items() if cap != "coding_agent"
              and sign_in.pk in {s.pk for s in card["secrets"]}]
    assert others == []

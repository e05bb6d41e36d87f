"""An embedding profile's base URL goes through the outbound guard on every request (allowance
MODEL_ALLOWED_PRIVATE_HOSTS, the one model profiles use): the address is checked and the connection made to the
checked address, so the profile's key never reaches a metadata or an unlisted private address."""

from __future__ import annotations

import pytest

from knowledge import embeddings
from tests import factories
from tests.fakes.openai_server import fake_openai  # noqa: F401  (fixture)

KEY = "sk-embedding-key-0123456789"
NAME = "embeddings.example.test"


def _profile(org, base_url: str):
    """Written straight to the database, as one saved before the guard existed would be."""
    return factories.model_profile(org, "openai_compatible", "text-embedding-3-small", kind="embedding",
                                   api_key=KEY, base_url=base_url)


@pytest.mark.django_db
@pytest.mark.parametrize("answer", [["169.254.169.254"], ["93.184.216.34", "fd00:ec2::254"]])
def test_a_name_resolving_to_a_metadata_address_never_gets_the_key(org, fake_openai, settings, dns, answer):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME, "127.0.0.1"]  # even listed: metadata is never reached
    dns[NAME] = answer
    profile = _profile(org, f"http://{NAME}:{fake_openai.port}/v1")
    with pytest.raises(embeddings.EmbeddingError, match="metadata") as caught:
        embeddings.embed(profile, ["hello"])
    assert KEY not in str(caught.value)
    assert fake_openai.requests == []


@pytest.mark.django_db
def test_an_unlisted_private_address_is_refused_with_the_setting_in_the_operators_hint_only(org, fake_openai, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    profile = _profile(org, fake_openai.base_url)  # http://127.0.0.1:…/v1
    with pytest.raises(embeddings.EmbeddingError) as caught:
        embeddings.embed(profile, ["hello"])
    # The message reaches the Knowledge page's members; the setting's name is in the hint, for the operator.
    assert "private or local address" in str(caught.value)
    assert "MODEL_ALLOWED_PRIVATE_HOSTS" not in str(caught.value)
    assert f"127.0.0.1:{fake_openai.port} to MODEL_ALLOWED_PRIVATE_HOSTS" in caught.value.hint
    assert fake_openai.requests == []


@pytest.mark.django_db
def test_a_listed_name_is_reached_at_the_address_the_guard_checked(org, fake_openai, settings, dns):
    """The name resolves only in the guard's table: the request arrives because it went to the pinned address,
    with the name kept in the Host header."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME]
    dns[NAME] = ["127.0.0.1"]
    profile = _profile(org, f"http://{NAME}:{fake_openai.port}/v1")
    result = embeddings.embed(profile, ["hello", "world"])
    assert len(result.vectors) == 2
    (request,) = fake_openai.requests_to("embeddings")
    assert request.bearer == KEY and request.headers["host"] == f"{NAME}:{fake_openai.port}"

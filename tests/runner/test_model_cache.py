"""A worker reuses the model (and its OpenAI client and connections) it built for a profile row — and never
across organizations, across an edited profile or a rotated key: those are built afresh on the next run."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agents.runner import assembly
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-live-first-key-1234567890"
ROTATED = "sk-live-rotated-key-0987654321"


def loaded(profile):
    """The profile as a run loads it (one statement, its key's row with it)."""
    run = SimpleNamespace(organization_id=profile.organization_id)
    return assembly.model_profile(run, SimpleNamespace(model_profile_id=str(profile.pk)))  # type: ignore[arg-type]


def compatible(org, **kw):
    return factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                   base_url="http://127.0.0.1:9/v1", **kw)


def test_runs_of_one_profile_share_its_model_and_client(org):
    profile = compatible(org)
    first, second = assembly.build_model(loaded(profile)), assembly.build_model(loaded(profile))
    assert first is second
    assert first.client.api_key == KEY


def test_another_organizations_profile_never_gets_this_ones_model(org, outsider_org):
    mine = compatible(org)
    theirs = factories.model_profile(outsider_org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                     base_url="http://127.0.0.1:9/v1", label=mine.label)
    assert assembly.build_model(loaded(mine)) is not assembly.build_model(loaded(theirs))
    # And a run of the outsider naming this organization's profile finds nothing to build at all.
    with pytest.raises(assembly.AssemblyError):
        assembly.model_profile(SimpleNamespace(organization_id=outsider_org.pk),  # type: ignore[arg-type]
                               SimpleNamespace(model_profile_id=str(mine.pk)))  # type: ignore[arg-type]


def test_an_edited_profile_is_built_afresh(org):
    profile = compatible(org)
    before = assembly.build_model(loaded(profile))
    profile.base_url = "http://127.0.0.1:10/v1"
    profile.save()
    moved = assembly.build_model(loaded(profile))
    assert moved is not before and "127.0.0.1:10" in str(moved.client.base_url)
    profile.settings = {"temperature": 0.1}
    profile.save()
    assert assembly.build_model(loaded(profile)) is not moved


def test_a_rotated_key_is_built_afresh_and_never_served_again(org, owner):
    from agenticos.services import rotate_secret

    profile = compatible(org)
    before = assembly.build_model(loaded(profile))
    rotate_secret(actor=actor_of(owner, org), secret=profile.secret, value=ROTATED)
    after = assembly.build_model(loaded(profile))
    assert after is not before
    assert after.client.api_key == ROTATED
    assert assembly.build_model(loaded(profile)) is after


def test_profiles_with_fallbacks_and_the_demo_model_are_built_per_run(org):
    primary, backup = compatible(org), compatible(org)
    primary.fallbacks.add(backup)
    assert assembly.build_model(loaded(primary)) is not assembly.build_model(loaded(primary))
    demo = factories.model_profile(org)
    assert assembly.build_model(loaded(demo)) is not assembly.build_model(loaded(demo))


def test_a_run_after_rotation_sends_the_new_key_through_the_reused_path(org, owner, fake_openai):
    from agenticos.services import rotate_secret
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Cached", spec={
        "name": "Cached", "model_profile_id": str(profile.pk)})
    version = services.publish_agent(actor=actor, agent=agent)
    fake_openai.queue(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    run_now(start(org, owner, agent, version, prompt="first"))
    run_now(start(org, owner, agent, version, prompt="second"))
    rotate_secret(actor=actor, secret=profile.secret, value=ROTATED)
    run_now(start(org, owner, agent, version, prompt="third"))
    assert [r.bearer for r in fake_openai.chat_requests] == [KEY, KEY, ROTATED]

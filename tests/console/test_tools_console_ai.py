"""Tools → AI tool builder in the console: a session is a chat over the same `builder.say` as the API; the
scripted builder model (pydantic-ai FunctionModel) researches, configures, tests for real against the local
fake REST API, attaches notes and finalizes; the page shows the conversation and the Kit Guide (drafts, states,
flags, test previews, samples) with no secret. Start over, a kit by hand, a re-test, finalize refusals; viewers
see and never change; outsiders get 404."""

from __future__ import annotations

import pytest

from agents.models import Run
from agents.runner import execute
from agents.runner.frames import CollectingSink
from capabilities.custom_tools import services
from capabilities.models import CustomTool, ToolBuilderSession, ToolDraft, ToolKit
from tests import factories
from tests.fakes.rest_api import FakeRestAPI
from tests.tools.conftest import tool_capabilities  # noqa: F401
from tests.tools.test_ai_builder import scripted_builder

AI = "/tools/ai/"


@pytest.fixture
def rest_api(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "web:fetch"]
    server = FakeRestAPI().start()
    yield server
    server.stop()


def page(session) -> str:
    return f"{AI}{session.pk}/"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("tool_capabilities")
def test_a_builder_chats_with_the_ai_builder_and_the_kit_guide_shows_the_built_kit(
        client_as, org, builder, rest_api, monkeypatch):
    factories.model_profile(org)
    secret = factories.secret(org, name="crm key", value=rest_api.secret)
    model, steps = scripted_builder(rest_api.base, str(secret.pk))
    monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: model)
    client = client_as(builder, org)

    created = client.post(AI, {"title": "CRM tools"})
    session = ToolBuilderSession.objects.get(organization=org)
    assert created.status_code == 302 and created["Location"] == page(session)
    said = client.post(f"{page(session)}say", {"prompt": "Build create/get/list contact tools for FakeCRM"})
    assert said.status_code == 302
    session.refresh_from_db()
    run = Run.objects.get(conversation_id=session.conversation_id)
    execute(str(run.pk), CollectingSink())
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert steps[-1] == "finalize_kit"

    html = client.get(page(session)).content.decode()
    assert "Build create/get/list contact tools for FakeCRM" in html and 'data-message-role="assistant"' in html
    kit = ToolKit.objects.get(session=session)
    assert f'data-kit="{kit.pk}"' in html and 'data-kit-status="finalized"' in html and "crm key" in html
    assert html.count('data-draft-state="created"') == 3 and 'data-flag="info"' in html and "Paginated: pass page=N" in html
    assert "A created contact" in html  # the sample output the builder attached
    assert rest_api.secret not in html
    assert CustomTool.objects.filter(organization=org, kit_name=kit.name).count() == 3


@pytest.fixture
def session(db, org, builder):
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership

    actor = actor_for_membership(Membership.objects.get(user=builder, organization=org))
    return services.create_session(actor=actor, title="By hand"), actor


@pytest.mark.django_db
def test_a_kit_by_hand_a_real_retest_and_finalize_only_when_every_draft_passed(client_as, org, builder, session,
                                                                                rest_api):
    row, actor = session
    secret = factories.secret(org, name="crm key", value=rest_api.secret)
    client = client_as(builder, org)
    assert client.post(f"{page(row)}kits", {"name": "Echo kit", "provider": "Echo",
                                            "credential_id": str(secret.pk)}).status_code == 302
    kit = ToolKit.objects.get(session=row)
    draft = services.add_draft(actor=actor, kit=kit, name="Whoami")
    refused = client.post(f"{AI}kits/{kit.pk}/finalize")
    assert refused.status_code == 409 and "Whoami" in refused.content.decode()
    services.configure_draft(actor=actor, draft=draft, definition={
        "name": "Whoami", "alias": "whoami", "url": f"{rest_api.base}/auth/bearer",
        "auth": {"family": "header"}})

    tested = client.post(f"{AI}drafts/{draft.pk}/test", {"args": "{}"})

    assert tested.status_code == 302
    assert rest_api.requests[-1].headers["Authorization"] == f"Bearer {rest_api.secret}"
    draft.refresh_from_db()
    assert draft.state == ToolDraft.State.VALIDATED
    html = client.get(page(row)).content.decode()
    assert 'data-draft-state="validated"' in html and "data-draft-test" in html and rest_api.secret not in html
    assert client.post(f"{AI}kits/{kit.pk}/finalize").status_code == 302
    assert CustomTool.objects.get(organization=org).alias == "whoami"


@pytest.mark.django_db
def test_a_big_answer_shows_its_compact_preview_and_the_full_response_apart(client_as, org, builder, session,
                                                                           rest_api):
    row, actor = session
    kit = services.create_kit(actor=actor, session=row, name="Big kit")
    draft = services.add_draft(actor=actor, kit=kit, name="Big")
    services.configure_draft(actor=actor, draft=draft, definition={
        "name": "Big", "alias": "big", "url": f"{rest_api.base}/big",
        "parameters": [{"name": "kb", "location": "query", "type": "integer", "mode": "fixed", "value": 8}]})
    client = client_as(builder, org)
    assert client.post(f"{AI}drafts/{draft.pk}/test", {"args": ""}).status_code == 302
    draft.refresh_from_db()
    assert len(draft.test_full) > len(draft.test_preview)
    html = client.get(page(row)).content.decode()
    assert "data-draft-full" in html and 'data-draft-state="validated"' in html


@pytest.mark.django_db
def test_start_over_drops_open_kits(client_as, org, builder, session):
    row, actor = session
    services.create_kit(actor=actor, session=row, name="Open kit")
    assert client_as(builder, org).post(f"{page(row)}restart").status_code == 302
    assert not ToolKit.objects.filter(session=row).exists()


@pytest.mark.django_db
def test_an_empty_message_is_refused_without_a_run(client_as, org, builder, session):
    row, _actor = session
    response = client_as(builder, org).post(f"{page(row)}say", {"prompt": "  "})
    assert response.status_code == 422 and not Run.objects.exists()


@pytest.mark.django_db
def test_a_viewer_reads_a_session_and_cannot_change_it(client_as, org, viewer, session):
    row, actor = session
    kit = services.create_kit(actor=actor, session=row, name="Open kit")
    client = client_as(viewer, org)
    html = client.get(page(row)).content.decode()
    assert "data-read-only" in html and "data-say" not in html and "data-finalize" not in html
    assert client.post(AI, {"title": "x"}).status_code == 403
    assert client.post(f"{page(row)}say", {"prompt": "build"}).status_code == 403
    assert client.post(f"{page(row)}restart").status_code == 403
    assert client.post(f"{AI}kits/{kit.pk}/finalize").status_code == 403
    assert ToolBuilderSession.objects.count() == 1 and ToolKit.objects.filter(pk=kit.pk).exists()
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_an_outsider_gets_404_for_the_session_its_kits_and_drafts(client_as, org, outsider_org, outsider, session):
    row, actor = session
    kit = services.create_kit(actor=actor, session=row, name="Open kit")
    draft = services.add_draft(actor=actor, kit=kit, name="Whoami")
    client = client_as(outsider, outsider_org)
    assert "By hand" not in client.get(AI).content.decode()
    assert client.get(page(row)).status_code == 404
    assert client.post(f"{page(row)}say", {"prompt": "build"}).status_code == 404
    assert client.post(f"{page(row)}restart").status_code == 404
    assert client.post(f"{AI}kits/{kit.pk}/finalize").status_code == 404
    assert client.post(f"{AI}drafts/{draft.pk}/test", {"args": "{}"}).status_code == 404
    assert ToolKit.objects.filter(pk=kit.pk, status="open").exists() and not Run.objects.exists()


@pytest.mark.django_db
def test_a_turn_ending_while_the_page_is_drawn_leaves_the_answer_or_a_refresh(client_as, org, builder, session):
    """The runner ends a turn — its answer and its status — in one statement, which can land between the
    page's reads. Whichever read comes first, the page must show the answer or refresh to fetch it: a page with
    neither waits for nothing (fc25's failure of the builder's browser test)."""
    from django.db import connection

    from agents.models import Message

    row, _actor = session
    factories.model_profile(org)
    client = client_as(builder, org)
    assert client.post(f"{page(row)}say", {"prompt": "Tools for our CRM"}).status_code == 302
    run = Run.objects.get(organization=org)
    ended = []

    def end_the_turn_after_the_first_read(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        reads_transcript = 'FROM "agents_message"' in sql or ('FROM "agents_run"' in sql and '"status" IN' in sql)
        if reads_transcript and not ended:
            ended.append(sql)
            Message.objects.create(conversation_id=run.conversation_id, run=run, version=run.version,
                                   role="assistant", content="Which provider do you need?")
            Run.objects.filter(pk=run.pk).update(status="completed")
        return result

    with connection.execute_wrapper(end_the_turn_after_the_first_read):
        html = client.get(page(row)).content.decode()
    assert ended, "the page read neither the messages nor the runs"
    assert 'data-busy="true"' in html or "Which provider do you need?" in html

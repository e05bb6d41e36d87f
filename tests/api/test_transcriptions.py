"""POST /api/v1/transcriptions (the chat composer's microphone): a recording becomes text through the channel
bots' transcription call (media.transcription) against the local fake OpenAI server — the organization's
speech-to-text profile pays, the agent's and the organization's caps are checked before anything is sent, the
ledger records it for the agent. A viewer, an API key without the run scope, another organization, a private agent
the person holds no grant on: refused, nothing sent, nothing spent. No profile, several and none chosen, a used-up
budget and the service's failure are said in words."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from agenticos import services as kernel
from agents import services as agents
from agents.models import ChatSettings, ModelProfile
from governance.models import SpendEntry
from media import transcription
from tests import factories
from tests.api.conftest import actor_of, make_agent
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

URL = "/api/v1/transcriptions"
AUDIO = b"\x1aE\xdf\xa3 fake webm bytes of a recording"
KEY = "sk-speech-key-0123456789abcdef"


@pytest.fixture
def speech(org, fake_openai) -> ModelProfile:
    return factories.model_profile(org, "openai_compatible", "whisper-1", label="Speech", api_key=KEY,
                                   base_url=fake_openai.base_url, kind=ModelProfile.Kind.TRANSCRIPTION)


def send(client, agent_id, data: bytes = AUDIO):
    return client.post(URL, {"agent_id": str(agent_id),
                             "file": SimpleUploadedFile("recording.webm", data, content_type="audio/webm")},
                       format="multipart")


def test_a_member_gets_the_text_of_their_recording_and_the_agent_pays_for_it(api_as, org, member, published_agent,
                                                                             speech, fake_openai):
    fake_openai.queue(Reply.text("what is the weather in Lisbon"), route="transcriptions")
    response = send(api_as(member, org), published_agent.pk)
    assert response.status_code == 200, response.content
    assert response.json() == {"text": "what is the weather in Lisbon"}
    (request,) = fake_openai.requests_to("transcriptions")
    assert request.bearer == KEY
    assert request.form["model"] == "whisper-1"
    assert request.form["file"]["size"] == len(AUDIO)
    entry = SpendEntry.objects.get(kind="transcription")
    assert (entry.organization_id, entry.agent_id, entry.run_id, entry.surface) == (org.pk, published_agent.pk,
                                                                                   None, "web")
    assert KEY not in response.content.decode()


@pytest.mark.parametrize("who", ["viewer", "outsider", "key without run scope"])
def test_who_may_not_run_agents_is_refused_and_nothing_is_sent(who, request, api_as, org, owner, outsider_org,
                                                              published_agent, speech, fake_openai):
    if who == "viewer":
        client, wanted = api_as(request.getfixturevalue("viewer"), org), 403
    elif who == "outsider":
        client, wanted = api_as(request.getfixturevalue("outsider"), outsider_org), 404
    else:
        _row, raw = kernel.create_api_key(actor=actor_of(owner, org), name="ci", scope="read")
        client, wanted = APIClient(), 403
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    response = send(client, published_agent.pk)
    assert response.status_code == wanted
    assert "error" in response.json()
    assert fake_openai.requests == []
    assert not SpendEntry.objects.exists()


def test_a_run_key_transcribes(org, owner, published_agent, speech, fake_openai):
    fake_openai.queue(Reply.text("hello"), route="transcriptions")
    _row, raw = kernel.create_api_key(actor=actor_of(owner, org), name="ci", scope="run")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert send(client, published_agent.pk).json() == {"text": "hello"}


def test_another_organizations_agent_or_a_private_one_without_a_grant_is_not_found(api_as, org, owner, member,
                                                                                   outsider, outsider_org,
                                                                                   demo_profile, published_agent,
                                                                                   speech, fake_openai):
    private = make_agent(owner, org, name="Private", slug="private", visibility="private", profile=demo_profile)
    agents.publish_agent(actor=actor_of(owner, org), agent=private)
    theirs = factories.published_agent(outsider_org, outsider, name="Theirs")
    client = api_as(member, org)
    for agent_id, status in ((private.pk, 404), (theirs.pk, 404), ("not-a-uuid", 400)):
        response = send(client, agent_id)
        assert response.status_code == status, response.content
        assert response.json()["error"]["code"] == {404: "not_found", 400: "bad_request"}[status]
    assert fake_openai.requests == []
    assert not SpendEntry.objects.exists()


def test_without_a_speech_to_text_profile_the_person_is_told_and_nothing_is_sent(api_as, org, member,
                                                                                 published_agent, fake_openai):
    factories.model_profile(org, "openai", "gpt-4o", api_key=KEY, base_url=fake_openai.base_url)  # a chat one
    response = send(api_as(member, org), published_agent.pk)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "not_configured"
    assert "Speech to text model profile" in error["message"]
    assert fake_openai.requests == []


def test_with_two_profiles_the_one_chosen_in_chat_settings_pays(api_as, org, owner, member, published_agent,
                                                                speech, fake_openai):
    other = factories.model_profile(org, "openai_compatible", "whisper-large-v3", label="Other",
                                    api_key="sk-other-speech-key-0000000000", base_url=fake_openai.base_url,
                                    kind=ModelProfile.Kind.TRANSCRIPTION)
    client = api_as(member, org)
    refused = send(client, published_agent.pk)
    assert refused.status_code == 409 and "Settings → Chat" in refused.json()["error"]["message"]
    assert fake_openai.requests == []
    transcription.choose_chat_profile(actor=actor_of(owner, org), profile_id=str(other.pk))
    assert ChatSettings.objects.get(organization=org).voice_profile_id == other.pk
    fake_openai.queue(Reply.text("chosen"), route="transcriptions")
    assert send(client, published_agent.pk).json() == {"text": "chosen"}
    assert fake_openai.requests_to("transcriptions")[0].bearer == "sk-other-speech-key-0000000000"


def test_only_an_admin_chooses_and_only_a_speech_profile_of_the_organization(org, owner, member, outsider_org):
    theirs = factories.model_profile(outsider_org, "openai", "whisper-1", kind=ModelProfile.Kind.TRANSCRIPTION)
    chat = factories.model_profile(org, "openai", "gpt-4o")
    from agenticos.errors import DomainError

    with pytest.raises(DomainError):
        transcription.choose_chat_profile(actor=actor_of(member, org), profile_id="")
    for refused in (theirs, chat):
        with pytest.raises(DomainError):
            transcription.choose_chat_profile(actor=actor_of(owner, org), profile_id=str(refused.pk))
    assert not ChatSettings.objects.filter(voice_profile__isnull=False).exists()


def test_a_used_up_budget_refuses_before_the_recording_is_sent(api_as, org, member, published_agent, speech,
                                                              fake_openai):
    org.monthly_budget_usd = Decimal("1.00")
    org.save(update_fields=["monthly_budget_usd"])
    SpendEntry.objects.create(organization=org, agent=published_agent, kind="run", model="demo",
                              cost_usd=Decimal("5.00"))
    response = send(api_as(member, org), published_agent.pk)
    assert response.status_code == 402
    assert response.json()["error"]["code"] == "budget_exceeded"
    assert fake_openai.requests == []
    assert not SpendEntry.objects.filter(kind="transcription").exists()


def test_the_services_failure_and_an_empty_recording_are_said(api_as, org, member, published_agent, speech,
                                                             fake_openai):
    client = api_as(member, org)
    fake_openai.queue(Reply.error(500), route="transcriptions")
    failed = send(client, published_agent.pk)
    assert failed.status_code == 502
    assert failed.json()["error"] == {"code": "transcription_failed", "details": {},
                                      "message": "The transcription service refused the recording (500)."}
    empty = send(client, published_agent.pk, data=b"")
    assert empty.status_code == 400, empty.content  # the client's to fix: never a 502 that says "try again"
    assert empty.json()["error"] == {"code": "bad_request", "message": "The recording is empty.",
                                     "details": {"field": "file"}}
    assert len(fake_openai.requests_to("transcriptions")) == 1
    assert not SpendEntry.objects.filter(kind="transcription").exists()

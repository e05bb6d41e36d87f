"""`generate_video` (capability video_generation) through a real pydantic-ai Agent against a local fake of
Google's inline video answer, BytePlus' task API and xAI's video API with their storage host: quota first,
then the budget asked with the clip's price, then the provider (submitted, polled, downloaded without the key),
the ledger and the generated-media store. A slow job times out, is cancelled where the provider allows, and is
recorded at its estimate. Each refusal is proven by what did not happen."""

from __future__ import annotations

import base64
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.core.files.storage import default_storage
from pydantic import ValidationError

from agents.models import RunStatus
from agents.spec import AgentSpec
from capabilities import registry
from capabilities.video_generation import capability as video
from capabilities.video_generation import catalog
from capabilities.video_generation.capability import CAPABILITY, VideoGenerationConfig
from governance.models import SpendEntry
from media import store
from media.models import GeneratedMedia
from tests import factories
from tests.capabilities.helpers import Script, agent_for, deps, run
from tests.fakes.openai_responses import SMALL_PNG
from tests.fakes.video_server import SECRET_TEXT, SMALL_MP4, FakeVideoServer, Job, fake_video  # noqa: F401
from tests.governance.helpers import conversation, run_in
from workspaces import store as workspaces

pytestmark = pytest.mark.django_db(transaction=True)

KEY = FakeVideoServer.api_key
BYTEPLUS = {"provider": "byteplus", "model": "seedance-1-0-pro-250528"}
XAI = {"provider": "xai", "model": "grok-imagine-video"}
ALIBABA = {"provider": "alibaba", "model": "wan2.5-t2v-preview"}
KEY_HEADERS = ("authorization", "x-goog-api-key", "xi-api-key")


@pytest.fixture(autouse=True)
def _registered(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    monkeypatch.setattr(video, "POLL_SECONDS", 0)
    added = registry.find(CAPABILITY.id) is None
    if added:
        registry.register(CAPABILITY)
    yield
    if added:
        registry.unregister(CAPABILITY.id)


@pytest.fixture
async def _close_thread_connections():
    yield
    from django.db import connections

    await sync_to_async(connections.close_all)()


@pytest.fixture
def setup(org, owner, _close_thread_connections):
    agent = factories.published_agent(org, owner)
    chat = conversation(agent, owner)
    the_run = run_in(chat, status=RunStatus.RUNNING)
    secret = factories.secret(org, value=KEY)
    return agent, chat, the_run, secret


@pytest.fixture
def fast_clock(monkeypatch):
    """Each look at the clock is 100 s later: a job's deadline passes after a poll or two, without waiting."""
    ticks = iter(range(0, 10**9, 100))
    monkeypatch.setattr(video, "_clock", lambda: float(next(ticks)))


def spec_with(secret, **config) -> AgentSpec:
    return AgentSpec(name="Director", capabilities=[{"id": "video_generation", "secret_id": str(secret.pk),
                                                     "config": config}])


def run_deps(the_run, **scratch):
    made = deps(run_id=str(the_run.pk), organization_id=str(the_run.organization_id),
                agent_id=str(the_run.agent_id), conversation_id=str(the_run.conversation_id), surface="web")
    made.scratch.update(scratch)
    return made


async def film(setup, prompt="Waves rolling onto a beach at sunset", args=None, run_deps_=None, **config):
    _, _, the_run, secret = setup
    return await run(spec_with(secret, **config), [("generate_video", {"prompt": prompt, **(args or {})})],
                     run_deps_ or run_deps(the_run))


def entries() -> list[SpendEntry]:
    return list(SpendEntry.objects.filter(kind="video_generation"))


def nothing_happened(fake: FakeVideoServer) -> None:
    assert fake.requests == []
    assert GeneratedMedia.objects.count() == 0 and entries() == []


# ------------------------------------------------------------------ Google, inline


async def test_google_answers_the_clip_inline_priced_at_the_models_longest(setup, fake_video, org):
    outcome = await film(setup, args={"resolution": "1080p", "aspect_ratio": "9:16"})

    [result] = outcome.returns
    media = await sync_to_async(GeneratedMedia.objects.get)()
    assert result == {"url": f"/api/v1/generated/{media.filename}", "media_type": "video/mp4",
                      "name": "video-waves-rolling-onto-a-beach-at.mp4", "filename": media.filename}
    _, chat, the_run, _ = setup
    assert (media.run_id, media.conversation_id, media.kind, media.provider) == (the_run.pk, chat.pk, "video",
                                                                                 "google")
    with default_storage.open(media.path, "rb") as handle:
        assert handle.read() == SMALL_MP4
    [request] = fake_video.requests
    assert request.path == "/v1beta/models/gemini-omni-1.1-flash:generateContent"
    assert request.headers["x-goog-api-key"] == KEY
    assert request.json["generationConfig"] == {"responseModalities": ["VIDEO"], "videoConfig": {
        "aspectRatio": "9:16", "resolution": "1080p"}}
    [entry] = await sync_to_async(entries)()
    assert (entry.model, entry.cost_usd, entry.run_id) == ("google:gemini-omni-1.1-flash", Decimal("3.20"),
                                                           the_run.pk)


async def test_a_content_refusal_from_google_is_a_result_and_nothing_is_recorded(setup, fake_video):
    fake_video.google_finish = "SAFETY"

    outcome = await film(setup)

    assert "content policy refused this clip (HTTP 200, code SAFETY)" in outcome.returns[0]
    assert outcome.retries == [] and await sync_to_async(entries)() == []


# ------------------------------------------------------------------ polled jobs


async def test_a_byteplus_job_is_submitted_polled_and_downloaded_without_the_key(setup, fake_video, caplog):
    fake_video.jobs.append(Job(polls=2, duration=6))

    with caplog.at_level("INFO"):
        outcome = await film(setup, args={"resolution": "720p", "seconds": 6}, **BYTEPLUS)

    assert outcome.returns[0]["media_type"] == "video/mp4"
    [submit] = [r for r in fake_video.requests if r.method == "POST"]
    assert submit.headers["authorization"] == f"Bearer {KEY}"
    assert submit.json == {"model": "seedance-1-0-pro-250528", "content": [{"type": "text", "text": (
        "Waves rolling onto a beach at sunset --resolution 720p --ratio 16:9 --duration 6")}]}
    job = fake_video.submitted[0]
    assert job.seen == 3  # queued, queued, succeeded
    [download] = fake_video.to("/storage/")
    assert download.path == f"/storage/{job.id}.mp4" and "X-Signature=abc123" in download.query
    assert not any(header in download.headers for header in KEY_HEADERS)
    assert "abc123" not in caplog.text and KEY not in caplog.text  # the signed URL's query is never logged
    [entry] = await sync_to_async(entries)()
    assert entry.cost_usd == Decimal("0.05") * 6  # the duration the provider reported, at 720p


async def test_a_slow_byteplus_job_times_out_is_cancelled_and_recorded_at_its_estimate(setup, fake_video,
                                                                                      fast_clock):
    fake_video.jobs.append(Job(polls=None))

    outcome = await film(setup, timeout_seconds=60, **BYTEPLUS)

    [answer] = outcome.returns
    assert "was not ready within 60 seconds. It was cancelled at the provider" in answer
    assert outcome.retries == []
    job = fake_video.submitted[0]
    assert job.cancelled and [r.method for r in fake_video.to("/api/v3")][-1] == "DELETE"
    [entry] = await sync_to_async(entries)()
    assert entry.cost_usd == Decimal("0.025") * 5  # 5 s at 480p: the estimate asked before the call
    assert fake_video.to("/storage/") == [] and await sync_to_async(GeneratedMedia.objects.count)() == 0


async def test_a_slow_xai_job_is_not_cancelled_and_is_recorded_as_it_may_still_bill(setup, fake_video, fast_clock):
    fake_video.jobs.append(Job(polls=None))

    outcome = await film(setup, timeout_seconds=60, **XAI)

    assert "The provider may still finish it and bill it" in outcome.returns[0]
    assert not any(r.method == "DELETE" for r in fake_video.requests)
    [entry] = await sync_to_async(entries)()
    assert entry.cost_usd == Decimal("0.05") * 5


async def test_an_alibaba_task_is_submitted_async_polled_and_downloaded_without_the_key(setup, fake_video):
    fake_video.jobs.append(Job(polls=2, duration=10))

    outcome = await film(setup, args={"resolution": "720p", "aspect_ratio": "9:16", "seconds": 10, "audio": False},
                         **ALIBABA)

    assert outcome.returns[0]["media_type"] == "video/mp4"
    [submit] = [r for r in fake_video.requests if r.method == "POST"]
    assert submit.path == "/api/v1/services/aigc/video-generation/video-synthesis"
    assert submit.headers["authorization"] == f"Bearer {KEY}" and submit.headers["x-dashscope-async"] == "enable"
    assert submit.json == {"model": "wan2.5-t2v-preview", "input": {"prompt": "Waves rolling onto a beach at sunset"},
                           "parameters": {"size": "720*1280", "duration": 10, "audio": False}}
    assert fake_video.submitted[0].seen == 3
    [download] = fake_video.to("/storage/")
    assert not any(header in download.headers for header in KEY_HEADERS)
    [entry] = await sync_to_async(entries)()
    assert entry.cost_usd == Decimal("0.10") * 10


async def test_a_slow_alibaba_task_is_not_cancelled_and_is_recorded_at_its_estimate(setup, fake_video,
                                                                                   fast_clock):
    fake_video.jobs.append(Job(polls=None))

    outcome = await film(setup, timeout_seconds=60, **ALIBABA)

    assert "The provider may still finish it and bill it" in outcome.returns[0]
    assert [r.method for r in fake_video.requests if r.method not in ("GET", "POST")] == []
    [entry] = await sync_to_async(entries)()
    assert entry.cost_usd == Decimal("0.05") * 5  # 480p, the nearest length to 5 the model makes


def test_an_alibaba_binding_is_called_at_its_workspace_or_its_regions_shared_endpoint(settings):
    settings.GENERATED_MEDIA_ALIBABA_BASE_URL = ""

    def endpoint(**config):
        return VideoGenerationConfig.model_validate({**ALIBABA, **config}).endpoint()

    assert endpoint() == "https://dashscope-intl.aliyuncs.com/api/v1"
    assert endpoint(alibaba_region="cn-beijing") == "https://dashscope.aliyuncs.com/api/v1"
    assert endpoint(alibaba_workspace="ws-4f2a", alibaba_region="eu-central-1") == (
        "https://ws-4f2a.eu-central-1.maas.aliyuncs.com/api/v1")
    with pytest.raises(ValidationError, match="no shared endpoint"):
        endpoint(alibaba_region="eu-central-1")
    for hostile in ("evil.com/x", "a.b", "169.254.169.254", "-x"):
        with pytest.raises(ValidationError, match="alibaba_workspace"):
            endpoint(alibaba_workspace=hostile)
    with pytest.raises(ValidationError, match="for provider alibaba only"):
        VideoGenerationConfig.model_validate({**XAI, "alibaba_workspace": "ws"})


async def test_an_xai_clip_starts_from_the_image_this_run_drew(setup, fake_video, org):
    _, chat, the_run, _ = setup
    drawn = await sync_to_async(store.save)(organization_id=org.pk, run_id=the_run.pk, conversation_id=chat.pk,
                                            kind="image", data=SMALL_PNG, media_type="image/png", name="fox")
    fake_video.jobs.append(Job(polls=1, duration=8))

    outcome = await film(setup, args={"image": drawn.filename, "seconds": 8}, **XAI)

    assert outcome.returns[0]["media_type"] == "video/mp4"
    [submit] = [r for r in fake_video.requests if r.method == "POST"]
    assert submit.path == "/v1/videos/generations"
    assert submit.json == {"model": "grok-imagine-video", "prompt": "Waves rolling onto a beach at sunset",
                           "aspect_ratio": "16:9", "resolution": "480p", "duration": 8,
                           "image": {"url": "data:image/png;base64," + base64.b64encode(SMALL_PNG).decode()}}
    [entry] = await sync_to_async(entries)()
    assert entry.cost_usd == Decimal("0.05") * 8


async def test_a_workspace_path_is_recognised_by_its_bytes_and_nothing_else_is(setup, fake_video, org, owner):
    _, chat, the_run, _ = setup
    workspace = await sync_to_async(workspaces.open_for_run)(the_run, "run")
    drawn = await sync_to_async(store.save)(organization_id=org.pk, run_id=the_run.pk, conversation_id=chat.pk,
                                            kind="image", data=SMALL_PNG, media_type="image/png", name="fox",
                                            workspace_id=str(workspace.pk))
    await sync_to_async(workspaces.write)(workspace.pk, "/workspace/output/renamed.png", SMALL_PNG, run_id=None)
    await sync_to_async(workspaces.write)(workspace.pk, "/workspace/output/other.png", SMALL_PNG + b"x",
                                          run_id=None)
    with_workspace = run_deps(the_run, workspace_id=str(workspace.pk))

    outcome = await film(setup, args={"image": "/workspace/output/renamed.png"}, run_deps_=with_workspace, **XAI)
    assert outcome.returns[0]["media_type"] == "video/mp4" and drawn.workspace_path

    # Bytes this run never made, and a filename of another run's image, are the model's mistake.
    other_run = await sync_to_async(run_in)(chat, status=RunStatus.COMPLETED)
    elsewhere = await sync_to_async(store.save)(organization_id=org.pk, run_id=other_run.pk,
                                                conversation_id=chat.pk, kind="image", data=b"\x89PNG-other",
                                                media_type="image/png", name="other")
    for image in ("/workspace/output/other.png", elsewhere.filename, "../../etc/passwd"):
        posted = len(fake_video.requests)
        outcome = await film(setup, args={"image": image}, run_deps_=with_workspace, **XAI)
        assert any("image must be the filename generate_image returned" in t for t in outcome.retries), image
        assert len(fake_video.requests) == posted


async def test_a_finished_clip_whose_url_expired_is_recorded_and_said_not_retried(setup, fake_video):
    fake_video.expired_storage = True

    outcome = await film(setup, **BYTEPLUS)

    assert "was made but could not be downloaded (HTTP 403)" in outcome.returns[0] and outcome.retries == []
    [entry] = await sync_to_async(entries)()
    assert entry.cost_usd == Decimal("0.025") * 5
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


@pytest.mark.parametrize(("config", "job"), [
    (BYTEPLUS, Job(polls=1, fail_code="OutputVideoSensitiveContentDetected")),
    (XAI, Job(polls=0, fail_code="moderated")),
    (ALIBABA, Job(polls=1, fail_code="DataInspectionFailed")),
], ids=["byteplus", "xai", "alibaba"])
async def test_a_job_the_content_policy_stopped_is_a_result_and_its_text_never_shows(setup, fake_video, caplog,
                                                                                    config, job):
    fake_video.jobs.append(job)

    with caplog.at_level("INFO"):
        outcome = await film(setup, **config)

    assert "content policy refused this clip" in outcome.returns[0] and outcome.retries == []
    assert SECRET_TEXT not in caplog.text and SECRET_TEXT not in str(outcome.messages)
    assert await sync_to_async(entries)() == [] and fake_video.to("/storage/") == []


async def test_a_rejected_key_is_a_result_and_the_key_never_shows(setup, fake_video, caplog):
    fake_video.api_key = "another-key"

    with caplog.at_level("INFO"):
        outcome = await film(setup, **XAI)

    assert "rejected this agent's API key (HTTP 401, code unauthorized)" in outcome.returns[0]
    assert KEY not in caplog.text and KEY not in str(outcome.messages) and SECRET_TEXT not in caplog.text


async def test_a_provider_that_is_down_at_submit_is_a_retry(setup, fake_video):
    fake_video.jobs.append(Job(submit_status=503, submit_code="ServiceUnavailable"))

    outcome = await film(setup, **BYTEPLUS)

    assert any("busy or down (HTTP 503, code ServiceUnavailable)" in t for t in outcome.retries)
    assert await sync_to_async(entries)() == []


# ------------------------------------------------------------------ refused before anything is paid


@pytest.mark.parametrize("config", [{}, BYTEPLUS, XAI, ALIBABA], ids=["google", "byteplus", "xai", "alibaba"])
async def test_a_clip_whose_price_would_pass_the_budget_is_refused_before_the_provider(setup, fake_video, org,
                                                                                     config):
    agent, _, _, _ = setup

    def leave_ten_cents():
        org.monthly_budget_usd = Decimal("1")
        org.save(update_fields=["monthly_budget_usd"])
        SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("0.90"), kind="model_request")

    await sync_to_async(leave_ten_cents)()

    outcome = await film(setup, **config)

    assert outcome.returns[0].startswith("Refused: The organization's monthly budget of $1.00 does not cover")
    assert "$0.1000 is left" in outcome.returns[0]
    await sync_to_async(nothing_happened)(fake_video)


async def test_a_full_quota_refuses_before_the_budget_and_the_provider(setup, fake_video, settings, org):
    settings.GENERATED_MEDIA_QUOTA_MB = 1
    _, chat, _, _ = setup
    await sync_to_async(store.save)(organization_id=org.pk, run_id=None, conversation_id=chat.pk, kind="image",
                                    data=b"x" * (1024 * 1024), media_type="image/png", name="old")

    outcome = await film(setup, **BYTEPLUS)

    assert outcome.returns[0].startswith("Refused") and "quota" in outcome.returns[0]
    assert fake_video.requests == [] and await sync_to_async(entries)() == []


@pytest.mark.parametrize(("args", "config", "message"), [
    ({"prompt": " "}, {}, "prompt must describe the clip"),
    ({"resolution": "1080p"}, {**BYTEPLUS, "max_resolution": "720p"}, "resolution must be one of ['480p', '720p']"),
    ({"aspect_ratio": "5:4"}, BYTEPLUS, "aspect_ratio must be one of"),
    ({"seconds": 10}, {**BYTEPLUS, "max_seconds": 8}, "seconds must be 3-8"),
    ({"image": "x.png"}, {"provider": "byteplus", "model": "seedance-1-0-lite-t2v-250428"}, "cannot start from"),
    ({"seconds": 7}, ALIBABA, "seconds must be one of [5, 10]"),
])
async def test_the_models_own_mistakes_go_back_to_it_before_anything_is_paid(setup, fake_video, args, config,
                                                                           message):
    outcome = await film(setup, args=args, **config)

    assert any(message in text for text in outcome.retries), outcome.retries
    await sync_to_async(nothing_happened)(fake_video)


async def test_a_member_watches_the_clip_and_another_organizations_member_gets_404(setup, fake_video, org, member,
                                                                                 outsider, outsider_org, api_as):
    outcome = await film(setup)
    url = outcome.returns[0]["url"]

    response = await sync_to_async(api_as(member, org).get)(url, HTTP_RANGE="bytes=0-7")
    assert response.status_code == 206 and b"".join(response.streaming_content) == SMALL_MP4[:8]
    assert (await sync_to_async(api_as(outsider, outsider_org).get)(url)).status_code == 404


# ------------------------------------------------------------------ the declaration, its config and catalog


async def test_the_arguments_reach_the_model_as_the_binding_allows(setup):
    _, _, the_run, secret = setup

    async def offered(**config):
        script = Script([])
        await agent_for(spec_with(secret, **config), run_deps(the_run), script).run("go", deps=run_deps(the_run))
        return script.requests[0].function_tools[0].parameters_json_schema["properties"]

    google = await offered()
    assert "seconds" not in google and "audio" not in google and "image" in google
    assert google["resolution"]["enum"] == ["720p", "1080p"] and google["resolution"]["default"] == "720p"
    capped = await offered(**BYTEPLUS, resolution="720p", max_resolution="720p", max_seconds=8)
    assert capped["resolution"]["enum"] == ["480p", "720p"] and capped["resolution"]["default"] == "720p"
    assert (capped["seconds"]["minimum"], capped["seconds"]["maximum"], capped["seconds"]["default"]) == (3, 8, 5)
    lite = await offered(provider="byteplus", model="seedance-1-0-lite-t2v-250428")
    assert "image" not in lite
    wan = await offered(**ALIBABA, audio=False)
    assert wan["seconds"]["enum"] == [5, 10] and wan["audio"] == {
        "type": "boolean", "default": False, "description": "Whether the clip has sound."}


def test_it_is_side_effecting_needs_a_key_and_publish_refuses_without_one(org):
    assert CAPABILITY.tool("generate_video").side_effecting and CAPABILITY.voice == "hand_off"
    assert CAPABILITY.catalog_entry()["key"]["kind"] == "api_key"
    problems = registry.validate_bindings(AgentSpec(name="P", capabilities=[{"id": "video_generation"}]),
                                          organization=org, can_view_secret=lambda secret_id: True)
    assert any("secret" in p["field"] for p in problems), problems


@pytest.mark.parametrize(("config", "message"), [
    ({"model": "grok-imagine-video"}, "model must be one of"),
    ({"seconds": 5}, "decides the length"),
    ({**BYTEPLUS, "seconds": 20}, "seconds must be 3-12"),
    ({**BYTEPLUS, "seconds": 10, "max_seconds": 6}, "at most max_seconds"),
    ({**BYTEPLUS, "resolution": "1080p", "max_resolution": "720p"}, "at least resolution"),
    ({**BYTEPLUS, "resolution": "4k"}, "resolution must be one of"),
    ({**XAI, "aspect_ratio": "21:9"}, "aspect_ratio must be one of"),
    ({**XAI, "audio": False}, "sound is fixed"),
    ({"timeout_seconds": 30}, "timeout_seconds"),
    ({**ALIBABA, "seconds": 7}, "one of \\[5, 10\\]"),
])
def test_a_config_the_model_cannot_render_is_refused(config, message):
    with pytest.raises(ValidationError, match=message):
        VideoGenerationConfig.model_validate(config)


def test_catalog_entries_without_a_client_are_dropped_and_a_model_without_a_rate_raises(caplog):
    model = {"id": "m", "name": "M", "use_when": "x", "resolutions": ["720p"], "aspect_ratios": ["16:9"],
             "seconds": {"min": 4, "max": 8}, "audio": "never",
             "prices": [{"from": "2026-01-01", "usd_per_second": {"720p": "0.1"}}]}
    document = {"providers": [
        {"id": "xai", "name": "xAI", "api": "xai-videos", "base_url": "https://x", "models": [model]},
        {"id": "openai", "name": "Sora", "api": "openai-videos", "base_url": "https://y", "models": [model]},
    ]}
    assert list(catalog.parse(document)) == ["xai"]
    assert "openai dropped: no client for the API 'openai-videos'" in caplog.text
    unpriced = {**model, "resolutions": ["720p", "1080p"]}
    with pytest.raises(ValidationError, match="no rate for"):
        catalog.parse({"providers": [{**document["providers"][0], "models": [unpriced]}]})


async def test_a_run_cancelled_while_its_job_waits_cancels_the_job_and_records_its_estimate(setup, fake_video,
                                                                                          monkeypatch):
    import asyncio

    monkeypatch.setattr(video, "POLL_SECONDS", 0.05)
    fake_video.jobs.append(Job(polls=None))
    waiting = asyncio.ensure_future(film(setup, args={"seconds": 4}, **BYTEPLUS))
    for _ in range(400):
        if fake_video.submitted and fake_video.submitted[0].seen:
            break
        await asyncio.sleep(0.025)

    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    assert fake_video.submitted[0].cancelled
    [entry] = await sync_to_async(entries)()
    assert entry.cost_usd == Decimal("0.025") * 4
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0

"""`generate_image` (capability image_generation) through a real pydantic-ai Agent against a local fake of
OpenAI's Responses API with its image tool: quota first, then the budget, then the provider (through the
outbound guard), the ledger, the generated-media store and the workspace's /output. Each refusal is proven
by what did not happen: the fake heard nothing, the ledger and the store gained nothing."""

from __future__ import annotations

import base64
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.core.files.storage import default_storage
from pydantic import ValidationError

from agents.models import Run, RunStatus
from agents.spec import AgentSpec
from capabilities import registry
from capabilities.image_generation import catalog
from capabilities.image_generation.capability import CAPABILITY, ImageGenerationConfig
from governance.models import SpendEntry
from media import store
from media.models import GeneratedMedia
from tests import factories
from tests.capabilities.helpers import deps, run
from tests.fakes.openai_responses import SMALL_PNG, FakeResponsesServer, ImageReply, fake_responses  # noqa: F401
from tests.governance.helpers import conversation, run_in
from workspaces import store as workspaces

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-image-key-never-shown-000000000"
PROVIDER_TEXT = "Incorrect API key provided: sk-im***000 belongs to alice@example.com"


@pytest.fixture(autouse=True)
def _registered(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    # Until registry.BUILTIN lists it (the lead's line); then it is already there and stays.
    added = registry.find(CAPABILITY.id) is None
    if added:
        registry.register(CAPABILITY)
    yield
    if added:
        registry.unregister(CAPABILITY.id)


@pytest.fixture
async def _close_thread_connections():
    """The test's own reads go through asgiref's worker thread; close its connection afterwards so the test
    database can be dropped (as tests/capabilities/test_planning.py does)."""
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


def spec_with(secret, **config) -> AgentSpec:
    return AgentSpec(name="Painter", capabilities=[{"id": "image_generation", "secret_id": str(secret.pk),
                                                    "config": config}])


def run_deps(the_run):
    return deps(run_id=str(the_run.pk), organization_id=str(the_run.organization_id), agent_id=str(the_run.agent_id),
                conversation_id=str(the_run.conversation_id), surface="web")


async def draw(setup, prompt: str = "a red fox in the snow", run_deps_=None, **config):
    _, _, the_run, secret = setup
    return await run(spec_with(secret, **config), [("generate_image", {"prompt": prompt})],
                     run_deps_ or run_deps(the_run))


def nothing_happened(fake: FakeResponsesServer) -> None:
    assert fake.requests == []
    assert SpendEntry.objects.count() == 0
    assert GeneratedMedia.objects.count() == 0


# ------------------------------------------------------------------ drawing


async def test_an_image_is_drawn_metered_stored_and_returned(setup, fake_responses, org):
    fake_responses.queue(ImageReply.image_of(SMALL_PNG))

    outcome = await draw(setup, quality="high", background="opaque")

    [result] = outcome.returns
    media = await sync_to_async(GeneratedMedia.objects.get)()
    assert result == {"url": f"/api/v1/generated/{media.filename}", "media_type": "image/png",
                      "name": "image-a-red-fox-in-the-snow.png", "filename": media.filename}
    _, chat, the_run, _ = setup
    assert (media.run_id, media.conversation_id, media.organization_id) == (the_run.pk, chat.pk, org.pk)
    assert (media.provider, media.model, media.kind) == ("openai", "gpt-image-2", "image")
    with default_storage.open(media.path, "rb") as handle:
        assert handle.read() == SMALL_PNG
    [request] = fake_responses.requests
    assert request.bearer == KEY
    assert request.json["model"] == "gpt-5.4-mini"  # the catalog's caller; the image model rides in the tool
    assert request.image_tool["model"] == "gpt-image-2"
    assert (request.image_tool["quality"], request.image_tool["background"]) == ("high", "opaque")
    assert "a red fox in the snow" in str(request.json["input"])


async def test_the_call_is_on_the_runs_ledger_and_an_unpriced_image_makes_its_cost_partial(setup, fake_responses):
    await draw(setup)

    entry = await sync_to_async(SpendEntry.objects.get)()
    _, _, the_run, _ = setup
    assert (entry.kind, entry.run_id, entry.model) == ("image_generation", the_run.pk, "openai:gpt-image-2")
    assert (entry.input_tokens, entry.output_tokens) == (120, 30)
    assert entry.cost_usd > 0  # the caller's tokens, priced by genai-prices
    assert entry.is_partial  # gpt-image-2 has no price in the catalog: the image itself is at zero
    row = await sync_to_async(Run.objects.get)(pk=the_run.pk)
    assert row.cost_is_partial and row.cost_usd == Decimal("0.0125") + entry.cost_usd
    assert row.requests == 0  # an image is not one of the agent's own model requests


async def test_a_priced_image_model_adds_the_catalogs_price_per_image(setup, fake_responses):
    await draw(setup, model="gpt-image-1", quality="low", size="1024x1024")

    entry = await sync_to_async(SpendEntry.objects.get)()
    assert not entry.is_partial
    tokens_only = entry.cost_usd - Decimal("0.011")
    assert Decimal("0") < tokens_only < Decimal("0.01")


async def test_a_run_with_a_workspace_finds_the_image_under_output(setup, fake_responses):
    _, _, the_run, _ = setup
    workspace = await sync_to_async(workspaces.open_for_run)(the_run, "run")
    with_workspace = run_deps(the_run)
    with_workspace.scratch["workspace_id"] = str(workspace.pk)

    outcome = await draw(setup, run_deps_=with_workspace)

    path = outcome.returns[0]["workspace_path"]
    assert path == "/workspace/output/image-a-red-fox-in-the-snow.png"
    assert await sync_to_async(workspaces.read)(workspace.pk, path) == SMALL_PNG


async def test_a_member_opens_the_drawn_image_and_an_outsider_cannot(setup, fake_responses, org, member,
                                                                    outsider, outsider_org, api_as):
    outcome = await draw(setup)
    url = outcome.returns[0]["url"]

    response = await sync_to_async(api_as(member, org).get)(url)
    assert response.status_code == 200 and b"".join(response.streaming_content) == SMALL_PNG
    assert (await sync_to_async(api_as(outsider, outsider_org).get)(url)).status_code == 404


# ------------------------------------------------------------------ refused before anything is paid


async def test_a_full_quota_refuses_before_the_budget_and_the_provider(setup, fake_responses, settings, org):
    settings.GENERATED_MEDIA_QUOTA_MB = 1
    _, chat, the_run, _ = setup
    await sync_to_async(store.save)(organization_id=org.pk, run_id=None, conversation_id=chat.pk, kind="image",
                                    data=b"x" * (1024 * 1024), media_type="image/png", name="old")

    outcome = await draw(setup)

    assert "quota" in outcome.returns[0] and "nothing was spent" in outcome.returns[0]
    assert outcome.returns[0].startswith("Refused")
    assert fake_responses.requests == [] and await sync_to_async(SpendEntry.objects.count)() == 0
    assert await sync_to_async(GeneratedMedia.objects.count)() == 1


async def test_a_spent_budget_refuses_before_the_provider(setup, fake_responses, org):
    agent, _, _, _ = setup

    def spend_it():
        org.monthly_budget_usd = Decimal("1")
        org.save(update_fields=["monthly_budget_usd"])
        SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("1"), kind="model_request")

    await sync_to_async(spend_it)()

    outcome = await draw(setup)

    assert outcome.returns[0].startswith("Refused: The organization's monthly budget of $1.00 is used up")
    assert "no image was drawn" in outcome.returns[0]
    assert fake_responses.requests == []
    assert await sync_to_async(SpendEntry.objects.count)() == 1 and await sync_to_async(
        GeneratedMedia.objects.count)() == 0


async def test_a_provider_on_an_address_the_operator_did_not_list_never_gets_the_key(setup, fake_responses,
                                                                                     settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []

    outcome = await draw(setup)

    assert outcome.returns[0].startswith("Refused: The image provider's address was refused")
    await sync_to_async(nothing_happened)(fake_responses)


# ------------------------------------------------------------------ failures


async def test_a_rejected_key_is_a_result_and_the_providers_text_never_shows(setup, fake_responses, caplog):
    fake_responses.queue(ImageReply.error(401, "invalid_api_key", PROVIDER_TEXT))

    with caplog.at_level("INFO"):
        outcome = await draw(setup)

    [answer] = outcome.returns
    assert "rejected this agent's API key (HTTP 401, code invalid_api_key)" in answer
    assert outcome.retries == []
    assert "alice@example.com" not in str(outcome.messages) and "alice@example.com" not in caplog.text
    assert KEY not in str(outcome.messages) and KEY not in caplog.text
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


async def test_a_content_policy_refusal_is_a_result_not_a_retry(setup, fake_responses):
    fake_responses.queue(ImageReply.error(400, "moderation_blocked", "Your request was rejected: " + "x" * 20))

    outcome = await draw(setup)

    assert "content policy refused this description (HTTP 400, code moderation_blocked)" in outcome.returns[0]
    assert outcome.retries == [] and len(fake_responses.requests) == 1
    assert "Your request was rejected" not in str(outcome.messages)


async def test_a_provider_that_is_down_is_a_retry_and_the_next_call_draws(setup, fake_responses):
    _, _, the_run, secret = setup
    fake_responses.queue(ImageReply.error(503, "server_error"), ImageReply.image_of(SMALL_PNG))

    outcome = await run(spec_with(secret), [("generate_image", {"prompt": "a fox"}),
                                            ("generate_image", {"prompt": "a fox"})], run_deps(the_run))

    assert any("busy or down (HTTP 503, code server_error)" in text for text in outcome.retries)
    assert outcome.returns[0]["media_type"] == "image/png"
    assert len(fake_responses.requests) == 2
    assert await sync_to_async(SpendEntry.objects.count)() == 1  # the failed call was not billed


async def test_an_empty_prompt_goes_back_to_the_model(setup, fake_responses):
    outcome = await draw(setup, prompt="   ")

    assert any("prompt must describe the image" in text for text in outcome.retries)
    await sync_to_async(nothing_happened)(fake_responses)


async def test_an_answer_without_an_image_is_recorded_and_said(setup, fake_responses):
    fake_responses.queue(ImageReply.without_image())

    outcome = await draw(setup)

    assert "without drawing an image" in outcome.returns[0]
    entry = await sync_to_async(SpendEntry.objects.get)()
    assert not entry.is_partial  # no image: only the caller's tokens, which are priced
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


async def test_bytes_that_are_not_an_image_are_recorded_but_never_stored_whatever_the_provider_calls_them(
        setup, fake_responses):
    fake_responses.queue(ImageReply.image_of(b"<html><script>alert(1)</script></html>", output_format="png"))

    outcome = await draw(setup)

    assert "not a PNG, JPEG, WebP or GIF image" in outcome.returns[0]
    assert await sync_to_async(SpendEntry.objects.count)() == 1  # it was paid for
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


async def test_a_jpeg_the_provider_labels_png_is_stored_as_a_jpeg(setup, fake_responses):
    jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 40
    fake_responses.queue(ImageReply.image_of(jpeg, output_format="png"))

    outcome = await draw(setup)

    assert outcome.returns[0]["media_type"] == "image/jpeg" and outcome.returns[0]["filename"].endswith(".jpg")


# ------------------------------------------------------------------ the declaration and its config


def test_it_is_side_effecting_needs_a_key_and_publish_refuses_without_one(org, owner):
    assert CAPABILITY.tool("generate_image").side_effecting
    entry = CAPABILITY.catalog_entry()
    assert entry["key"]["kind"] == "api_key" and entry["config_schema"]["properties"]["model"]["enum"] == [
        "gemini-2.5-flash-image", "gemini-3-pro-image-preview",
        "gpt-image-1", "gpt-image-1-mini", "gpt-image-1.5", "gpt-image-2"]
    problems = registry.validate_bindings(AgentSpec(name="P", capabilities=[{"id": "image_generation"}]),
                                          organization=org, can_view_secret=lambda secret_id: True)
    assert any("secret" in p["field"] for p in problems), problems


def test_a_run_whose_binding_lost_its_key_is_told_why_the_tool_is_absent(setup):
    _, _, the_run, _ = setup
    built = registry.build_for_run(AgentSpec(name="P", capabilities=[{"id": "image_generation"}]), run_deps(the_run))
    assert "generate_image" not in built.tools
    assert built.skipped["image_generation"] == "it needs a api_key secret and none is bound"


def test_the_old_single_string_form_is_normalised():
    assert ImageGenerationConfig.model_validate({"model": "openai-responses:gpt-5.4"}).model_dump(
        include={"provider", "model"}) == {"provider": "openai", "model": "gpt-image-2"}
    assert ImageGenerationConfig.model_validate({"model": "openai-responses:gpt-image-1"}).model == "gpt-image-1"
    with pytest.raises(ValidationError, match="provider must be one of"):
        ImageGenerationConfig.model_validate({"model": "together:flux-1"})
    # A binding that names a provider declares both halves: no guessing.
    with pytest.raises(ValidationError, match="model must be one of"):
        ImageGenerationConfig.model_validate({"provider": "openai", "model": "openai-responses:gpt-5.4"})


@pytest.mark.parametrize(("config", "message"), [
    ({"model": "dall-e-3"}, "model must be one of"),
    ({"size": "2K"}, "size must be one of"),
    ({"aspect_ratio": "16:9"}, "aspect_ratio must be one of"),
    ({"aspect_ratio": "2:3", "size": "1024x1024"}, "not both"),
    ({"background": "transparent", "output_format": "jpeg"}, "png or webp"),
    ({"quality": "ultra"}, "quality"),
    ({"surprise": 1}, "surprise"),
])
def test_a_config_the_provider_cannot_draw_is_refused(config, message):
    with pytest.raises(ValidationError, match=message):
        ImageGenerationConfig.model_validate(config)


def test_catalog_entries_the_sdk_or_the_key_cannot_serve_are_dropped_at_load(caplog):
    model = {"id": "m", "name": "M", "use_when": "always"}
    document = {"providers": [
        {"id": "openai", "name": "OpenAI", "model_class": "openai-responses", "caller": "gpt-5.4-mini",
         "models": [model]},
        {"id": "chatty", "name": "Chat only", "model_class": "openai-chat", "models": [model]},
        {"id": "mystery", "name": "Unknown", "model_class": "together", "models": [model]},
        {"id": "nocaller", "name": "No caller", "model_class": "openai-responses", "models": [model]},
    ]}

    assert list(catalog.parse(document)) == ["openai"]
    assert "chatty dropped: OpenAIChatModel does not support ImageGenerationTool" in caplog.text
    assert "mystery dropped: unknown model class 'together'" in caplog.text
    assert "nocaller dropped" in caplog.text
    with pytest.raises(ValidationError):
        catalog.parse({"providers": [{"id": "openai", "name": "x", "model_class": "openai-responses",
                                      "models": []}]})


def test_a_dated_price_applies_from_its_day_at_its_size_and_quality():
    from datetime import date

    entry = catalog.ImageModel.model_validate({"id": "m", "name": "M", "use_when": "x", "prices": [
        {"from": "2026-01-01", "size": "1024x1024", "usd_per_image": {"low": "0.01"}},
        {"from": "2027-01-01", "size": "1024x1024", "usd_per_image": {"low": "0.02"}}]})
    on = date(2026, 6, 1)
    assert catalog.image_price(entry, quality="low", size="1024x1024", on=on) == Decimal("0.01")
    assert catalog.image_price(entry, quality="low", size="1024x1024", on=date(2027, 1, 1)) == Decimal("0.02")
    assert catalog.image_price(entry, quality="low", size="1024x1024", on=date(2025, 12, 31)) is None
    assert catalog.image_price(entry, quality="high", size="1024x1024", on=on) is None
    assert catalog.image_price(entry, quality="low", size="1536x1024", on=on) is None
    assert catalog.image_price(entry, quality=None, size="1024x1024", on=on) is None


def test_the_fake_answers_base64_the_sdk_decodes():
    # The fake's own contract, so a broken fake cannot pass the tests above by accident.
    server = FakeResponsesServer()
    body = server.response_for({"model": "m", "tools": [{"type": "image_generation"}]}, ImageReply())
    assert base64.b64decode(body["output"][0]["result"]) == SMALL_PNG

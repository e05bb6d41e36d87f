"""`generate_image` with Google's Gemini image models (pydantic-ai's `GoogleModel` and `ImageGenerationTool`)
against a local fake of Gemini's generateContent: the image model is the request's model, the key travels only
in `x-goog-api-key` to the operator's `GENERATED_MEDIA_GOOGLE_BASE_URL` through the outbound guard, the catalog's
per-image price stands for the image's output tokens, and the budget refuses before anything is sent. One run
goes through the real runner."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.core.files.storage import default_storage
from pydantic import ValidationError
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import RunStatus, ToolCall
from agents.spec import AgentSpec
from capabilities import registry
from capabilities.image_generation import catalog
from capabilities.image_generation.capability import CAPABILITY, ImageGenerationConfig
from governance.models import SpendEntry
from media.models import GeneratedMedia
from tests import factories
from tests.capabilities.helpers import deps, run
from tests.fakes.gemini_image import SECRET_TEXT, SMALL_PNG, GeminiImage, fake_gemini_image  # noqa: F401
from tests.governance.helpers import conversation, run_in
from tests.runner.conftest import publish
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _registered(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
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
def setup(org, owner, fake_gemini_image, _close_thread_connections):  # noqa: F811
    agent = factories.published_agent(org, owner)
    chat = conversation(agent, owner)
    the_run = run_in(chat, status=RunStatus.RUNNING)
    secret = factories.secret(org, value=fake_gemini_image.api_key)
    return agent, chat, the_run, secret


async def draw(setup, prompt: str = "a red fox in the snow", **config):
    _, _, the_run, secret = setup
    spec = AgentSpec(name="Painter", capabilities=[{"id": "image_generation", "secret_id": str(secret.pk),
                                                    "config": {"provider": "google", **config}}])
    run_deps = deps(run_id=str(the_run.pk), organization_id=str(the_run.organization_id),
                    agent_id=str(the_run.agent_id), conversation_id=str(the_run.conversation_id), surface="web")
    return await run(spec, [("generate_image", {"prompt": prompt})], run_deps)


def gemini_input_price(tokens: int) -> Decimal:
    from genai_prices import Usage, calc_price

    return Decimal(str(calc_price(Usage(input_tokens=tokens), model_ref="gemini-2.5-flash-image",
                                  provider_id="google").total_price))


# ------------------------------------------------------------------ drawing


async def test_gemini_draws_the_image_with_the_image_model_itself_and_only_its_key_header(setup, fake_gemini_image,
                                                                                          org):
    outcome = await draw(setup, model="gemini-2.5-flash-image", aspect_ratio="16:9")

    [result] = outcome.returns
    media = await sync_to_async(GeneratedMedia.objects.get)()
    assert result["url"] == f"/api/v1/generated/{media.filename}" and result["media_type"] == "image/png"
    assert (media.provider, media.model, media.organization_id) == ("google", "gemini-2.5-flash-image", org.pk)
    with default_storage.open(media.path, "rb") as handle:
        assert handle.read() == SMALL_PNG
    [request] = fake_gemini_image.requests
    assert request.model == "gemini-2.5-flash-image"
    assert request.headers["x-goog-api-key"] == fake_gemini_image.api_key
    assert "authorization" not in request.headers
    assert "IMAGE" in request.generation_config["responseModalities"]
    assert request.generation_config["imageConfig"] == {"aspectRatio": "16:9"}
    assert "a red fox in the snow" in request.prompt


async def test_the_catalogs_per_image_price_replaces_the_images_output_tokens(setup, fake_gemini_image):
    await draw(setup, model="gemini-2.5-flash-image")

    entry = await sync_to_async(SpendEntry.objects.get)()
    _, _, the_run, _ = setup
    assert (entry.kind, entry.run_id, entry.model) == ("image_generation", the_run.pk,
                                                       "google:gemini-2.5-flash-image")
    assert not entry.is_partial
    # Unset size is Gemini's 1K: $0.039 an image, plus the prompt's input tokens; the 1295 output tokens are the
    # image and are not priced again at the text rate.
    assert entry.cost_usd == Decimal("0.039") + gemini_input_price(entry.input_tokens)
    assert entry.output_tokens == 1295


async def test_a_4k_image_is_priced_at_the_4k_rate(setup, fake_gemini_image):
    await draw(setup, model="gemini-3-pro-image-preview", size="4K", aspect_ratio="1:1")

    [request] = fake_gemini_image.requests
    assert request.model == "gemini-3-pro-image-preview"
    assert request.generation_config["imageConfig"] == {"aspectRatio": "1:1", "imageSize": "4K"}
    entry = await sync_to_async(SpendEntry.objects.get)()
    assert not entry.is_partial
    assert Decimal("0.24") <= entry.cost_usd < Decimal("0.25")


# ------------------------------------------------------------------ refused before anything is paid


async def test_a_spent_budget_refuses_before_gemini_is_called(setup, fake_gemini_image, org):
    agent, _, _, _ = setup

    def spend_it():
        org.monthly_budget_usd = Decimal("1")
        org.save(update_fields=["monthly_budget_usd"])
        SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("1"), kind="model_request")

    await sync_to_async(spend_it)()

    outcome = await draw(setup, model="gemini-2.5-flash-image")

    assert outcome.returns[0].startswith("Refused: The organization's monthly budget of $1.00 is used up")
    assert fake_gemini_image.requests == []
    assert await sync_to_async(SpendEntry.objects.count)() == 1
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


async def test_a_gemini_address_the_operator_did_not_list_never_gets_the_key(setup, fake_gemini_image, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []

    outcome = await draw(setup, model="gemini-2.5-flash-image")

    assert outcome.returns[0].startswith("Refused: The image provider's address was refused")
    assert fake_gemini_image.requests == []


# ------------------------------------------------------------------ failures


async def test_a_rejected_key_is_a_result_and_neither_the_key_nor_googles_text_shows(setup, fake_gemini_image,
                                                                                      caplog):
    fake_gemini_image.api_key = "AIza-the-key-google-expects-0000000000"

    with caplog.at_level("DEBUG"):
        outcome = await draw(setup, model="gemini-2.5-flash-image")

    [answer] = outcome.returns
    assert "rejected this agent's API key (HTTP 400, code INVALID_ARGUMENT)" in answer
    assert outcome.retries == []
    sent = fake_gemini_image.requests[0].headers["x-goog-api-key"]
    for secret in (sent, "alice@example.com", SECRET_TEXT):
        assert secret not in str(outcome.messages) and secret not in caplog.text
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


async def test_a_safety_stop_is_a_content_policy_result_and_stores_nothing(setup, fake_gemini_image):
    fake_gemini_image.queue(GeminiImage.blocked("IMAGE_SAFETY"))

    outcome = await draw(setup, model="gemini-2.5-flash-image")

    assert "content policy refused this description" in outcome.returns[0]
    assert outcome.retries == [] and len(fake_gemini_image.requests) == 1
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


async def test_a_rate_limit_is_a_retry(setup, fake_gemini_image):
    fake_gemini_image.queue(GeminiImage.error(429, "RESOURCE_EXHAUSTED"))

    outcome = await draw(setup, model="gemini-2.5-flash-image")

    assert outcome.retries and "busy or down (HTTP 429, code RESOURCE_EXHAUSTED)" in str(outcome.retries[0])
    assert SECRET_TEXT not in str(outcome.messages)


# ------------------------------------------------------------------ configuration and catalog


@pytest.mark.parametrize(("config", "message"), [
    ({"quality": "high"}, "does not apply quality"),
    ({"output_format": "webp"}, "does not apply output_format"),
    ({"size": "1024x1024"}, "size must be one of"),
    ({"model": "gpt-image-2"}, "for provider google"),
])
def test_options_gemini_does_not_apply_are_refused(config, message):
    with pytest.raises(ValidationError, match=message):
        ImageGenerationConfig.model_validate({"provider": "google", "model": "gemini-2.5-flash-image", **config})


def test_gemini_takes_a_resolution_and_a_ratio_together():
    config = ImageGenerationConfig.model_validate({"provider": "google", "model": "gemini-3-pro-image-preview",
                                                   "size": "2K", "aspect_ratio": "21:9"})
    assert (config.size, config.aspect_ratio) == ("2K", "21:9")


def test_the_google_entry_is_offered_and_one_naming_a_text_model_is_dropped(caplog):
    assert [m.id for m in catalog.providers()["google"].models] == ["gemini-2.5-flash-image",
                                                                   "gemini-3-pro-image-preview"]
    text_model = {"id": "gemini-2.5-flash", "name": "Text", "use_when": "never"}
    document = {"providers": [{"id": "google", "name": "Google", "model_class": "google", "models": [text_model]}]}

    assert catalog.parse(document) == {}
    assert "google dropped: models that do not draw: ['gemini-2.5-flash']" in caplog.text


# ------------------------------------------------------------------ a real run


def painter_model() -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            yield "Here is your fox."
            return
        yield {0: DeltaToolCall(name="generate_image", json_args=json.dumps({"prompt": "a fox in the snow"}),
                                tool_call_id="img-1")}

    return FunctionModel(stream_function=stream, model_name="scripted")


def test_a_run_draws_with_gemini_and_the_key_is_in_no_frame(org, owner, fake_gemini_image, scripted_model):
    scripted_model(painter_model())
    secret = factories.secret(org, value=fake_gemini_image.api_key)
    agent, version = publish(org, owner, capabilities=[{
        "id": "image_generation", "secret_id": str(secret.pk),
        "config": {"provider": "google", "model": "gemini-2.5-flash-image"}}])
    run = start(org, owner, agent, version, prompt="Draw a fox")

    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.output == "Here is your fox."
    media = GeneratedMedia.objects.get()
    assert (media.run_id, media.provider, media.model) == (run.pk, "google", "gemini-2.5-flash-image")
    [result] = [f["data"] for f in frames if f["type"] == "tool_result"]
    assert result["content"]["url"] == f"/api/v1/generated/{media.filename}"
    call = ToolCall.objects.get(run=run)
    assert (call.tool_name, call.capability_id, call.status) == ("generate_image", "image_generation", "ok")
    entry = SpendEntry.objects.get(kind="image_generation")
    assert entry.run_id == run.pk and entry.model == "google:gemini-2.5-flash-image" and not entry.is_partial
    assert [r.model for r in fake_gemini_image.requests] == ["gemini-2.5-flash-image"]
    assert fake_gemini_image.api_key not in json.dumps(frames, default=str)
    assert fake_gemini_image.api_key not in json.dumps(result)

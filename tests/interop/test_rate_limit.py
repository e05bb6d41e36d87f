"""The per-key run rate limit on /v1/chat/completions: 429 with Retry-After in OpenAI's shape, and nothing run.
In-process (the project's ASGI app under httpx's ASGI transport, still the real `openai` client) so the test
drives the limiter's clock."""

from __future__ import annotations

import httpx
import openai
import pytest
from django.core.asgi import get_asgi_application

from agenticos import ratelimit
from agenticos.models import ApiKey
from agents.models import Run
from tests.interop.conftest import api_key
from tests.runner.conftest import publish

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_key_over_its_run_rate_gets_429_with_retry_after(org, owner, settings, ratelimit_clock):
    from asgiref.sync import sync_to_async

    settings.RATE_LIMIT_RUN_PER_MINUTE = 1
    agent, _ = await sync_to_async(publish)(org, owner)
    raw = await sync_to_async(api_key)(owner, org)
    key = await ApiKey.objects.aget()
    ratelimit.hit("run", f"key:{key.pk}", 1)  # the minute's one run, already spent
    ratelimit_clock.advance(20)
    transport = httpx.ASGITransport(app=get_asgi_application())
    async with httpx.AsyncClient(transport=transport) as http:
        client = openai.AsyncOpenAI(base_url="http://testserver/v1", api_key=raw, http_client=http, max_retries=0)
        with pytest.raises(openai.RateLimitError) as limited:
            await client.chat.completions.create(model=agent.slug, messages=[{"role": "user", "content": "x"}])
    assert limited.value.response.headers["Retry-After"] == "39"
    assert limited.value.code == "rate_limited" and limited.value.body["type"] == "rate_limit_error"
    assert not await Run.objects.aexists()
    from django.db import connections

    await sync_to_async(connections.close_all)()  # the request thread's connection, before the flush

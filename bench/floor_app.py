"""The floor for bench/turn_overhead.py: the same demo model behind a minimal Channels consumer.

No database, no Celery, no transcript: a socket receives {"type": "message", "text"}, runs the agent
in-process and relays the same frame vocabulary. Everything the full path adds is measured against this.
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from channels.generic.websocket import AsyncJsonWebsocketConsumer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta  # noqa: E402

from agents.providers.demo import demo_model  # noqa: E402

AGENT = Agent(demo_model(), instructions="You are a helpful test agent.")


class FloorConsumer(AsyncJsonWebsocketConsumer):
    async def receive_json(self, content, **kwargs):
        async def handler(ctx, events):
            async for event in events:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    await self.send_json({"type": "text_delta", "data": {"content": event.part.content}})
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    await self.send_json({"type": "text_delta", "data": {"content": event.delta.content_delta}})

        await self.send_json({"type": "model_request_start", "data": {}})
        result = await AGENT.run(content.get("text", ""), event_stream_handler=handler)
        await self.send_json({"type": "final_result", "data": {"output": result.output}})
        await self.send_json({"type": "complete", "data": {}})


application = ProtocolTypeRouter({"websocket": URLRouter([path("ws/floor/", FloorConsumer.as_asgi())])})

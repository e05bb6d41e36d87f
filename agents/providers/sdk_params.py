"""The OpenAI SDK's chat request parameters, made ready to send in one walk instead of the SDK's typed one.

Before every `chat.completions.create` the SDK passes its ~40 parameters through `async_maybe_transform`, which
walks them against their TypedDicts to rename aliased keys and format dates or files — and walks each message
once per member of the union it belongs to (six kinds of message, each a TypedDict with unions inside). For the
chat parameters nothing is renamed or formatted (no `PropertyInfo` anywhere in their types), so what that walk
does for them is: drop the parameters given as `NOT_GIVEN`/`omit`, turn pydantic models into their JSON dicts
and other iterables into lists. Under cProfile it was ~2.5 ms a request (bench/run_cost.py, two requests a run),
for output equal to its input.

No setting of the SDK or of pydantic-ai skips it, so it is hand-written: `ready_to_send` does those three
things in one plain walk, for the chat-completion parameters only; every other call keeps the SDK's transform.
`tests/providers/test_sdk_params.py` holds it to the SDK: it fails if an SDK upgrade puts an alias or a format
anywhere in the chat parameters' types, and compares both on requests pydantic-ai really builds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pydantic
from openai import NotGiven, Omit
from openai.resources.chat.completions import completions
from openai.types.chat import completion_create_params

CHAT_PARAMS = (completion_create_params.CompletionCreateParamsStreaming,
               completion_create_params.CompletionCreateParamsNonStreaming)

_sdk_transform = completions.async_maybe_transform


def ready_to_send(data: Any) -> Any:
    """The SDK's transform for types with no alias or format: omitted values dropped from mappings, models as
    their JSON dicts (set fields only, as the SDK dumps them), lists kept and other iterables listed."""
    if isinstance(data, Mapping):
        return {key: ready_to_send(value) for key, value in data.items()
                if not isinstance(value, NotGiven | Omit)}
    if isinstance(data, list):
        return [ready_to_send(item) for item in data]
    if isinstance(data, str | bytes | int | float | bool) or data is None:
        return data
    if isinstance(data, pydantic.BaseModel):
        return data.model_dump(exclude_unset=True, mode="json", exclude=getattr(data, "__api_exclude__", None))
    if isinstance(data, Iterable):
        return [ready_to_send(item) for item in data]
    return data


async def chat_params_or_sdk(data: object, expected_type: object) -> Any:
    if expected_type in CHAT_PARAMS:
        try:
            return ready_to_send(data)
        except RecursionError:
            # A tool schema nested hundreds deep (an MCP server's, say): the SDK's walk does not descend into a
            # schema's values, so it still sends what this walk cannot.
            pass
    return await _sdk_transform(data, expected_type)


_installed = False


def install() -> None:
    """Once per process: the chat-completions resource module's transform becomes `chat_params_or_sdk` (it
    imported the SDK's function by name, so the name there is what is replaced)."""
    global _installed
    if _installed:
        return
    _installed = True
    completions.async_maybe_transform = chat_params_or_sdk

"""`generate_speech`: read a text aloud as one clip with the speech provider the author chose.

One call, in this order, so nothing is paid for a clip that could not be kept:
1. the text, the voice and the instructions are checked (the model's own mistakes: retries);
2. the organization's generated-media quota (`generated_media.store.check_quota`): full → a result;
3. the budget is asked with the clip's price (characters × the catalog's dated price per million,
   `generated_media.metering.check_price`): a clip that would take the run past a cap → a result;
4. the text is split at a paragraph, a sentence or a word to the model's limit (`audio.split`) and each chunk
   is spoken in order (`clients.speak`, through the outbound guard, SDK retries off); each chunk is written to
   the ledger (`metered.record`, label `text_to_speech`) as its audio returns, so a failure midway still
   records what was spoken;
5. the chunks are joined (MP3 concatenated, WAV as 24 kHz PCM under one header) and the clip goes to the
   generated-media store (and to `/workspace/output` when the run has a workspace).

Failures go to whoever can fix them: an empty or too long text, a voice outside the allowed ones, a text the
provider refused, a rate limit or a provider that is down go back to the model; a rejected key, an unknown
default voice (the author's), a content refusal, a timeout, a full quota and a spent budget are results.
Only the provider's status and error code are logged or shown, never its text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_ai import RunContext
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from agenticos import netguard
from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, KeyRequirement, ToolDecl
from capabilities.text_to_speech import audio, catalog, clients
from media import metering, outbound, store

logger = logging.getLogger(__name__)

LEDGER_KIND = "text_to_speech"
MAX_INSTRUCTIONS = 1000
TIMEOUT_SECONDS = 120
MEDIA_TYPES = {"mp3": "audio/mpeg", "wav": "audio/wav"}
CONTENT_POLICY_CODES = frozenset({"content_policy_violation", "moderation_blocked", "content_filter", "SAFETY",
                                  "PROHIBITED_CONTENT", "BLOCKLIST", "OTHER"})
VOICE_CODES = frozenset({"voice_not_found", "invalid_voice", "voice_does_not_exist", "voice_id_does_not_exist"})


class VoiceChoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=60, description="A catalog voice, or an ElevenLabs voice id.")
    note: str = Field(default="", max_length=120, description="Who this voice is (an account voice has no "
                                                                 "catalog description).")


class TextToSpeechConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = Field(default="openai", json_schema_extra={"enum": catalog.CATALOG.provider_ids()},
                          description="Who speaks: OpenAI, ElevenLabs (voices of your account) or Google Gemini.")
    model: str = Field(default="gpt-4o-mini-tts", json_schema_extra={"enum": catalog.CATALOG.model_ids()},
                       description="The speech model, from the provider's catalog entries.")
    voice: str | None = Field(default=None, max_length=60,
                              description="The agent's usual voice. Unset: the model's first voice. ElevenLabs: a "
                                          "voice id of your account (required).")
    voices: list[VoiceChoice] = Field(default_factory=list, max_length=20,
                                      description="The other voices the agent may switch to per clip. Empty: any "
                                                  "voice of the model (ElevenLabs: any voice of the account).")
    output_format: Literal["mp3", "wav"] | None = Field(default=None,
                                                        description="Unset: the provider's first (Gemini: wav).")
    max_characters: int = Field(default=5000, ge=1, le=10_000, description="The most text one call may speak.")

    @model_validator(mode="after")
    def _fits_the_catalog(self) -> TextToSpeechConfig:
        entry = catalog.provider(self.provider)
        if entry is None:
            raise ValueError(f"provider must be one of {catalog.CATALOG.provider_ids()}")
        if catalog.model(self.provider, self.model) is None:
            raise ValueError(f"model must be one of {[m.id for m in entry.models]} for provider {self.provider}")
        if self.output_format is not None and self.output_format not in entry.formats:
            raise ValueError(f"output_format must be one of {entry.formats} for provider {self.provider}")
        named = [self.voice] if self.voice else []
        named += [choice.id for choice in self.voices]
        if entry.account_voices:
            if not self.voice:
                raise ValueError(f"voice: {entry.name} speaks only with a voice of your account; name its voice id")
            bad = [v for v in named if not _account_voice_ok(v)]
            if bad:
                raise ValueError(f"voice ids {bad} are not {entry.name} voice ids (letters and digits)")
        else:
            known = {v.id for v in entry.voices_of(self.model)}
            unknown = [v for v in named if v not in known]
            if unknown:
                raise ValueError(f"voices {unknown} are not voices of {self.model}; it has {sorted(known)}")
        if len(set(named)) != len(named):
            raise ValueError("voices lists a voice twice (or repeats voice)")
        return self

    @property
    def entry(self) -> catalog.ProviderEntry:
        entry = catalog.provider(self.provider)
        assert entry is not None  # validated
        return entry

    @property
    def format(self) -> str:
        return self.output_format or self.entry.formats[0]

    @property
    def default_voice(self) -> str:
        return self.voice or self.entry.voices_of(self.model)[0].id

    def allowed_voices(self) -> list[tuple[str, str]] | None:
        """(id, description) of every voice the model may choose; None: any account voice id."""
        described = {v.id: v.description for v in self.entry.voices}
        if self.voices:
            chosen = [(self.default_voice, described.get(self.default_voice, "the usual voice"))]
            return chosen + [(c.id, c.note or described.get(c.id, "")) for c in self.voices
                             if c.id != self.default_voice]
        if self.entry.account_voices:
            return None
        return [(v.id, v.description) for v in self.entry.voices_of(self.model)]


def _account_voice_ok(voice: str) -> bool:
    import re

    return re.fullmatch(catalog.ACCOUNT_VOICE_PATTERN, voice) is not None


@dataclass
class _SpeechState:
    config: TextToSpeechConfig
    reveal: Any


def _state(ctx: RunContext[Any]) -> _SpeechState:
    state: _SpeechState = ctx.deps.scratch["text_to_speech"]
    return state


def _workspace_for_output(workspace_id: str | None) -> str | None:
    from capabilities.image_generation.capability import _workspace_for_output as stored_workspace

    return stored_workspace(workspace_id)


def _chunk_cost(config: TextToSpeechConfig, price: catalog.Price, chunk: str,
                spoken: clients.Spoken) -> tuple[Decimal, int, int]:
    """(cost, input tokens, output tokens) of one spoken chunk. Gemini is billed for what it returned: its
    text tokens and 25 audio tokens per second of the PCM it sent; everyone else by the character."""
    if config.entry.api == "gemini":
        by_tokens = catalog.gemini_price(price, input_tokens=spoken.input_tokens,
                                         audio_seconds=audio.pcm_seconds(spoken.audio))
        if by_tokens is not None:
            cost, audio_tokens = by_tokens
            return cost, spoken.input_tokens, audio_tokens
    return catalog.characters_price(price, len(chunk)), 0, 0


def _record(meter: Any, config: TextToSpeechConfig, cost: Decimal, input_tokens: int, output_tokens: int) -> None:
    from governance import metered

    metered.record(meter, model=f"{config.provider}:{config.model}", cost=cost, partial=False,
                   input_tokens=input_tokens, output_tokens=output_tokens, chat=False)


def _failure(ctx: RunContext[Any], exc: Exception, *, voice: str, spoken: int, total: int) -> str:
    """How a provider failure reaches the model: only its status and code, never its text."""
    config = _state(ctx).config
    done = (f" {spoken} of {total} parts had been spoken and were billed; nothing was stored." if spoken
            else " Nothing was spoken.")
    refused = netguard.refusal_in(exc)
    if refused is not None:
        return failures.refuse(f"The speech provider's address was refused: {refused}")
    if isinstance(exc, outbound.Timeout):
        logger.info("generate_speech: the provider timed out")
        return failures.bad_news(f"The speech provider did not answer within {TIMEOUT_SECONDS} seconds.{done}")
    if not isinstance(exc, outbound.ProviderError):
        logger.info("generate_speech: provider unreachable (%s)", type(exc).__name__)
        return failures.transient(ctx, f"The speech provider could not be reached.{done}")
    logger.info("generate_speech: provider answered %s", exc.where)
    if (exc.rejected_key or exc.status == 403) and exc.code not in VOICE_CODES:
        return failures.refuse(f"The speech provider rejected this agent's API key ({exc.where}). Its owner "
                               f"must enter a valid key.{done}")
    if exc.code in VOICE_CODES or (config.entry.account_voices and exc.status == 404):
        if voice == config.default_voice:
            return failures.refuse(f"The speech provider does not know this agent's voice {voice!r} "
                                   f"({exc.where}); its author must choose another.{done}")
        return failures.retry(ctx, f"The speech provider does not know the voice {voice!r} ({exc.where}); "
                                   "choose another allowed voice.")
    if exc.code in CONTENT_POLICY_CODES:
        return failures.bad_news(f"The speech provider's content policy refused this text ({exc.where}).{done} "
                                 "Tell the person.")
    if exc.status == 429 or exc.status >= 500:
        return failures.transient(ctx, f"The speech provider is busy or down ({exc.where}).{done}")
    return failures.retry(ctx, f"The speech provider refused this text ({exc.where}).{done} Rephrase or shorten "
                               "it and call again.")


def _check_arguments(ctx: RunContext[Any], text: str, voice: str | None, instructions: str | None) -> str | None:
    config = _state(ctx).config
    if not text.strip() or len(text) > config.max_characters:
        return failures.retry(ctx, f"text must be 1-{config.max_characters} characters to speak in one clip; "
                                   "split a longer text over several calls.")
    if instructions and len(instructions) > MAX_INSTRUCTIONS:
        return failures.retry(ctx, f"instructions must be at most {MAX_INSTRUCTIONS} characters.")
    allowed = config.allowed_voices()
    chosen = voice or config.default_voice
    if allowed is None and not _account_voice_ok(chosen):
        return failures.retry(ctx, f"voice {chosen!r} is not a voice id of this account (letters and digits).")
    if allowed is not None and chosen not in {v for v, _ in allowed}:
        return failures.retry(ctx, f"voice must be one of {[v for v, _ in allowed]}.")
    return None


async def generate_speech(ctx: RunContext[Any], text: str, voice: str | None = None,
                          instructions: str | None = None) -> str | dict[str, Any]:
    """Read a text aloud as one audio clip, with this agent's speech provider.

    Use it when the person asks to hear something, for a voice-over, a spoken summary or an audio version of a
    text; write the exact words to say, not a description of them. Each call costs real money (by the
    character) and is stored in the organization's generated files.

    Args:
        text: The exact words to speak (up to this agent's limit of characters; a long text becomes one clip).
        voice: Which voice speaks; unset: the agent's usual voice.
        instructions: How to say it — tone, pace, accent (at most 1000 characters; only some models read
            them).

    Returns:
        The stored clip: `url` (the person hears it from there), `filename`, `name`, `media_type` and, when
        this agent has a workspace, `workspace_path` under /workspace/output; or a sentence saying why nothing
        was spoken.
    """
    from agents.run_handle import on_db_thread
    from governance import budgets, metered

    wrong = _check_arguments(ctx, text, voice, instructions)
    if wrong is not None:
        return wrong
    state = _state(ctx)
    config, deps = state.config, ctx.deps
    chosen = voice or config.default_voice
    model = catalog.model(config.provider, config.model)
    price = catalog.price_on(model, timezone.now().date()) if model else None
    if model is None or price is None:  # the catalog changed under a published binding
        return failures.refuse(f"This deployment no longer offers the speech model {config.model}.")
    text = text.strip()
    try:
        await on_db_thread(store.check_quota, deps.organization_id)
    except store.QuotaExceeded as exc:
        return failures.refuse(str(exc))
    meter = await on_db_thread(metered.for_run, deps.run_id, deps.organization_id, kind=LEDGER_KIND)
    estimate = catalog.characters_price(price, len(text))
    try:
        await on_db_thread(metering.check_price, meter, estimate)
    except budgets.BudgetExceeded as exc:
        return failures.refuse(metering.refusal(exc, "clip", estimate))
    chunks = audio.split(text, model.max_input_characters)
    request = clients.Request(entry=config.entry, model=model, api_key=await on_db_thread(state.reveal),
                              voice=chosen, output_format=config.format, instructions=(instructions or "").strip(),
                              timeout=TIMEOUT_SECONDS)
    spoken: list[bytes] = []
    for chunk in chunks:
        try:
            answer = await clients.speak(request, chunk)
        except Exception as exc:  # noqa: BLE001  (every provider failure is routed by _failure)
            return _failure(ctx, exc, voice=chosen, spoken=len(spoken), total=len(chunks))
        cost, tokens_in, tokens_out = _chunk_cost(config, price, chunk, answer)
        await on_db_thread(_record, meter, config, cost, tokens_in, tokens_out)
        if config.format == "mp3" and not audio.looks_like_mp3(answer.audio):
            return failures.bad_news("The speech provider's answer was not MP3 audio. It was billed; nothing was "
                                     "stored.")
        spoken.append(answer.audio)
    data = audio.join(spoken, config.format)
    workspace_id = await on_db_thread(_workspace_for_output, deps.scratch.get("workspace_id"))
    media = await on_db_thread(
        store.save, organization_id=deps.organization_id, run_id=deps.run_id,
        conversation_id=deps.conversation_id, kind="speech", data=data, media_type=MEDIA_TYPES[config.format],
        name=store.display_name("speech", text), provider=config.provider, model=config.model,
        workspace_id=workspace_id)
    result: dict[str, Any] = store.file_entry(media)
    if media.workspace_path:
        result["workspace_path"] = media.workspace_path
    return result


def _voice_schema(config: TextToSpeechConfig) -> dict[str, Any]:
    allowed = config.allowed_voices()
    if allowed is None:
        return {"type": "string", "pattern": catalog.ACCOUNT_VOICE_PATTERN, "default": config.default_voice,
                "description": "A voice id of this account; unset: the usual voice."}
    described = "; ".join(f"{v}: {note}" if note else v for v, note in allowed)
    return {"type": "string", "enum": [v for v, _ in allowed], "default": config.default_voice,
            "description": f"Which voice speaks (unset: {config.default_voice}). {described}."}


def _prepare(config: TextToSpeechConfig) -> Any:
    """The voice argument as this binding allows it: an enum of its voices with the usual one as default."""

    async def prepare(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
        schema = dict(tool_def.parameters_json_schema)
        properties = dict(schema.get("properties") or {})
        properties["voice"] = _voice_schema(config)
        if not config.entry.models or not next(m for m in config.entry.models if m.id == config.model
                                                ).reads_instructions:
            properties.pop("instructions", None)
        schema["properties"] = properties
        return replace(tool_def, parameters_json_schema=schema)

    return prepare


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, TextToSpeechConfig)
    assert ctx.secret_value is not None  # the registry skips a binding without its key before build
    ctx.deps.scratch["text_to_speech"] = _SpeechState(ctx.config, ctx.secret_value)
    return [FunctionToolset([Tool(generate_speech, prepare=_prepare(ctx.config))], max_retries=1)]


CAPABILITY = Capability(
    id="text_to_speech",
    name="Text to speech",
    category="analysis",
    description="Reads a text aloud as an audio clip with the speech provider you choose.",
    offers="reading texts aloud as audio clips (voice-overs, spoken summaries)",
    examples=(
        "Read this announcement aloud so I can post it as a voice message.",
        "Make an audio version of the summary in a calm voice.",
        "Record the intro line for our podcast in two voices.",
    ),
    never_does=(
        "It never speaks once the organization's generated files fill their quota or the clip's price would "
        "pass a budget, never uses a voice outside the allowed ones, and never shows a clip outside the "
        "organization except to the embed visitor of its conversation."
    ),
    tools=(ToolDecl.from_function(generate_speech, side_effecting=True),),
    key=KeyRequirement(kind="api_key", description="The speech provider's API key (OpenAI, ElevenLabs or Google)"),
    config_model=TextToSpeechConfig,
    voice="live",
    build=build,
)

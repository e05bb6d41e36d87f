"""What a model call cost: genai-prices on the response (or the usage an endpoint reported), one rule for every
metered path — the runner's BudgetGuard, `governance.metered`, evaluations, knowledge, delegates, transcription.

A model the price list does not know is recorded at zero and marked partial (the ledger says so, never guesses);
the offline demo model (a model object with `costs_nothing = True`) is free.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any


def is_free(model: Any) -> bool:
    """The offline demo model costs nothing; anything else is priced (or marked partial)."""
    return bool(getattr(model, "costs_nothing", False))


def price(response: Any, *, free: bool) -> tuple[Decimal, bool]:
    """(cost, is_partial) of a pydantic-ai ModelResponse."""
    if free:
        return Decimal("0"), False
    usage = getattr(response, "usage", None)
    # pydantic-ai prices every response its models return (`fill_response_cost`: the same genai-prices lookup, or
    # the cost a gateway reported, which it never overwrites) into `usage.cost`; asking `cost()` again priced it
    # twice — ~2 % of a runs worker's loop (bench/run_cost.py, cProfile). A response built elsewhere has no cost
    # filled in, and one missing some usage is partial: both take the lookup below.
    if usage is not None and getattr(usage, "cost", None) is not None and not usage.unmeasured_requests:
        return Decimal(str(usage.cost)), False
    try:
        return Decimal(str(response.cost().total_price)), False
    except Exception:  # genai-prices does not know this model, or usage is missing
        return Decimal("0"), True


def price_audio(model: str, provider: str, usage: dict[str, Any] | None) -> tuple[Decimal, bool]:
    """(cost, is_partial) of a transcription from the usage the endpoint reported (token-billed models report
    tokens; a duration-billed one, or none at all, is recorded at zero and marked partial)."""
    if not usage or usage.get("type", "tokens") != "tokens":
        return Decimal("0"), True
    try:
        from genai_prices import Usage, calc_price

        details = usage.get("input_token_details") or {}
        audio = int(details.get("audio_tokens") or 0)
        text_in = int(details.get("text_tokens") or max(int(usage.get("input_tokens") or 0) - audio, 0))
        priced = calc_price(Usage(input_tokens=text_in + audio, input_audio_tokens=audio,
                                  output_tokens=int(usage.get("output_tokens") or 0)),
                            model_ref=model, provider_id=provider)
        return Decimal(str(priced.total_price)), False
    except Exception:  # genai-prices does not know this model, or the usage is not what it expects
        return Decimal("0"), True


def price_realtime(model: str, provider: str, usage: dict[str, Any] | None) -> tuple[Decimal, bool]:
    """(cost, is_partial) of one realtime response (a voice call's `response.done` usage): text and audio
    tokens in and out, cached input apart, priced by genai-prices, which lists the realtime models with their
    audio rates. Missing usage or a model it does not know: zero, marked partial."""
    if not usage:
        return Decimal("0"), True
    try:
        from genai_prices import Usage, calc_price

        into = usage.get("input_token_details") or {}
        out = usage.get("output_token_details") or {}
        cached = int(into.get("cached_tokens") or 0)
        cached_audio = int((into.get("cached_tokens_details") or {}).get("audio_tokens") or 0)
        priced = calc_price(Usage(
            input_tokens=int(usage.get("input_tokens") or 0), input_audio_tokens=int(into.get("audio_tokens") or 0),
            cache_read_tokens=cached, cache_audio_read_tokens=cached_audio,
            output_tokens=int(usage.get("output_tokens") or 0), output_audio_tokens=int(out.get("audio_tokens") or 0),
        ), model_ref=model, provider_id=provider)
        return Decimal(str(priced.total_price)), False
    except Exception:  # genai-prices does not know this model, or the usage is not what it expects
        return Decimal("0"), True

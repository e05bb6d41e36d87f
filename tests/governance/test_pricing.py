"""governance.pricing.price: the one rule every metered path prices a model response by."""

from __future__ import annotations

from decimal import Decimal

from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.usage import RequestUsage

from governance.pricing import price


def response(model: str = "gpt-4o", **usage) -> ModelResponse:
    return ModelResponse(parts=[TextPart("hi")], model_name=model, provider_name="openai",
                         usage=RequestUsage(input_tokens=1200, output_tokens=300, **usage))


def test_a_known_model_is_priced_by_genai_prices():
    expected = response().cost().total_price
    assert expected > 0
    assert price(response(), free=False) == (Decimal(str(expected)), False)


def test_the_cost_the_model_layer_filled_in_is_the_cost_and_is_not_looked_up_again(monkeypatch):
    """pydantic-ai fills `usage.cost` on every response (its genai-prices lookup, or a gateway's reported cost,
    which it never overwrites): that is the cost, and no second lookup is made."""
    def looked_up(self):
        raise AssertionError("priced twice")

    monkeypatch.setattr(ModelResponse, "cost", looked_up)
    assert price(response(cost=Decimal("0.4217")), free=False) == (Decimal("0.4217"), False)


def test_an_unknown_model_or_missing_usage_is_zero_and_partial():
    assert price(response("no-such-model-xyz"), free=False) == (Decimal("0"), True)
    # A request that reported no usage: whatever was filled in is a subtotal, so the cost is partial.
    assert price(response(cost=Decimal("0.01"), unmeasured_requests=1), free=False)[1] is True


def test_the_offline_demo_model_is_free():
    assert price(response(cost=Decimal("0.4217")), free=True) == (Decimal("0"), False)

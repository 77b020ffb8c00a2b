"""A provider switched mid-call (``Engine.set_provider``): each turn is costed at the prices of the provider and
model that served it, and the call's total is their sum (issue 36)."""

from __future__ import annotations

from anthropic_fake import AnthropicFake
from fakebase import Reply
from harness import ToolBox, make_engine, provider_config
from openai_chat_fake import OpenAIChatFake

from engine.config.models.prices import Prices
from engine.events import CallUsage, UsageUpdated

CHEAP = Prices(input_per_mtok=1.0, output_per_mtok=2.0)
#: Cache reads and writes (an hour's too) at the input price (else Anthropic's documented multiples would apply).
DEAR = Prices(
    input_per_mtok=100.0,
    cached_input_per_mtok=100.0,
    cache_write_per_mtok=100.0,
    cache_write_1h_per_mtok=100.0,
    output_per_mtok=200.0,
)


async def test_each_turn_is_priced_by_the_provider_that_served_it() -> None:
    oa = OpenAIChatFake([Reply(text="Hello from OpenAI.")])
    an = AnthropicFake([Reply(text="Hello from Anthropic.")])
    async with oa, an:
        engine = make_engine({"oa": oa, "an": an}, ToolBox(), context_provider="oa", prices=CHEAP)
        engine.settings.providers["an"] = provider_config(an, prices=DEAR, model="dear-model")
        async with engine:
            sub = engine.bus.subscribe(types={UsageUpdated.type, CallUsage.type})
            call = await engine.start_call("desk")
            await engine.user_said(call.call_id, "Hi?")
            await engine.set_provider(call.call_id, "an")
            await engine.user_said(call.call_id, "And you?")
            await engine.end_call(call.call_id)
            events = sub.drain()
    assert (oa.errors, an.errors) == ([], [])
    first, second = (e for e in events if isinstance(e, UsageUpdated))
    # both fakes report 120 input and 30 output tokens per request
    assert (first.provider, first.model, first.turn) == ("oa", "test-model", 1)
    assert first.cost == round((120 * 1.0 + 30 * 2.0) / 1e6, 9)
    assert (second.provider, second.model, second.turn) == ("an", "dear-model", 2)
    assert second.cost == round((120 * 100.0 + 30 * 200.0) / 1e6, 9)
    [total] = [e for e in events if isinstance(e, CallUsage)]
    assert total.cost == round(first.cost + second.cost, 9)

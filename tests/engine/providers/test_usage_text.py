"""Usage and cost of text providers: each fake answers with its API's own usage fields (shapes checked against the
vendor SDK's response types), and the engine publishes ``usage.updated`` per turn and ``call.usage`` at the end,
priced from ``providers.<name>.prices``, and counts them in Prometheus."""

from __future__ import annotations

from typing import Any

import pytest
from fakebase import Reply
from fakes import FAKES
from harness import ToolBox, make_engine

from engine.config.models.prices import Prices
from engine.events import CallUsage, UsageUpdated

TYPES = sorted(FAKES)
PRICES = Prices(input_per_mtok=1.0, cached_input_per_mtok=0.5, output_per_mtok=2.0)
#: Every fake reports 120 input tokens (20 of them cached, except Ollama's), 30 output, per request.
CACHED = {"ollama": 0}


async def _call(ptype: str, stream: bool) -> tuple[Any, list[Any], str]:
    fake = FAKES[ptype]([Reply(calls=[("get_weather", {"city": "Paris"})]), Reply(text="18 degrees.")])
    async with fake:
        engine = make_engine({"p": fake}, ToolBox(), prices=PRICES, options={"stream": stream})
        async with engine:
            sub = engine.bus.subscribe(types={UsageUpdated.type, CallUsage.type})
            call = await engine.start_call("desk")
            await engine.user_said(call.call_id, "Weather in Paris?")
            await engine.end_call(call.call_id)
            events = sub.drain()
            metrics = engine.metrics.render().decode()
    assert fake.errors == [], fake.errors
    return fake, events, metrics


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("ptype", TYPES)
async def test_turn_usage_and_cost_from_the_providers_own_fields(ptype: str, stream: bool) -> None:
    _, events, metrics = await _call(ptype, stream)
    cached = CACHED.get(ptype, 20)
    updated = [e for e in events if isinstance(e, UsageUpdated)]
    assert len(updated) == 1  # one turn: both requests of its tool loop summed
    u = updated[0]
    assert (u.turn, u.provider, u.model, u.priced) == (1, "p", "test-model", True)
    assert (u.usage.input_tokens, u.usage.cached_input_tokens, u.usage.output_tokens) == (240, 2 * cached, 60)
    if ptype == "anthropic":  # its cache writes are counted apart from the uncached input, an hour's apart again
        assert (u.usage.cache_write_tokens, u.usage.cache_write_1h_tokens) == (20, 8)
    want = ((240 - 2 * cached) * 1.0 + 2 * cached * 0.5 + 60 * 2.0) / 1e6
    if ptype == "anthropic":  # its cache writes at Anthropic's documented 1.25x the input price, an hour's at 2x
        want += (12 * (1.25 - 1.0) + 8 * (2.0 - 1.0)) / 1e6
    assert u.cost == pytest.approx(want) and u.total_cost == pytest.approx(want)
    assert u.total == u.usage
    final = [e for e in events if isinstance(e, CallUsage)]
    assert len(final) == 1 and final[0].usage == u.usage and final[0].cost == pytest.approx(want)
    assert (final[0].input_tokens, final[0].output_tokens) == (240, 60)
    assert 'ai_agent_provider_tokens_total{kind="input",model="test-model",provider="p"} 240.0' in metrics
    assert 'ai_agent_provider_tokens_total{kind="output",model="test-model",provider="p"} 60.0' in metrics
    assert 'ai_agent_provider_cost_usd_total{model="test-model",provider="p"}' in metrics
    if ptype == "anthropic":
        assert 'ai_agent_provider_tokens_total{kind="cache_write_1h",model="test-model",provider="p"} 8.0' in metrics


async def test_openai_chat_streams_ask_for_the_usage_chunk() -> None:
    fake, events, _ = await _call("openai_chat", True)
    assert all(r["stream_options"] == {"include_usage": True} for r in fake.requests)
    assert [e.usage.input_tokens for e in events if isinstance(e, UsageUpdated)] == [240]


async def test_running_total_over_turns_and_no_price_means_no_cost() -> None:
    fake = FAKES["anthropic"]([Reply(text="One."), Reply(text="Two.")])
    async with fake:
        engine = make_engine({"p": fake}, ToolBox(), model="a-model-with-no-shipped-price")
        async with engine:
            sub = engine.bus.subscribe(types={UsageUpdated.type})
            call = await engine.start_call("desk")
            await engine.user_said(call.call_id, "one")
            await engine.user_said(call.call_id, "two")
            events = sub.drain()
    assert [(e.turn, e.usage.input_tokens, e.total.input_tokens) for e in events] == [(1, 120, 120), (2, 120, 240)]
    assert all(not e.priced and e.cost == 0 and e.total_cost == 0 for e in events)

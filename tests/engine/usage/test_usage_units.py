"""The usage readers of each provider's own fields, the price table and the cost arithmetic (engine.usage)."""

from __future__ import annotations

import datetime

import pytest
from pydantic import ValidationError

from engine.config.models import ProviderConfig
from engine.config.models.prices import Prices
from engine.core.metrics import Metrics
from engine.events.bus import EventBus
from engine.events.usage import BudgetAlert, UsageUpdated
from engine.usage import report as usage
from engine.usage.meter import Budget, UsageMeter
from engine.usage.prices import cost_of, default_prices, prices_for
from engine.usage.report import UsageReport


def test_openai_realtime_splits_text_audio_and_cache() -> None:
    r = usage.openai_realtime(
        {
            "total_tokens": 821,
            "input_tokens": 789,
            "output_tokens": 32,
            "input_token_details": {
                "text_tokens": 313,
                "audio_tokens": 476,
                "cached_tokens": 640,
                "cached_tokens_details": {"text_tokens": 256, "audio_tokens": 384},
            },
            "output_token_details": {"text_tokens": 9, "audio_tokens": 23},
        },
        1.23456,
        0.5,
    )
    assert r == UsageReport(
        input_tokens=789,
        output_tokens=32,
        cached_input_tokens=640,
        input_audio_tokens=476 - 384,
        output_audio_tokens=23,
        input_audio_s=1.235,
        output_audio_s=0.5,
    )


def test_anthropic_adds_cache_reads_and_writes_to_input() -> None:
    r = usage.anthropic(
        {"input_tokens": 50, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200, "output_tokens": 7}
    )
    assert r == UsageReport(input_tokens=1250, output_tokens=7, cached_input_tokens=1000, cache_write_tokens=200)


def test_anthropic_counts_one_hour_cache_writes_apart() -> None:
    r = usage.anthropic(
        {
            "input_tokens": 50,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 200,
            "cache_creation": {"ephemeral_5m_input_tokens": 150, "ephemeral_1h_input_tokens": 50},
            "output_tokens": 7,
        }
    )
    assert r == UsageReport(input_tokens=250, output_tokens=7, cache_write_tokens=200, cache_write_1h_tokens=50)
    # a breakdown larger than the total it breaks down is not believed beyond that total
    odd = usage.anthropic({"cache_creation_input_tokens": 10, "cache_creation": {"ephemeral_1h_input_tokens": 99}})
    assert odd is not None and (odd.cache_write_tokens, odd.cache_write_1h_tokens) == (10, 10)


def test_gemini_live_counts_audio_by_modality_and_thoughts_as_output() -> None:
    r = usage.gemini(
        {
            "promptTokenCount": 300,
            "cachedContentTokenCount": 100,
            "responseTokenCount": 80,
            "thoughtsTokenCount": 20,
            "toolUsePromptTokenCount": 5,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 100}, {"modality": "AUDIO", "tokenCount": 200}],
            "cacheTokensDetails": [{"modality": "AUDIO", "tokenCount": 60}],
            "responseTokensDetails": [{"modality": "AUDIO", "tokenCount": 70}, {"modality": "TEXT", "tokenCount": 10}],
        }
    )
    assert r == UsageReport(
        input_tokens=305, output_tokens=100, cached_input_tokens=100, input_audio_tokens=140, output_audio_tokens=70
    )


def test_chat_ollama_and_malformed_fields() -> None:
    chat = usage.openai_chat(
        {"prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": True}}
    )
    assert chat == UsageReport(input_tokens=10, output_tokens=4)  # a boolean is no count
    assert usage.ollama({"done": True}) is None  # a final object without counts reports nothing
    assert usage.ollama({"prompt_eval_count": 12, "eval_count": 3}) == UsageReport(12, 3)
    assert usage.openai_responses(None) is None and usage.gemini([1]) is None


def test_cost_uses_each_price_and_falls_back_to_the_text_price() -> None:
    u = UsageReport(
        input_tokens=1_000_000,
        output_tokens=500_000,
        cached_input_tokens=200_000,
        input_audio_tokens=300_000,
        output_audio_tokens=100_000,
    )
    full = Prices(
        input_per_mtok=2,
        cached_input_per_mtok=1,
        audio_input_per_mtok=10,
        output_per_mtok=4,
        audio_output_per_mtok=20,
        per_minute=0.5,
    )
    assert cost_of(u, full, session_s=120) == pytest.approx(0.5 * 2 + 0.2 * 1 + 0.3 * 10 + 0.4 * 4 + 0.1 * 20 + 1.0)
    assert cost_of(u, Prices(input_per_mtok=2, output_per_mtok=4)) == pytest.approx(1.0 * 2 + 0.5 * 4)


def test_shipped_prices_are_dated_and_match_snapshots_only() -> None:
    mini = default_prices("openai_chat", "gpt-5-mini")
    assert mini is not None and (mini.input_per_mtok, mini.cached_input_per_mtok) == (0.25, 0.025)
    assert default_prices("openai_chat", "gpt-5-mini-2025-08-07") == mini
    assert default_prices("openai_chat", "gpt-5-mini-fast") is None  # another model, not a snapshot
    rt = default_prices("openai_realtime", "gpt-realtime-2")
    assert rt is not None and (rt.output_per_mtok, rt.audio_output_per_mtok) == (24.0, 64.0)
    assert default_prices("openai_realtime", "gpt-realtime-2.1") is None  # not gpt-realtime-2's prices
    claude = default_prices("anthropic", "claude-sonnet-4-5-20250929")
    assert claude is not None and claude.cached_input_per_mtok == 0.30
    dg = default_prices("deepgram_agent", "nova-3")
    assert dg is not None and dg.per_minute > 0 and default_prices("ollama", "qwen3") is None
    # not read on the vendor's own page: left to the operator's ``prices``
    assert default_prices("openai_chat", "gpt-4o-mini") is None and default_prices("gemini", "gemini-2.5-flash") is None
    assert default_prices("elevenlabs_agent", None) is None
    for p in (mini, rt, claude, dg):
        assert p.source is not None and isinstance(p.prices_as_of, datetime.date)


def test_configured_prices_win_and_bad_ones_name_the_field() -> None:
    cfg = ProviderConfig.model_validate({"type": "openai_chat", "model": "gpt-4o", "prices": {"input_per_mtok": 9}})
    got = prices_for(cfg)
    assert got is not None and got.input_per_mtok == 9 and got.output_per_mtok == 0
    with pytest.raises(ValidationError, match=r"prices\.output_per_mtok"):
        ProviderConfig.model_validate({"type": "openai_chat", "model": "m", "prices": {"output_per_mtok": -1}})
    with pytest.raises(ValidationError, match=r"prices\.input_per_mtoken"):
        ProviderConfig.model_validate({"type": "openai_chat", "model": "m", "prices": {"input_per_mtoken": 1}})


def test_per_minute_cost_grows_with_the_session_and_the_guard_fires_once_per_level() -> None:
    now = [100.0]
    bus = EventBus()
    sub = bus.subscribe()
    reached: list[str] = []
    meter = UsageMeter(
        call_id="c",
        provider="dg",
        model=None,
        prices=Prices(per_minute=0.6),
        metrics=Metrics(),
        bus=bus,
        context="desk",
        budget=Budget(max_cost=1.0, on_budget="ask_operator"),
        on_reached=reached.append,
        clock=lambda: now[0],
    )
    now[0] += 60  # 0.60 $
    meter.add(UsageReport(input_audio_s=1.0))
    now[0] += 30  # 0.90 $: 80 % passed
    meter.add(UsageReport(input_audio_s=1.0))
    now[0] += 10  # 1.00 $: used up
    meter.add(UsageReport(input_audio_s=1.0))
    now[0] += 60
    meter.add(UsageReport(input_audio_s=1.0))
    events = sub.drain()
    costs = [round(e.cost, 6) for e in events if isinstance(e, UsageUpdated)]
    assert costs == [0.6, 0.3, 0.1, 0.6]
    alerts = [(e.level, e.action) for e in events if isinstance(e, BudgetAlert)]
    assert alerts == [("warning", None), ("reached", "ask_operator")]
    assert reached == ["ask_operator"]
    now[0] += 60
    assert meter.final().cost == pytest.approx(2.2)


def test_cache_writes_cost_their_own_price_and_anthropics_documented_rule_fills_it_in() -> None:
    # 1.25 M input tokens: 1 M read from the cache, 200 k written to it, 50 k neither
    u = UsageReport(input_tokens=1_250_000, cached_input_tokens=1_000_000, cache_write_tokens=200_000)
    p = Prices(input_per_mtok=3.0, cached_input_per_mtok=0.3, cache_write_per_mtok=3.75)
    assert cost_of(u, p) == pytest.approx(0.05 * 3.0 + 1.0 * 0.3 + 0.2 * 3.75)
    assert cost_of(u, Prices(input_per_mtok=3.0)) == pytest.approx(1.25 * 3.0)  # no rule: writes and reads as input
    anthropic = prices_for(
        ProviderConfig.model_validate({"type": "anthropic", "model": "claude-x", "prices": {"input_per_mtok": 3.0}})
    )
    assert anthropic is not None
    assert (anthropic.cache_write_per_mtok, anthropic.cached_input_per_mtok) == pytest.approx((3.75, 0.3))
    chat = prices_for(
        ProviderConfig.model_validate({"type": "openai_responses", "model": "m", "prices": {"input_per_mtok": 3.0}})
    )
    assert chat is not None and chat.cache_write_per_mtok is None  # OpenAI documents no rule: its input price
    shipped = default_prices("anthropic", "claude-sonnet-4-5-20250929")
    assert shipped is not None and shipped.cache_write_per_mtok == 3.75


def test_one_hour_cache_writes_cost_twice_the_input_at_anthropic() -> None:
    # 300 k written to the cache, 100 k of them for an hour; 50 k input neither read nor written
    u = UsageReport(input_tokens=350_000, cache_write_tokens=300_000, cache_write_1h_tokens=100_000)
    anthropic = prices_for(
        ProviderConfig.model_validate({"type": "anthropic", "model": "claude-x", "prices": {"input_per_mtok": 3.0}})
    )
    assert anthropic is not None and anthropic.cache_write_1h_per_mtok == pytest.approx(6.0)
    assert cost_of(u, anthropic) == pytest.approx(0.05 * 3.0 + 0.2 * 3.75 + 0.1 * 6.0)
    # no documented rule: an hour's write costs what a write costs, else the input price
    assert cost_of(u, Prices(input_per_mtok=3.0, cache_write_per_mtok=4.0)) == pytest.approx(0.05 * 3.0 + 0.3 * 4.0)
    assert cost_of(u, Prices(input_per_mtok=3.0)) == pytest.approx(0.35 * 3.0)
    shipped = default_prices("anthropic", "claude-sonnet-4-5")
    assert shipped is not None and shipped.cache_write_1h_per_mtok == 6.0


def test_a_switched_call_costs_each_report_at_the_prices_of_the_provider_that_served_it() -> None:
    bus = EventBus()
    sub = bus.subscribe(types={UsageUpdated.type})
    metrics = Metrics()
    meter = UsageMeter(
        call_id="c", provider="cheap", model="a", prices=Prices(input_per_mtok=1.0), metrics=metrics, bus=bus
    )
    meter.add(UsageReport(input_tokens=1_000_000), turn=1)
    meter.switch("dear", "b", Prices(input_per_mtok=10.0))
    meter.add(UsageReport(input_tokens=1_000_000), turn=2)
    meter.switch("free", None, None)
    meter.add(UsageReport(input_tokens=1_000_000), turn=3)
    events = [e for e in sub.drain() if isinstance(e, UsageUpdated)]
    assert [(e.provider, e.model, e.cost, e.total_cost, e.priced) for e in events] == [
        ("cheap", "a", 1.0, 1.0, True),
        ("dear", "b", 10.0, 11.0, True),
        ("free", None, 0.0, 11.0, False),
    ]
    final = meter.final()
    assert final.cost == 11.0 and final.usage.input_tokens == 3_000_000 and final.priced
    text = metrics.render().decode()
    assert 'ai_agent_provider_cost_usd_total{model="a",provider="cheap"} 1.0' in text
    assert 'ai_agent_provider_cost_usd_total{model="b",provider="dear"} 10.0' in text

"""The budget guard on a scripted call: ``contexts.<name>.max_tokens``/``max_cost``, a warning at 80 %, and at
100 % either the agent's farewell and the end of the call (``on_budget: wrap_up``) or the operator's decision
(``ask_operator``: the call goes on, the alert says so)."""

from __future__ import annotations

from typing import Any

from fakebase import Reply
from harness import TOOLS, ToolBox, provider_config
from openai_chat_fake import OpenAIChatFake

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, Settings
from engine.config.models.prices import Prices
from engine.events import BudgetAlert, CallEnded, TranscriptAdded


def _engine(fake: OpenAIChatFake, **budget: Any) -> Engine:
    prices = Prices(input_per_mtok=1000.0, output_per_mtok=1000.0)  # 150 tokens a request: 0.15 $
    settings = Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={"p": provider_config(fake, prices=prices)},
        contexts={"desk": ContextConfig(provider="p", tools=TOOLS, farewell="Out of time, goodbye.", **budget)},
    )
    return Engine(settings, extra_tools=ToolBox().tools())


async def test_warning_at_80_percent_then_farewell_and_hang_up_at_100() -> None:
    fake = OpenAIChatFake([Reply(text="One."), Reply(text="Two."), Reply(text="Three.")])
    async with fake, _engine(fake, max_tokens=360) as engine:  # 150 tokens a turn: 42 %, 83 %, 125 %
        sub = engine.bus.subscribe(types={BudgetAlert.type, CallEnded.type, TranscriptAdded.type})
        call = await engine.start_call("desk")
        for said in ("one", "two", "three"):
            await engine.user_said(call.call_id, said)
        events = sub.drain()
        assert call.call_id not in {c.call_id for c in engine.calls_info()}
    alerts = [(e.level, e.fraction, e.tokens, e.action) for e in events if isinstance(e, BudgetAlert)]
    assert alerts == [("warning", 0.8333, 300, None), ("reached", 1.25, 450, "wrap_up")]
    agent = [e.text for e in events if isinstance(e, TranscriptAdded) and e.role == "assistant"]
    assert agent == ["One.", "Two.", "Three.", "Out of time, goodbye."]
    ended = [e for e in events if isinstance(e, CallEnded)]
    assert [e.reason for e in ended] == ["budget reached"]
    assert events.index(ended[0]) > max(i for i, e in enumerate(events) if isinstance(e, TranscriptAdded))


async def test_ask_operator_keeps_the_call_going_and_says_who_decides() -> None:
    fake = OpenAIChatFake([Reply(text="One."), Reply(text="Two."), Reply(text="Three.")])
    async with fake, _engine(fake, max_cost=0.25, on_budget="ask_operator") as engine:  # 0.15 $ a turn
        sub = engine.bus.subscribe(types={BudgetAlert.type, CallEnded.type})
        call = await engine.start_call("desk")
        for said in ("one", "two", "three"):
            await engine.user_said(call.call_id, said)
        events = sub.drain()
        assert call.active  # the third turn ran: the operator, not the engine, ends this call
    alerts = [(e.level, e.action, e.max_cost) for e in events if isinstance(e, BudgetAlert)]
    assert alerts == [("reached", "ask_operator", 0.25)]  # 60 %, then 120 %: no warning step in between
    assert not [e for e in events if isinstance(e, CallEnded)]

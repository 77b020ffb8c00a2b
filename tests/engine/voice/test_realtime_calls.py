"""CallManager's realtime contract, which the four adapters and the voice driver rely on: starting a call on a
realtime session (view, prompt, greeting, gateway, format), a failed start, final transcripts of both sides with
the turn hooks, the next-turn view push, apply-now, a refused update, and what a realtime call refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, ProviderConfig, Settings
from engine.events import CallEnded, CallStarted, EngineError, Event, TierChanged, ToolsChanged, TranscriptAdded
from engine.providers.base import ProviderError
from engine.realtime.session import PCM16_16K, PCM16_24K, PCMU_8K
from engine.sessions.history import ToolCallItem
from engine.sessions.session import CallError, CallSession
from engine.tools.base import FunctionTool, LatencyMeta, ToolDefinition, ToolExecutionContext, ToolResult
from tests.fixtures.realtime_scripted import ScriptedRealtimeSession, scripted_tools, use_scripted_realtime
from tests.waiting import wait_until


def _settings(tmp_path: Path, **options: Any) -> Settings:
    script = tmp_path / "typed.yaml"
    script.write_text('greeting: "Hi."\nfallback: "Pardon?"\n', encoding="utf-8")
    return Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={
            "rt": ProviderConfig(type="openai_realtime", model="m", options=options),
            "text": ProviderConfig(type="scripted", script=str(script)),
        },
        contexts={
            "desk": ContextConfig(
                provider="rt",
                prompt="You help {caller_name}.",
                greeting="Hello {caller_name}, desk here.",
                tools=["get_weather", "get_time"],
            ),
            "typed": ContextConfig(provider="text", tools=[]),
        },
    )


class Hooks:
    def __init__(self) -> None:
        self.log: list[str] = []

    def before_turn(self, session: CallSession, text: str) -> None:
        self.log.append(f"before:{session.turn}:{text}")

    def after_turn(self, session: CallSession) -> None:
        self.log.append(f"after:{session.turn}")


@pytest.fixture
def engine_factory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    use_scripted_realtime(monkeypatch)

    def make(**options: Any) -> Engine:
        return Engine(_settings(tmp_path, **options), extra_tools=scripted_tools())

    return make


async def _start(engine: Engine, **kw: Any) -> tuple[CallSession, ScriptedRealtimeSession]:
    session, live = await engine.calls.start_realtime_call("desk", caller_name="Ann", audio=PCMU_8K, **kw)
    assert isinstance(live, ScriptedRealtimeSession)
    return session, live


def _of(events: list[Event], kind: type[Event]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def test_start_shows_the_view_and_hands_the_session_its_setup(engine_factory: Any) -> None:
    async with engine_factory() as engine:
        sub = engine.bus.subscribe(maxsize=100)
        session, live = await _start(engine, caller_number="+100", channel_id="ch-1")
        assert live.setup is not None
        assert live.setup.session is session and live.setup.audio == PCMU_8K
        assert live.setup.instructions == "You help Ann."
        assert live.setup.greeting == "Hello Ann, desk here."
        assert live.setup.view.names == {"get_weather", "get_time"} == session.shown_tools
        assert live.input_spec == PCMU_8K  # mu-law goes straight through when the provider accepts it
        assert session.channel_id == "ch-1" and session.active
        assert engine.calls.realtime_session(session.call_id) is live
        started = _of(sub.drain(), CallStarted)
        assert [(e.call_id, e.provider) for e in started] == [(session.call_id, "rt")]
        # the gateway is the engine's execution path: history and the allowlist
        ok = await live.call_tool("get_weather", '{"city": "Oslo"}', provider_id="fc_7")
        assert ok[0].status == "success" and "Oslo" in ok[0].message
        calls = [i for i in session.history.items() if isinstance(i, ToolCallItem) and i.name == "get_weather"]
        assert calls and dict(calls[0].provider_ids)["provider"] == "fc_7"
        refused = await live.call_tool("broken_tool", "{}")
        assert refused[0].status != "success"  # not shown to this call: an error result, not an exception


async def test_a_failed_start_ends_the_call_with_the_providers_reason(engine_factory: Any) -> None:
    async with engine_factory(fail_start="invalid_api_key: check providers.rt.api_key") as engine:
        sub = engine.bus.subscribe(maxsize=100)
        with pytest.raises(ProviderError, match="invalid_api_key"):
            await engine.calls.start_realtime_call("desk", audio=PCM16_16K)
        ended = _of(sub.drain(), CallEnded)
        assert len(ended) == 1 and "invalid_api_key" in ended[0].reason
        assert engine.live_calls() == []


async def test_text_and_realtime_calls_do_not_mix(engine_factory: Any) -> None:
    async with engine_factory() as engine:
        with pytest.raises(CallError, match="not a realtime provider"):
            await engine.calls.start_realtime_call("typed", audio=PCM16_16K)
        assert engine.live_calls() == []
        session, _ = await _start(engine)
        with pytest.raises(CallError, match="cannot switch"):
            await engine.set_provider(session.call_id, "text")
        with pytest.raises(CallError, match=r"realtime \(speech-to-speech\) provider: it takes voice calls"):
            await engine.start_call("desk")  # a typed call cannot run on it
        with pytest.raises(CallError, match="hears the caller's audio, not typed text"):
            await engine.user_said(session.call_id, "hello")
        text_call = await engine.start_call("typed")
        with pytest.raises(CallError, match="not a realtime call"):
            await engine.calls.realtime_caller_said(text_call.call_id, "hi")


async def test_transcripts_run_the_turn_hooks_and_push_a_changed_view(engine_factory: Any) -> None:
    async with engine_factory(formats=["pcm16/24000"]) as engine:
        hooks = Hooks()
        engine.turn_hooks.append(hooks)
        sub = engine.bus.subscribe(maxsize=100)
        session, live = await _start(engine)
        assert live.input_spec == PCM16_24K  # negotiated: the provider does not take mu-law
        cid = session.call_id
        await engine.calls.realtime_agent_said(cid, "Hello Ann, desk here.")  # the greeting: no turn to close
        await engine.calls.realtime_caller_said(cid, "what's the weather")
        await engine.calls.realtime_agent_said(cid, "Sunny.")
        assert hooks.log == ["before:1:what's the weather", "after:1"]
        assert session.turn == 1
        assert [(m.role, m.text) for m in _of(sub.drain(), TranscriptAdded)] == [
            ("assistant", "Hello Ann, desk here."),
            ("user", "what's the weather"),
            ("assistant", "Sunny."),
        ]
        assert live.updates == []  # nothing changed: nothing sent
        # the operator turns a tool off for the next turn: pushed at the next turn boundary, not applied now
        assert engine.set_tool_enabled(cid, "get_time", False) is False
        await engine.calls.realtime_caller_said(cid, "and the time?")
        assert live.updates == [(frozenset({"get_weather"}), False)]
        assert session.shown_tools == {"get_weather"}
        # two caller turns without an answer between them (barge-in): the first turn is closed before the next
        await engine.calls.realtime_caller_said(cid, "never mind")
        assert hooks.log[-3:] == ["before:2:and the time?", "after:2", "before:3:never mind"]
        changed = _of(sub.drain(), ToolsChanged)
        assert any(e.removed == ("get_time",) and e.call_id == cid for e in changed)


async def test_apply_now_pushes_the_view_at_once_and_a_refusal_keeps_the_call(engine_factory: Any) -> None:
    async with engine_factory() as engine:
        sub = engine.bus.subscribe(maxsize=100)
        session, live = await _start(engine)
        cid = session.call_id
        assert engine.set_tool_enabled(cid, "get_weather", False, apply="now") is True
        await wait_until(lambda: live.updates, what="the tools push (an engine task)")
        assert live.updates == [(frozenset({"get_time"}), True)]
        assert any(e.apply == "now" for e in _of(sub.drain(), ToolsChanged))
        live.update_error = "session.update rejected"
        engine.set_tool_enabled(cid, "get_weather", True)
        await engine.calls.realtime_caller_said(cid, "hello")  # the push fails: said on the bus, call goes on
        errors = _of(sub.drain(), EngineError)
        assert any("session.update rejected" in e.message and e.call_id == cid for e in errors)
        assert session.active and session.shown_tools == {"get_time"}
        live.update_error = None
        await engine.calls.realtime_agent_said(cid, "Hi.")  # retried at the next boundary
        assert live.updates[-1] == (frozenset({"get_weather", "get_time"}), False)


async def test_ending_the_call_closes_the_session(engine_factory: Any) -> None:
    async with engine_factory() as engine:
        session, live = await _start(engine)
        await engine.end_call(session.call_id, "hangup")
        assert live.closed and session.end_reason == "hangup"
        with pytest.raises(CallError):
            await engine.calls.realtime_agent_said(session.call_id, "late")
        with pytest.raises(CallError):
            engine.calls.realtime_session(session.call_id)


async def test_a_tier_change_by_the_selector_reaches_the_live_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller asks to think carefully: the selector moves the call to DEEP, whose view shows a slow tool
    that STANDARD hides; the session gets that view for the turn, and tier.changed says why."""
    use_scripted_realtime(monkeypatch)

    async def lookup(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success("found")

    slow = FunctionTool(
        ToolDefinition("deep_lookup", "A careful lookup.", latency=LatencyMeta(900, 2500, idempotent=True)), lookup
    )
    settings = Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={"rt": ProviderConfig(type="openai_realtime", model="m")},
        contexts={"desk": ContextConfig(provider="rt", tools=["get_weather", "deep_lookup"])},
    )
    async with Engine(settings, extra_tools=[*scripted_tools(), slow]) as engine:
        sub = engine.bus.subscribe(maxsize=100)
        session, live = await engine.calls.start_realtime_call("desk", audio=PCM16_16K)
        assert isinstance(live, ScriptedRealtimeSession)
        assert session.tier == "standard" and session.shown_tools == {"get_weather"}
        await engine.calls.realtime_caller_said(session.call_id, "please think carefully about this")
        assert session.tier == "deep"
        assert live.updates == [(frozenset({"get_weather", "deep_lookup"}), False)]
        changed = _of(sub.drain(), TierChanged)
        assert [(e.old, e.new) for e in changed] == [("standard", "deep")]

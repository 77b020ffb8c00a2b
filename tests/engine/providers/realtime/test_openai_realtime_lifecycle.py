"""OpenAI Realtime call lifecycle against the fake: tool changes, announcements, hang-up, drops, refusals."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from harness import API_KEY
from realtime_markers import flushed
from realtime_openai_fake import Calls, Fail, OpenAIRealtimeFake, Say
from realtime_openai_harness import provider_config, realtime_call

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, Settings
from engine.events import ToolsOmitted
from engine.providers.base import ProviderError, ToolCallRequest
from engine.providers.factory import create_provider
from engine.realtime.openai_realtime import OpenAIRealtimeProvider
from engine.realtime.session import (
    PCMU_8K,
    AssistantAudio,
    AssistantInterrupted,
    AssistantText,
    ProviderNotice,
    RealtimeSetup,
    ResponseDone,
)
from engine.sessions.history import ToolResultItem
from engine.sessions.session import CallSession
from engine.tools.base import FunctionTool, Tool, ToolDefinition, ToolExecutionContext, ToolResult
from engine.tools.view import ToolView


def said(text: str) -> Callable[[object], bool]:
    return lambda e: isinstance(e, AssistantText) and e.final and e.text == text


def notice(code: str) -> Callable[[object], bool]:
    return lambda e: isinstance(e, ProviderNotice) and e.code == code


def creates(fake: OpenAIRealtimeFake, start: int = 0) -> list[dict]:
    return [m for m in fake.json_messages()[start:] if m["type"] == "response.create"]


async def test_apply_now_cancels_sends_the_tools_and_asks_again() -> None:
    fake = OpenAIRealtimeFake([Say("The weather is …", audio_ms=2000, hold=True), Say("Redone with new tools.")])
    fake.chunk_delay_s = 0.005
    async with fake, realtime_call(fake) as call:
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        await fake.caller_turn("Weather?")
        await call.events.until(lambda e: isinstance(e, AssistantAudio) and e.item_id != "", count=6)
        mark = len(fake.received)
        assert call.engine.set_tool_enabled(call.session.call_id, "get_time", False, apply="now")
        await call.events.until(said("Redone with new tools."))
    assert fake.errors == []
    after = [m["type"] for m in fake.json_messages()[mark:] if m["type"] != "input_audio_buffer.append"]
    assert after[:3] == ["response.cancel", "session.update", "response.create"]
    update = next(m for m in fake.json_messages()[mark:] if m["type"] == "session.update")
    assert set(update["session"]) == {"type", "tools"}
    assert "get_time" not in [t["name"] for t in update["session"]["tools"]]
    assert "get_time" not in call.session.shown_tools and "get_weather" in call.session.shown_tools
    assert call.events.of(AssistantInterrupted)  # the driver flushes what it queued of the old answer
    assert [e.status for e in call.events.of(ResponseDone)][1] == "cancelled"


async def test_next_turn_change_is_one_session_update_and_shown_tools_follow() -> None:
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None) as call:
        call.engine.set_tool_enabled(call.session.call_id, "broken_tool", False)
        assert "broken_tool" in call.session.shown_tools  # not yet: it applies from the next turn
        await call.engine.calls.realtime_caller_said(call.session.call_id, "Hi there")
        assert "broken_tool" not in call.session.shown_tools
    assert fake.errors == []
    updates = fake.of_type("session.update")
    assert len(updates) == 2 and set(updates[1]["session"]) == {"type", "tools"}
    assert creates(fake) == []  # a next-turn change does not make the model speak


async def test_slow_tool_announcement_is_a_response_with_instructions() -> None:
    fake = OpenAIRealtimeFake([Calls([("slow_lookup", {"ref": "A1"}, "call_slow")]), Say("Found it: A1.")])
    async with fake, realtime_call(fake) as call:
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        await fake.caller_turn("Look up A1")
        await asyncio.wait_for(call.slow.started.wait(), 5)
        assert await call.live.announce("One moment while I look that up.")
        await call.events.until(said("One moment while I look that up."))
        call.slow.finish.set()
        await call.events.until(said("Found it: A1."))
    assert fake.errors == []
    announce = creates(fake)[1]
    assert "One moment while I look that up." in announce["response"]["instructions"]
    assert announce["response"]["tool_choice"] == "none"
    kinds = [m["type"] for m in fake.json_messages() if m["type"] in ("response.create", "conversation.item.create")]
    assert kinds == ["response.create", "response.create", "conversation.item.create", "response.create"]


async def test_announcement_waits_for_the_response_in_flight() -> None:
    fake = OpenAIRealtimeFake([Say("A long answer.", audio_ms=1000, hold=True)])
    async with fake, realtime_call(fake) as call:
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        await fake.caller_turn("Tell me")
        await call.events.until(lambda e: isinstance(e, AssistantAudio), count=5)
        assert await call.live.announce("Still there?")
        assert await call.live.announce("One moment please.")  # only the latest is worth saying
        await flushed(fake, call.live, "openai")
        assert len(creates(fake)) == 1  # never over the model: still only the greeting's
        fake.release()
        await call.events.until(said("One moment please."))
    assert fake.errors == []
    assert len(creates(fake)) == 2


async def test_hangup_call_answers_the_tool_and_the_model_speaks_the_farewell() -> None:
    fake = OpenAIRealtimeFake([Calls([("hangup_call", {"farewell_message": "Goodbye!"}, "call_bye")]), Say("Goodbye!")])
    async with fake, realtime_call(fake) as call:
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        await fake.caller_turn("That's all, bye")
        await call.events.until(said("Goodbye!"))
        assert call.session.hangup_requested and call.session.farewell == "Goodbye!"
    assert fake.errors == []
    (output,) = fake.outputs
    assert output["call_id"] == "call_bye" and json.loads(output["output"])["data"] == {"farewell": "Goodbye!"}


async def test_dropped_socket_reconnects_and_replays_the_conversation() -> None:
    fake = OpenAIRealtimeFake([Calls([("get_weather", {"city": "Oslo"}, "call_o1")]), Say("Cold."), Say("Again.")])
    async with fake, realtime_call(fake) as call:
        cid = call.session.call_id
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        await call.engine.calls.realtime_agent_said(cid, "Hello, test desk.")
        await call.engine.calls.realtime_caller_said(cid, "Weather in Oslo?")
        await fake.caller_turn("Weather in Oslo?")
        await call.events.until(said("Cold."))
        await call.engine.calls.realtime_agent_said(cid, "Cold.")
        await fake.drop()
        await call.events.until(notice("reconnecting"))
        await call.events.until(notice("reconnected"))
        await fake.caller_turn("And now?")
        await call.events.until(said("Again."))
    assert fake.errors == [] and fake.connections == 2
    second = [m for m in fake.received[fake.connection_starts[1] :] if isinstance(m, dict)]
    assert second[0]["session"]["tools"] and second[0]["session"]["audio"]["input"]["format"] == {"type": "audio/pcmu"}
    replayed = [m["item"] for m in second[1:] if m["type"] == "conversation.item.create"]
    assert [(i["type"], i.get("role")) for i in replayed] == [
        ("message", "assistant"),
        ("message", "user"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
    ]
    assert replayed[2]["call_id"] == replayed[3]["call_id"] == "call_o1"  # the provider's own id, echoed


async def test_drop_mid_answer_asks_for_the_answer_again() -> None:
    fake = OpenAIRealtimeFake([Say("Cut off …", audio_ms=2000, hold=True), Say("Said again.")])
    async with fake, realtime_call(fake) as call:
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        await fake.caller_turn("Question")
        await call.events.until(lambda e: isinstance(e, AssistantAudio), count=6)
        await fake.drop()
        await call.events.until(said("Said again."))
    assert fake.errors == [] and fake.connections == 2


@pytest.mark.parametrize(("status", "tries"), [(503, 3), (401, 1)])
async def test_reconnect_gives_up_with_a_fatal_notice(status: int, tries: int) -> None:
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None, reconnect_tries=3) as call:
        fake.refuse_status = status
        await fake.drop()
        fatal = await call.events.until(lambda e: isinstance(e, ProviderNotice) and e.fatal)
        await asyncio.wait_for(call.events.ended.wait(), 5)
    assert isinstance(fatal, ProviderNotice) and fatal.code == "connection_lost"
    assert f"HTTP {status}" in fatal.message and API_KEY not in fatal.message
    assert fake.connections == 1 and len(fake.request_paths) == 1 + tries  # 401 is not retried


async def test_auth_failure_is_one_clear_error_without_the_key() -> None:
    async with OpenAIRealtimeFake() as fake:
        fake.refuse_status = 401
        with pytest.raises(ProviderError) as ei:
            async with realtime_call(fake):
                pass
    assert "authentication failed" in str(ei.value) and "HTTP 401" in str(ei.value) and API_KEY not in str(ei.value)


async def test_a_session_that_cannot_start_has_no_events() -> None:
    async with OpenAIRealtimeFake() as fake:
        fake.refuse_status = 404
        provider = create_provider("rt", provider_config(fake.url))
        assert isinstance(provider, OpenAIRealtimeProvider)
        engine_session = CallSession(call_id="c1", context="desk", provider="rt")
        live = provider.open_session(engine_session)
        with pytest.raises(ProviderError, match="not found"):
            await live.start(RealtimeSetup(engine_session, "", ToolView((), ()), _NoTools(), None, PCMU_8K))
        async with asyncio.timeout(2):
            assert [e async for e in live.events()] == []


class _NoTools:
    async def call_tools(self, calls: Sequence[ToolCallRequest]) -> list[ToolResultItem]:
        raise AssertionError("no tool runs on a session that never started")


async def test_refused_session_update_is_the_providers_reason() -> None:
    async with OpenAIRealtimeFake() as fake:
        fake.refuse_session = {"code": "invalid_model", "message": "Model 'gpt-nope' does not exist"}
        with pytest.raises(ProviderError, match=r"session refused: Model 'gpt-nope' does not exist \(invalid_model\)"):
            async with realtime_call(fake):
                pass


async def test_provider_error_event_mid_call_is_a_notice_and_the_call_goes_on() -> None:
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None) as call:
        await fake.send(
            {"type": "error", "event_id": "e1", "error": {"type": "server_error", "code": "x", "message": "hiccup"}}
        )
        got = await call.events.until(notice("x"))
        await fake.caller_turn("Still there?")
        await call.events.until(said("Okay."))
    assert isinstance(got, ProviderNotice) and not got.fatal and "hiccup" in got.message


async def test_check_connection_proves_key_model_and_endpoint() -> None:
    async with OpenAIRealtimeFake() as fake:
        provider = create_provider("rt", provider_config(fake.url))
        assert isinstance(provider, OpenAIRealtimeProvider)
        report = await provider.check_connection()
        fake.refuse_status = 403
        with pytest.raises(ProviderError, match="access denied") as ei:
            await provider.check_connection()
    assert report == {"provider": "rt", "type": "openai_realtime", "model": "gpt-realtime", "url": fake.url}
    assert fake.errors == [] and API_KEY not in str(ei.value)


async def test_over_128_tools_the_rest_is_left_out_not_shown_and_named_in_an_event() -> None:
    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success("ok")

    many: list[Tool] = [FunctionTool(ToolDefinition(f"t_{i:03d}", f"Tool {i}."), run) for i in range(130)]
    async with OpenAIRealtimeFake() as fake:
        settings = Settings(
            engine=EngineConfig(http=HttpConfig(enabled=False)),
            providers={"rt": provider_config(fake.url)},
            contexts={"desk": ContextConfig(provider="rt", tools=["hangup_call", "t_*"])},
        )
        async with Engine(settings, extra_tools=many) as engine:
            sub = engine.bus.subscribe(maxsize=1000)
            session, live = await engine.calls.start_realtime_call("desk", audio=PCMU_8K)
            await live.aclose()
            sub.close()
            omitted = [e async for e in sub if isinstance(e, ToolsOmitted)]
    assert fake.errors == []
    tools = fake.of_type("session.update")[0]["session"]["tools"]
    assert len(tools) == 128 and tools[0]["name"] == "hangup_call"  # call control is kept first
    assert len(omitted) == 1 and omitted[0].limit == 128 and omitted[0].omitted == ("t_127", "t_128", "t_129")
    assert "t_129" not in session.shown_tools and "t_126" in session.shown_tools


@pytest.mark.parametrize(("code", "fatal"), [("insufficient_quota", True), ("server_error", False)])
async def test_a_failed_response_is_one_clear_notice(code: str, fatal: bool) -> None:
    fake = OpenAIRealtimeFake([Fail(code, "You exceeded your current quota.")])
    async with fake, realtime_call(fake, greeting=None) as call:
        await fake.caller_turn("Hello?")
        got = await call.events.until(lambda e: isinstance(e, ProviderNotice) and e.code == code)
    assert fake.errors == []
    assert isinstance(got, ProviderNotice) and got.fatal is fatal
    assert got.message == "rt: the response failed: You exceeded your current quota."


async def test_an_answer_that_crosses_a_vad_response_is_asked_for_again_after_it() -> None:
    fake = OpenAIRealtimeFake([Calls([("get_weather", {"city": "Bern"}, "call_x")]), Say("Mild in Bern.")])
    async with fake, realtime_call(fake, greeting=None) as call:
        fake.crossing = Say("Mm-hm?")  # the caller said something just as the tool result went out
        await fake.caller_turn("Weather in Bern?")
        await call.events.until(said("Mm-hm?"))
        await call.events.until(said("Mild in Bern."))
    assert fake.errors == []
    assert len(creates(fake)) == 2  # the refused one, and the same again once the VAD response was done
    assert not [n for n in call.events.of(ProviderNotice) if n.code == "conversation_already_has_active_response"]


@pytest.mark.parametrize("finish_during_gap", [False, True])
async def test_a_tool_running_across_a_drop_is_answered_once_on_the_new_socket(finish_during_gap: bool) -> None:
    fake = OpenAIRealtimeFake([Calls([("slow_lookup", {"ref": "Z9"}, "call_z9")]), Say("Z9 found.")])
    async with fake, realtime_call(fake, greeting=None, reconnect_first_ms=400, reconnect_max_ms=400) as call:
        await fake.caller_turn("Look up Z9")
        await asyncio.wait_for(call.slow.started.wait(), 5)
        await fake.drop()
        await call.events.until(notice("reconnecting"))
        if finish_during_gap:
            call.slow.finish.set()  # the result is in the history before the new socket is set up
        await call.events.until(notice("reconnected"))
        call.slow.finish.set()
        await call.events.until(said("Z9 found."))
    assert fake.errors == [] and fake.connections == 2
    second = [m for m in fake.received[fake.connection_starts[1] :] if isinstance(m, dict)]
    outputs = [m["item"] for m in second if m["type"] == "conversation.item.create"]
    outputs = [i for i in outputs if i["type"] == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_z9"]  # once: replayed, or sent when it finished
    assert [m["type"] for m in second].count("response.create") == 1

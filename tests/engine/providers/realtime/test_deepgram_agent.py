"""Deepgram Voice Agent adapter, through the real engine, against the loopback agent (every client message is
checked against deepgram-sdk's agent v1 types, made strict, and the protocol's lifecycle rules)."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from harness import API_KEY
from realtime_deepgram_fake import DeepgramFake
from realtime_deepgram_harness import ULAW_FRAME, live_call, provider_config

from engine.providers.base import ProviderError
from engine.providers.factory import create_provider
from engine.realtime.deepgram_agent import DeepgramAgentProvider
from engine.realtime.session import (
    PCM16_16K,
    AssistantAudio,
    AssistantText,
    CallerSpeechStarted,
    CallerText,
    ProviderNotice,
    ResponseDone,
    UsageReport,
)
from engine.sessions.history import ToolCallItem, ToolResultItem
from tests.waiting import wait_until


def content(msg: dict[str, object]) -> dict[str, object]:
    assert isinstance(msg["content"], str)
    return json.loads(msg["content"])


async def test_greeting_settings_audio_and_transcripts() -> None:
    async with live_call() as live:
        fake = live.fake
        s = fake.settings[0]
        assert fake.request_headers[0]["Authorization"] == f"Token {API_KEY}"
        assert s["audio"] == {
            "input": {"encoding": "mulaw", "sample_rate": 8000},
            "output": {"encoding": "mulaw", "sample_rate": 8000, "container": "none"},
        }
        agent = s["agent"]
        assert agent["greeting"] == "Hello, test desk."
        assert agent["think"]["prompt"].startswith("You are a test agent.")
        assert agent["think"]["provider"] == {"type": "open_ai", "model": "gpt-4o-mini"}
        assert agent["speak"]["provider"] == {"type": "deepgram", "model": "aura-2-thalia-en"}
        assert agent["listen"]["provider"] == {"type": "deepgram", "model": "nova-3"}
        fns = {f["name"]: f for f in agent["think"]["functions"]}
        assert set(fns) == {"get_weather", "get_time", "broken_tool", "slow_lookup", "hangup_call"}
        assert all("endpoint" not in f for f in fns.values())
        # Not idempotent (the harness tools and hangup_call) -> held until the end of turn; the read-only lookup not.
        assert fns["hangup_call"]["defer_until_eot"] is True and fns["get_weather"]["defer_until_eot"] is True
        assert "defer_until_eot" not in fns["slow_lookup"]
        assert live.session.input_spec == live.session.output_spec
        assert str(live.session.input_spec) == "pcmu/8000"

        for _ in range(5):
            await live.session.send_audio(ULAW_FRAME)
        await fake.wait_for(lambda m: isinstance(m, bytes))
        await fake.agent_says("Hello, test desk.", b"\x7f" * 160, frames=3)
        await fake.user_says("What is the weather?")
        await live.wait_event(lambda e: isinstance(e, CallerText))
        assert fake.audio_bytes() == 5 * 160
    assert fake.errors == []
    audio = live.of(AssistantAudio)
    assert [a.data for a in audio] == [b"\x7f" * 160] * 3 and audio[0].item_id == "turn-1"
    assert live.of(AssistantText)[0].text == "Hello, test desk."
    assert live.of(CallerText)[0].text == "What is the weather?"
    kinds = [type(e).__name__ for e in live.events]
    assert kinds.index("CallerSpeechStarted") < kinds.index("CallerSpeechStopped") < kinds.index("CallerText")
    assert len(live.of(ResponseDone)) == 1
    usage = live.of(UsageReport)
    assert sum(u.output_audio_s for u in usage) == pytest.approx(0.06)
    assert sum(u.input_audio_s for u in usage) == pytest.approx(0.1)


async def test_pcm_driver_gets_linear16() -> None:
    async with live_call(audio=PCM16_16K) as live:
        audio = live.fake.settings[0]["audio"]
    assert audio["input"] == {"encoding": "linear16", "sample_rate": 16000}
    assert audio["output"] == {"encoding": "linear16", "sample_rate": 16000, "container": "none"}
    assert live.fake.errors == []


async def test_tool_call_answered_with_the_exact_id_and_name() -> None:
    fid = "fc_8f1c-ÄB/+=:1"
    async with live_call() as live:
        await live.fake.request((fid, "get_weather", '{"city": "Paris"}', True))
        resp = await asyncio.wait_for(live.fake.function_responses.get(), 5)
        items = live.call.history.items()
    assert live.fake.errors == []
    assert resp["id"] == fid and resp["name"] == "get_weather"
    assert content(resp)["status"] == "success" and "18 degrees in Paris" in str(content(resp)["message"])
    assert live.box.calls == [("get_weather", {"city": "Paris"})]
    call = next(i for i in items if isinstance(i, ToolCallItem))
    assert dict(call.provider_ids) == {"provider": fid}


async def test_parallel_calls_run_concurrently_and_server_side_ones_are_left_alone() -> None:
    async with live_call() as live:
        live.box.barrier = asyncio.Barrier(2)  # each waits for the other: sequential execution would time out
        await live.fake.request(
            ("a1", "get_weather", '{"city": "Oslo"}', True),
            ("a2", "get_time", '{"zone": "Europe/Oslo"}', True),
            ("srv", "crm_lookup", "{}", False),
        )
        got = [await asyncio.wait_for(live.fake.function_responses.get(), 5) for _ in range(2)]
        await live.flushed()
    assert live.fake.errors == []
    assert sorted(r["id"] for r in got) == ["a1", "a2"]
    assert all(content(r)["status"] == "success" for r in got)
    assert len(live.fake.of_type("FunctionCallResponse")) == 2  # nothing for the server-side call
    assert sorted(n for n, _ in live.box.calls) == ["get_time", "get_weather"]


async def test_cancelled_call_is_stopped_and_never_answered() -> None:
    async with live_call() as live:
        await live.fake.request(("slow-1", "slow_lookup", '{"q": "x"}', True))
        await asyncio.wait_for(live.box.slow_started.wait(), 5)
        await live.fake.cancel("slow-1")
        await asyncio.wait_for(live.box.slow_cancelled.wait(), 5)
        live.box.release.set()
        # A call requested after the cancellation is still answered (the session goes on).
        await live.fake.request(("w-2", "get_weather", '{"city": "Rome"}', True))
        resp = await asyncio.wait_for(live.fake.function_responses.get(), 5)
        items = live.call.history.items()
    assert live.fake.errors == []
    assert resp["id"] == "w-2"
    assert [m["id"] for m in live.fake.of_type("FunctionCallResponse")] == ["w-2"]
    # The history stays well-formed: the withdrawn call has a result saying so.
    results = {i.call_id: i for i in items if isinstance(i, ToolResultItem)}
    slow = next(i for i in items if isinstance(i, ToolCallItem) and i.name == "slow_lookup")
    assert "cancelled" in results[slow.id].message
    assert live.call.history.pending_tool_calls() == []


async def test_cancel_before_execution_runs_nothing() -> None:
    async with live_call() as live:
        # Both in one burst: the cancellation is read before the call's task gets to run the tool.
        await live.fake.send_raw(
            json.dumps(
                {
                    "type": "FunctionCallRequest",
                    "functions": [
                        {"id": "c1", "name": "get_weather", "arguments": '{"city": "Rome"}', "client_side": True}
                    ],
                }
            )
        )
        live.fake.outstanding["c1"] = "get_weather"
        await live.fake.cancel("c1")
        await live.fake.agent_says("Okay.", ULAW_FRAME)
        await live.wait_event(lambda e: isinstance(e, ResponseDone))
        await live.flushed()
    assert live.fake.errors == []
    assert live.fake.of_type("FunctionCallResponse") == []
    assert live.box.calls == []


async def test_unknown_tool_gets_an_error_result_and_the_call_goes_on() -> None:
    async with live_call() as live:
        await live.fake.request(("x1", "delete_everything", "{}", True), ("x2", "get_weather", "not json", True))
        got = {r["id"]: r for r in [await asyncio.wait_for(live.fake.function_responses.get(), 5) for _ in range(2)]}
    assert live.fake.errors == []
    assert content(got["x1"])["status"] == "rejected"
    assert content(got["x2"])["status"] in ("rejected", "error")
    assert live.box.calls == []


async def test_barge_in_mid_answer() -> None:
    async with live_call() as live:
        await live.fake.start_speaking("A long answer about the weather")
        await live.fake.audio(ULAW_FRAME, 2)
        await live.fake.user_says("Stop, another question")
        await live.wait_event(lambda e: isinstance(e, CallerText))
        # The agent is no longer speaking: an announcement may go out now.
        assert await live.session.announce("One moment please.") is True
    kinds = [type(e).__name__ for e in live.events]
    assert kinds.index("CallerSpeechStarted") > kinds.index("AssistantAudio")
    assert len(live.of(CallerSpeechStarted)) == 1
    assert live.fake.errors == []


async def test_tool_change_applied_now_and_next_turn() -> None:
    async with live_call() as live:
        call, engine = live.call, live.engine
        call.tool_overrides["get_time"] = False
        call.tools_revision += 1
        view = engine.calls.view_for(call)
        await live.session.update_tools(view, apply_now=True)
        await live.fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "UpdateThink")
        upd = live.fake.of_type("UpdateThink")[0]
        await wait_until(lambda: "get_time" not in call.shown_tools, what="the agent's ThinkUpdated")
        shown_after_now = call.shown_tools
        # Next turn while the agent speaks: held until AgentAudioDone.
        await live.fake.start_speaking("Sure.")
        await live.fake.audio(ULAW_FRAME)  # audio follows AgentStartedSpeaking: once seen, the adapter knows
        await live.wait_event(lambda e: isinstance(e, AssistantAudio))
        call.tool_overrides["broken_tool"] = False
        call.tools_revision += 1
        await live.session.update_tools(engine.calls.view_for(call))
        await live.flushed()
        held = len(live.fake.of_type("UpdateThink"))
        await live.fake.done_speaking()
        await live.fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "UpdateThink", start=0)
        await wait_until(
            lambda: len(live.fake.of_type("UpdateThink")) == 2 and "broken_tool" not in call.shown_tools,
            what="the held UpdateThink, acknowledged",
        )
        # The same view again sends nothing.
        await live.session.update_tools(engine.calls.view_for(call), apply_now=True)
        await live.flushed()
    assert live.fake.errors == []
    names = [f["name"] for f in upd["think"]["functions"]]
    assert "get_time" not in names and "get_weather" in names
    assert upd["think"]["prompt"].startswith("You are a test agent.")  # UpdateThink replaces all of think
    assert "get_time" not in shown_after_now
    assert held == 1
    second = live.fake.of_type("UpdateThink")
    assert len(second) == 2 and "broken_tool" not in [f["name"] for f in second[1]["think"]["functions"]]
    assert "broken_tool" not in call.shown_tools


async def test_prompt_additions_and_replacements() -> None:
    async with live_call() as live:
        base = live.fake.settings[0]["agent"]["think"]["prompt"]
        await live.session.update_instructions(base + "\nThe caller is a VIP.")
        await live.fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "UpdatePrompt")
        await live.session.update_instructions("A new prompt entirely.")
        await live.fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "UpdateThink")
    assert live.fake.errors == []
    assert live.fake.of_type("UpdatePrompt")[0]["prompt"] == "The caller is a VIP."
    assert live.fake.of_type("UpdateThink")[0]["think"]["prompt"] == "A new prompt entirely."


async def test_slow_tool_with_an_announcement() -> None:
    async with live_call() as live:
        await live.fake.request(("s1", "slow_lookup", '{"q": "order 7"}', True))
        await asyncio.wait_for(live.box.slow_started.wait(), 5)
        assert await live.session.announce("Still looking that up, one moment.") is True
        live.box.release.set()
        resp = await asyncio.wait_for(live.fake.function_responses.get(), 5)
        # While the agent speaks, no injection is sent at all.
        await live.fake.start_speaking("Found it.")
        await live.wait_event(lambda e: isinstance(e, AssistantText) and e.text == "Found it.")
        assert await live.session.announce("Another one.") is False
        await live.fake.done_speaking()
        await live.wait_event(lambda e: isinstance(e, ResponseDone))
        # The caller holds the floor: the agent refuses (InjectionRefused) and that is a False, not an error.
        await live.fake.user_starts()
        await live.wait_event(lambda e: isinstance(e, CallerSpeechStarted))
        assert await live.session.announce("Racing the caller.") is False
    assert live.fake.errors == []
    injected = [m["message"] for m in live.fake.of_type("InjectAgentMessage")]
    assert injected == ["Still looking that up, one moment.", "Racing the caller."]
    assert resp["id"] == "s1" and content(resp)["message"] == "found it"
    assert any(isinstance(e, AssistantText) and e.text.startswith("Still looking") for e in live.events)


async def test_hangup_call_with_farewell() -> None:
    async with live_call() as live:
        await live.fake.request(("h1", "hangup_call", '{"farewell_message": "Bye now!"}', True))
        resp = await asyncio.wait_for(live.fake.function_responses.get(), 5)
        assert live.call.hangup_requested and live.call.farewell == "Bye now!"
        await live.fake.agent_says("Bye now!", ULAW_FRAME, frames=2)
        await live.wait_event(lambda e: isinstance(e, ResponseDone))
    assert live.fake.errors == []
    assert resp["name"] == "hangup_call" and content(resp)["message"] == "Bye now!"
    farewell = next(i for i, e in enumerate(live.events) if isinstance(e, AssistantText) and e.text == "Bye now!")
    assert any(isinstance(e, ResponseDone) for e in live.events[farewell:])
    assert sum(isinstance(e, AssistantAudio) for e in live.events[farewell:]) == 2


async def test_dropped_socket_reconnects_with_context_and_no_greeting() -> None:
    async with live_call() as live:
        await live.fake.user_says("Weather in Paris?")
        await live.fake.request(("p1", "get_weather", '{"city": "Paris"}', True), signatures={"p1": "sig-Zm9v"})
        await asyncio.wait_for(live.fake.function_responses.get(), 5)
        live.call.history.add_message("user", "Weather in Paris?")
        await live.fake.drop()
        await live.wait_event(lambda e: isinstance(e, ProviderNotice) and e.code == "reconnected")
        await live.session.send_audio(ULAW_FRAME)
        await live.fake.wait_for(lambda m: isinstance(m, bytes))
        # An id of the old connection cannot be answered on the new one; new calls are.
        await live.fake.request(("p2", "get_time", "{}", True))
        resp = await asyncio.wait_for(live.fake.function_responses.get(), 5)
    assert live.fake.errors == []
    assert live.fake.connections == 2 and len(live.fake.settings) == 2
    second = live.fake.settings[1]["agent"]
    assert "greeting" not in second
    msgs = second["context"]["messages"]
    assert {"type": "History", "role": "user", "content": "Weather in Paris?"} in msgs
    fc = next(m for m in msgs if "function_calls" in m)["function_calls"][0]
    assert fc["id"] == "p1" and fc["name"] == "get_weather" and fc["client_side"] is True
    assert fc["thought_signature"] == "sig-Zm9v"  # echoed for a Gemini think model
    assert "18 degrees" in fc["response"]
    assert resp["id"] == "p2"
    notices = live.of(ProviderNotice)
    assert [n.code for n in notices] == ["reconnecting", "reconnected"] and not any(n.fatal for n in notices)


async def test_gives_up_after_the_attempts_with_a_fatal_notice() -> None:
    async with live_call(reconnect_attempts=2) as live:
        live.fake.refuse_status = 503
        await live.fake.drop()
        notice = await live.wait_event(lambda e: isinstance(e, ProviderNotice) and e.fatal)
        await asyncio.wait_for(live.ended.wait(), 5)
    assert "not restored after 2 attempt(s)" in notice.message and API_KEY not in notice.message
    assert live.fake.connections == 1


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failure_is_one_clear_error_without_the_key(status: int) -> None:
    fake = DeepgramFake()
    fake.refuse_status = status
    with pytest.raises(ProviderError) as ei:
        async with live_call(fake=fake):
            pass
    text = str(ei.value)
    assert text.startswith("dg:") and f"HTTP {status}" in text and API_KEY not in text


async def test_settings_refused_is_a_clear_error() -> None:
    fake = DeepgramFake()
    fake.settings_error = ("INVALID_SETTINGS", "think model not available")
    with pytest.raises(ProviderError, match="settings refused: INVALID_SETTINGS: think model not available"):
        async with live_call(fake=fake):
            pass


async def test_agent_closing_during_setup_is_a_clear_error() -> None:
    fake = DeepgramFake()
    fake.close_on_settings = True
    with pytest.raises(ProviderError, match=r"closed the connection during setup: closed by the provider \(1011"):
        async with live_call(fake=fake):
            pass


async def test_malformed_and_unknown_messages_are_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with live_call() as live:
        await live.fake.send_raw("{not json")
        await live.fake.send({"type": "SomethingNew", "x": 1})
        await live.fake.send({"type": "ConversationText", "role": "user"})  # no content
        await live.fake.send({"type": "FunctionCallRequest", "functions": [{"name": "get_weather"}]})  # no id
        await live.fake.send({"type": "FunctionCallRequest", "functions": "nope"})
        await live.fake.send({"type": "Warning", "code": "W1", "description": "slow think provider"})
        await live.fake.send({"type": "Error", "code": "E1", "description": "think failed"})
        await live.wait_event(lambda e: isinstance(e, ProviderNotice) and e.code == "E1")
        await live.fake.request(("ok", "get_weather", '{"city": "Lima"}', True))
        resp = await asyncio.wait_for(live.fake.function_responses.get(), 5)
    assert resp["id"] == "ok" and live.fake.errors == []
    text = caplog.text
    assert "dg: ignored a malformed message" in text and "dg: ignored an unknown message type 'SomethingNew'" in text
    assert "dg: ignored a malformed 'ConversationText'" in text and "without an id or a name" in text
    notices = live.of(ProviderNotice)
    assert notices[0].message == "warning: W1: slow think provider" and not notices[0].fatal
    assert notices[1].message == "error: E1: think failed"


async def test_keepalive_when_no_audio_flows() -> None:
    async with live_call(keepalive_s=0.05) as live:
        await live.fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "KeepAlive")
    assert live.fake.errors == []


async def test_check_connection_proves_key_and_models_without_leaking_the_key() -> None:
    async with DeepgramFake() as fake:
        p = create_provider("dg", provider_config(fake.url))
        assert isinstance(p, DeepgramAgentProvider)
        info = await p.check_connection()
        assert info == {"provider": "dg", "type": "deepgram_agent", "model": "gpt-4o-mini", "url": fake.url}
        assert fake.settings[0]["agent"]["think"]["functions"] == [] and "greeting" not in fake.settings[0]["agent"]
        fake.settings_error = ("UNKNOWN_MODEL", "no such think model")
        with pytest.raises(ProviderError, match="settings refused: UNKNOWN_MODEL: no such think model"):
            await p.check_connection()
        fake.refuse_status = 401
        with pytest.raises(ProviderError, match="authentication failed") as ei:
            await p.check_connection()
    assert API_KEY not in str(ei.value) and fake.errors == []


async def test_operator_apply_now_reaches_the_agent_as_update_think() -> None:
    async with live_call() as live:
        live.engine.set_tool_enabled(live.call.call_id, "get_time", False, apply="now")
        upd = await live.fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "UpdateThink")
        await wait_until(lambda: "get_time" not in live.call.shown_tools, what="the agent's ThinkUpdated")
        # The agent asks for the tool anyway (a stale plan): the engine rejects it and the agent is answered.
        await live.fake.request(("t1", "get_time", "{}", True))
        resp = await asyncio.wait_for(live.fake.function_responses.get(), 5)
    assert isinstance(upd, dict) and "get_time" not in [f["name"] for f in upd["think"]["functions"]]
    assert "get_time" not in live.call.shown_tools
    assert content(resp)["status"] == "rejected" and live.box.calls == []
    assert live.fake.errors == []


async def test_next_turn_change_held_while_speaking_goes_out_on_barge_in() -> None:
    async with live_call() as live:
        await live.fake.start_speaking("A long answer.")
        await live.fake.audio(ULAW_FRAME)
        await live.wait_event(lambda e: isinstance(e, AssistantAudio))
        live.call.tool_overrides["get_time"] = False
        live.call.tools_revision += 1
        await live.session.update_tools(live.engine.calls.view_for(live.call))
        await live.flushed()
        held = live.fake.of_type("UpdateThink")
        await live.fake.user_starts()  # the caller cuts the answer off: Deepgram sends no AgentAudioDone for it
        upd = await live.fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "UpdateThink")
    assert held == [] and isinstance(upd, dict)
    assert "get_time" not in [f["name"] for f in upd["think"]["functions"]]
    assert live.fake.errors == []


async def test_an_announcement_counts_only_when_the_agent_says_it() -> None:
    async with live_call(announce_wait_s=0.3) as live:
        live.fake.speak_injections = False  # the agent accepts it but answers something else first
        announcing = asyncio.create_task(live.session.announce("One moment."))
        await live.fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "InjectAgentMessage")
        await live.fake.agent_says("Here is your answer.", ULAW_FRAME)
        assert await announcing is False
        live.fake.speak_injections = True
        assert await live.session.announce("One moment.") is True
    assert live.fake.errors == []

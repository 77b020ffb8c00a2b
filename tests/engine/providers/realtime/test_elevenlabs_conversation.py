"""ElevenLabs Agents: the recorded scenarios against the loopback platform (every client message SDK-validated)."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from realtime_elevenlabs_fake import API_KEY
from realtime_elevenlabs_world import world
from realtime_markers import flushed

from engine.realtime.session import (
    AssistantAudio,
    AssistantInterrupted,
    AssistantText,
    CallerSpeechStopped,
    CallerText,
    ProviderNotice,
    ResponseDone,
    UsageReport,
)
from engine.sessions.history import ToolCallItem
from tests.waiting import wait_until


async def test_tool_call_result_and_error_results_with_ids_echoed_exactly() -> None:
    async with world() as w:
        session, _ = await w.start()
        odd_id = "toolu_01/Ab+c=="  # echoed byte for byte
        await w.ws.tool_call("get_weather", {"city": "Paris"}, tcid=odd_id)
        ok = await w.ws.wait_result(odd_id)
        assert ok["is_error"] is False and "18 degrees in Paris" in ok["result"]
        bad = await w.ws.wait_result(await w.ws.tool_call("broken_tool", {"x": 1}))
        assert bad["is_error"] is True and "the backend is down" in bad["result"]
        order = {"items": [{"sku": "A1", "qty": 2}], "mode": "pickup", "note": None}
        placed = await w.ws.wait_result(await w.ws.tool_call("place_order", order))
        assert placed["is_error"] is False and "1 item(s)" in placed["result"]
        hidden = await w.ws.wait_result(await w.ws.tool_call("not_shown_tool", {}))
        assert hidden["is_error"] is True  # refused through the normal path; the conversation goes on
        await w.ws.user_says("Thanks!")
        await w.ws.response_complete()
        await w.until(lambda e: isinstance(e, ResponseDone))
        turn = [type(e).__name__ for e in w.events if isinstance(e, CallerSpeechStopped | CallerText | ResponseDone)]
        assert turn == ["CallerSpeechStopped", "CallerText", "ResponseDone"]  # the transcript ends the caller's turn
        assert any(isinstance(e, CallerText) and e.text == "Thanks!" for e in w.events)
        assert w.box.calls == [("get_weather", {"city": "Paris"}), ("broken_tool", {"x": 1})]
        call = next(i for i in session.history.items() if isinstance(i, ToolCallItem))
        assert dict(call.provider_ids)["provider"] == odd_id
    assert w.ws.errors == [] and w.rest.errors == []


async def test_parallel_calls_run_concurrently_and_each_is_answered() -> None:
    async with world() as w:
        w.box.barrier = asyncio.Barrier(2)  # each tool waits for the other: sequential execution would time out
        await w.start()
        a = await w.ws.tool_call("get_weather", {"city": "Oslo"})
        b = await w.ws.tool_call("get_time", {"zone": "Europe/Oslo"})
        ra, rb = await w.ws.wait_result(a), await w.ws.wait_result(b)
        assert not ra["is_error"] and not rb["is_error"] and "noon" in rb["result"]
    assert w.ws.errors == []


async def test_ping_pong_unknown_and_malformed_events_are_survived(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with world() as w:
        await w.start()
        await w.ws.ping(7)
        await w.ws.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "pong")
        for raw in ("not json", "[1]", json.dumps({"type": "mystery_event"})):
            await w.ws.send_raw(raw)
        await w.ws.send({"type": "vad_score", "vad_score_event": {"vad_score": 0.9}})
        await w.ws.send({"type": "internal_tentative_agent_response", "x": 1})
        await w.ws.send({"type": "audio", "audio_event": {"audio_base_64": "!!!", "event_id": 3}})
        await w.ws.send({"type": "client_tool_call", "client_tool_call": {"tool_name": "get_time"}})
        await w.ws.agent_says("Still here.")
        await w.until(lambda e: isinstance(e, AssistantText) and e.text == "Still here.")
        assert w.ws.json_messages(lambda m: m.get("type") == "pong") == [{"type": "pong", "event_id": 7}]
    logged = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert "el: ignored an unknown ElevenLabs message type 'mystery_event'" in logged
    assert "el: ignored a frame from ElevenLabs: not JSON" in logged
    assert "audio_base_64 is not base64" in logged and "without a tool_call_id" in logged
    assert "vad_score" not in logged and "internal_" not in logged
    assert w.ws.errors == []


async def test_barge_in_drops_the_interrupted_audio() -> None:
    async with world() as w:
        await w.start()
        await w.ws.audio(1, b"\x01" * 160)
        await w.ws.audio(2, b"\x02" * 160)
        await w.ws.interrupt(2)
        await w.ws.audio(2, b"\x22" * 160)  # a late chunk of the interrupted utterance
        await w.ws.audio(3, b"\x03" * 160)
        await w.until(lambda e: isinstance(e, AssistantAudio) and e.item_id == "3")
        kinds = [(type(e).__name__, getattr(e, "item_id", None)) for e in w.events if not isinstance(e, ProviderNotice)]
        assert kinds == [
            ("AssistantAudio", "1"),
            ("AssistantAudio", "2"),
            ("AssistantInterrupted", None),
            ("AssistantAudio", "3"),
        ]
        assert isinstance(w.events[2], AssistantInterrupted)


async def test_usage_is_reported_in_audio_seconds() -> None:
    async with world() as w:
        _, live = await w.start()
        for _ in range(50):  # one second of 8 kHz mu-law up
            await live.send_audio(b"\xff" * 160)
        await w.ws.wait_for(lambda m: isinstance(m, dict) and "user_audio_chunk" in m and len(w.ws.audio_chunks) >= 50)
        await w.ws.audio(1, b"\xff" * 4000)  # half a second down
        await w.ws.agent_says("Done.")
        usage = await w.until(lambda e: isinstance(e, UsageReport))
        assert usage == UsageReport(input_audio_s=1.0, output_audio_s=0.5)


async def test_slow_tool_announcement_is_elevenlabs_own_pre_tool_speech() -> None:
    async with world() as w:
        _, live = await w.start()
        assert await live.announce("One moment.") is False  # no announcement message on this socket
        slow = next(c for c in w.rest.tools.values() if c["name"] == "slow_lookup")
        assert slow["pre_tool_speech"] == "force" and slow["response_timeout_secs"] == 7
        tcid = await w.ws.tool_call("slow_lookup", {"q": "x"})
        await asyncio.wait_for(w.slow_started.wait(), 10)
        await flushed(w.ws, live, "elevenlabs")
        assert w.ws.results == []
        w.release.set()
        assert (await w.ws.wait_result(tcid))["result"].count("found it") == 1
    assert w.ws.errors == []


async def test_hangup_call_answers_and_leaves_the_farewell_to_the_agent() -> None:
    async with world() as w:
        session, _ = await w.start()
        result = await w.ws.wait_result(await w.ws.tool_call("hangup_call", {"farewell_message": "Bye now!"}))
        assert result["is_error"] is False and "Bye now!" in result["result"]
        assert session.hangup_requested and session.farewell == "Bye now!"
        await w.ws.audio(5, b"\x05" * 160)
        await w.ws.agent_says("Bye now!")
        await w.until(lambda e: isinstance(e, AssistantText) and e.text == "Bye now!")
        assert any(isinstance(e, AssistantAudio) and e.item_id == "5" for e in w.events)
    assert w.ws.errors == []


async def test_dropped_socket_reconnects_carrying_the_conversation_and_never_answers_late() -> None:
    async with world() as w:
        session, _ = await w.start()
        session.history.add_message("user", "What's the weather?")
        session.history.add_message("assistant", "Which city?")
        stale = await w.ws.tool_call("slow_lookup", {"q": "before the drop"})
        await asyncio.wait_for(w.slow_started.wait(), 10)  # the tool runs when the socket drops
        await w.ws.drop(1011, "internal error")
        notice = await w.until(lambda e: isinstance(e, ProviderNotice) and e.code == "reconnected")
        assert isinstance(notice, ProviderNotice) and not notice.fatal and "1011: internal error" in notice.message
        assert w.ws.connections == 2
        assert w.ws.initiations[1]["conversation_config_override"]["agent"]["first_message"] == ""  # no re-greeting
        await w.ws.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "contextual_update")
        assert "Caller: What's the weather?\nAgent: Which city?" in w.ws.contextual[0]
        w.release.set()  # the stale call finishes now: its conversation is gone, so no result is sent anywhere
        fresh = await w.ws.wait_result(await w.ws.tool_call("get_time", {}))
        assert not fresh["is_error"]
        assert [r["tool_call_id"] for r in w.ws.results] == [fresh["tool_call_id"]]
        assert stale not in json.dumps(w.ws.received)
    assert w.ws.errors == []


async def test_dropped_socket_that_cannot_reconnect_ends_with_a_clear_reason() -> None:
    async with world(reconnect_attempts=2) as w:
        await w.start()
        w.rest.refuse_status = 401
        await w.ws.drop(1011, "gone")
        notice = await w.until(lambda e: isinstance(e, ProviderNotice) and e.fatal)
        assert isinstance(notice, ProviderNotice)
        assert "connection lost" in notice.message and "authentication failed" in notice.message
        assert API_KEY not in notice.message
        await w.ended()


async def test_normal_close_by_the_agent_ends_the_call() -> None:
    async with world() as w:
        await w.start()
        await w.ws.drop(1000, "conversation ended")
        notice = await w.until(lambda e: isinstance(e, ProviderNotice) and e.fatal)
        assert isinstance(notice, ProviderNotice) and "the agent ended the conversation" in notice.message
        await w.ended()
        assert w.ws.connections == 1


async def test_no_per_call_cancel_a_barge_in_still_gets_the_result_the_agent_waits_for() -> None:
    async with world() as w:
        await w.start()
        tcid = await w.ws.tool_call("slow_lookup", {"q": "x"})
        await asyncio.wait_for(w.slow_started.wait(), 10)
        await w.ws.interrupt(1)  # ElevenLabs' interruption is about audio, not the tool call
        w.release.set()
        assert (await w.ws.wait_result(tcid))["is_error"] is False
    assert w.ws.errors == []


async def test_a_call_ended_mid_tool_never_answers() -> None:
    async with world() as w:
        _, live = await w.start()
        tcid = await w.ws.tool_call("slow_lookup", {"q": "x"})
        await asyncio.wait_for(w.slow_started.wait(), 10)
        await live.aclose()  # the call ends while the tool runs: its task is cancelled, nothing is sent
        await w.ended()
        w.release.set()
        await wait_until(lambda: not w.ws.connected, what="the fake to see the socket closed")
        assert tcid not in json.dumps(w.ws.received)  # complete: nothing arrives on a closed socket
    assert w.ws.errors == []

"""Gemini Live faults and reconnects: tool changes, goAway, dropped sockets, auth, bad input, unbounded results."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from harness import ToolBox
from realtime_gemini_fake import API_KEY, GeminiLiveFake, GeminiRig
from realtime_markers import flushed

from engine.providers.base import ProviderError
from engine.realtime.gemini_live import GeminiLiveProvider
from engine.realtime.session import ProviderNotice, ResponseDone
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult

BASE = ["get_weather", "get_time", "broken_tool"]


def names(setup: dict[str, Any]) -> list[str]:
    return sorted(d["name"] for g in setup.get("tools", []) for d in g["functionDeclarations"])


def big_tool() -> FunctionTool:
    async def dump(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        nested: Any = {"leaf": float("nan"), "raw": b"\x00" * 10}
        for _ in range(40):
            nested = {"level": nested}
        rows = [{"id": i, "text": "x" * 200} for i in range(500)]
        return ToolResult.success("dumped", {"nested": nested, "rows": rows, "when": object()})

    return FunctionTool(ToolDefinition("dump_db", "Dump everything.", parameters=(ToolParameter("q", "string"),)), dump)


def rig(fake: GeminiLiveFake, **kw: Any) -> GeminiRig:
    return GeminiRig(fake, [*ToolBox().tools(), big_tool()], kw.pop("allow", [*BASE, "dump_db"]), **kw)


async def test_apply_now_reconnects_with_the_resumption_handle() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.resumption("handle-1")
            await fake.audio(b"\x00\x00" * 480)  # the model is mid-answer
            await r.wait_until(lambda: r.session.handle == "handle-1")
            r.engine.set_tool_enabled(r.call.call_id, "get_time", False, apply="now")
            await r.wait_until(lambda: len(fake.setups) == 2)
            await r.wait_event(lambda e: isinstance(e, ProviderNotice) and e.code == "resumed")
            assert "get_time" not in r.call.shown_tools
            cont = await fake.wait_for(lambda m: isinstance(m, dict) and "clientContent" in m, start=3)
    assert fake.errors == []
    assert fake.setups[1]["sessionResumption"] == {"handle": "handle-1"}
    assert names(fake.setups[0]) == ["broken_tool", "dump_db", "get_time", "get_weather"]
    assert names(fake.setups[1]) == ["broken_tool", "dump_db", "get_weather"]
    assert "tools available to you changed" in json.dumps(cont)  # the response in flight is redone


async def test_next_turn_change_waits_for_the_model_to_finish() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.audio(b"\x00\x00" * 480)
            await r.wait_until(lambda: r.session.events_in.responding)
            r.engine.set_tool_enabled(r.call.call_id, "broken_tool", False)
            await r.engine.calls.realtime_caller_said(r.call.call_id, "and now?")  # the next-turn push
            await flushed(fake, r.session, "gemini")
            assert len(fake.setups) == 1 and "broken_tool" in r.call.shown_tools  # still talking
            await fake.turn_complete()
            await fake.resumption("handle-2")
            await r.wait_until(lambda: len(fake.setups) == 2)
            await r.wait_until(lambda: "broken_tool" not in r.call.shown_tools)
    assert fake.errors == []
    assert fake.setups[1]["sessionResumption"] == {"handle": "handle-2"}
    assert names(fake.setups[1]) == ["dump_db", "get_time", "get_weather"]


async def test_next_turn_change_never_cuts_the_caller_off() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.resumption("handle-c")
            await fake.heard("I would like")  # the caller is mid-sentence, the model silent
            await r.wait_until(lambda: r.session.events_in.caller_speaking)
            r.call.tool_overrides["get_time"] = False
            r.call.tools_revision += 1
            await r.session.update_tools(r.engine.calls.view_for(r.call))
            assert await r.session.announce("One moment.") is False  # nor is the caller talked over
            await asyncio.sleep(0.4)  # longer than handle_wait_ms
            assert len(fake.setups) == 1
            await fake.audio(b"\x00\x00" * 480)
            await fake.turn_complete()
            await r.wait_until(lambda: len(fake.setups) == 2)
    assert fake.errors == []
    assert names(fake.setups[1]) == ["broken_tool", "dump_db", "get_weather"]


async def test_unchanged_view_does_not_reconnect() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await r.session.update_tools(r.engine.calls.view_for(r.call))
            await r.session.update_tools(r.engine.calls.view_for(r.call), apply_now=True)
            await fake.turn_complete()
            await r.wait_event(lambda e: isinstance(e, ResponseDone))
    assert fake.connections == 1 and fake.errors == []


async def test_go_away_waits_for_open_calls_then_resumes() -> None:
    box_release = asyncio.Event()

    async def gated(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        await box_release.wait()
        return ToolResult.success("booked", {"ok": True})

    tool = FunctionTool(ToolDefinition("book", "Book.", parameters=(ToolParameter("n", "integer"),)), gated)
    async with GeminiLiveFake() as fake:
        async with GeminiRig(fake, [tool], ["book"]) as r:
            await fake.resumption("handle-g")
            await fake.tool_call(("fc-1", "book", {"n": 1}))
            await fake.go_away("5s")
            await fake.resumption("handle-g2")  # read after the goAway: once the session has it, it has both
            await r.wait_until(lambda: r.session.handle == "handle-g2")
            await flushed(fake, r.session, "gemini")  # a reconnect started by then would carry this audio
            assert fake.connections == 1  # the open call is answered on this connection first
            box_release.set()
            await r.wait_until(lambda: len(fake.setups) == 2)
            await r.session.send_audio(b"\x00\x00" * 640)
            await fake.wait_for(lambda m: isinstance(m, dict) and "realtimeInput" in m)
    assert fake.errors == []
    assert [fr["id"] for fr in fake.responses()] == ["fc-1"]
    assert fake.setups[1]["sessionResumption"] == {"handle": "handle-g2"}
    assert fake.connections == 2


async def test_dropped_socket_resumes_with_backoff() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.resumption("handle-d")
            await r.wait_until(lambda: r.session.handle == "handle-d")
            await fake.drop(1011, "Internal error encountered.")
            notice = await r.wait_event(lambda e: isinstance(e, ProviderNotice))
            await fake.turn_complete()
            await r.wait_event(lambda e: isinstance(e, ResponseDone))
    assert fake.errors == []
    assert notice.code == "resumed" and "1011" in notice.message and not notice.fatal
    assert fake.setups[1]["sessionResumption"] == {"handle": "handle-d"}


async def test_go_away_with_nothing_open_reconnects_at_once() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.resumption("handle-a")
            await fake.go_away()
            await r.wait_until(lambda: len(fake.setups) == 2)
            await fake.resumption("handle-b")
            await fake.go_away()
            await r.wait_until(lambda: len(fake.setups) == 3)
            notices = [e for e in r.events if isinstance(e, ProviderNotice)]
    assert fake.errors == []
    assert [s["sessionResumption"] for s in fake.setups] == [{}, {"handle": "handle-a"}, {"handle": "handle-b"}]
    assert all(n.code == "resumed" and "goAway" in n.message for n in notices)


async def test_expired_handle_falls_back_to_a_fresh_session() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.resumption("handle-old")
            await r.wait_until(lambda: r.session.handle == "handle-old")
            fake.expired_handles.add("handle-old")
            await fake.drop()
            notice = await r.wait_event(lambda e: isinstance(e, ProviderNotice))
            await r.wait_until(lambda: len(fake.setups) == 3)
    assert fake.errors == []
    assert [s["sessionResumption"] for s in fake.setups] == [{}, {"handle": "handle-old"}, {}]
    assert notice.code == "fresh" and not notice.fatal


async def test_setup_refused_for_policy_on_reconnect_ends_the_call_without_retrying() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, options={"reconnect_attempts": 50}) as r:
            fake.refuse_setup = (1008, "API key not valid. Please pass a valid API key.")
            await fake.drop()
            notice = await r.wait_event(lambda e: isinstance(e, ProviderNotice) and e.fatal)
    assert "1008" in notice.message and "API key not valid" in notice.message and API_KEY not in notice.message
    assert fake.connections == 2


async def test_caller_audio_during_a_reconnect_is_heard_on_the_new_connection() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.resumption("handle-h")
            await r.wait_until(lambda: r.session.handle == "handle-h")
            fake.answer_setup = False  # the next setup waits for the test
            await fake.drop()
            await r.wait_until(lambda: len(fake.setups) == 2)
            for i in range(3):
                await r.session.send_audio(bytes([i]) * 1280)  # 40 ms at 16 kHz: one message each
            await fake.send({"setupComplete": {}})
            await r.wait_until(lambda: len(fake.of_kind("realtimeInput")) == 3)
    assert fake.errors == []
    second_setup = max(i for i, m in enumerate(fake.received) if isinstance(m, dict) and "setup" in m)
    first_audio = min(i for i, m in enumerate(fake.received) if isinstance(m, dict) and "realtimeInput" in m)
    assert first_audio > second_setup
    assert fake.audio_in() == b"".join(bytes([i]) * 1280 for i in range(3))


async def test_dropped_socket_without_handle_reconnects_fresh_and_replays_the_transcript() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await r.engine.calls.realtime_caller_said(r.call.call_id, "I want a table")
            await r.engine.calls.realtime_agent_said(r.call.call_id, "For how many?")
            await fake.drop()
            notice = await r.wait_event(lambda e: isinstance(e, ProviderNotice))
            replay = await fake.wait_for(
                lambda m: isinstance(m, dict) and m.get("clientContent", {}).get("turnComplete") is False
            )
    assert fake.errors == []
    assert notice.code == "fresh" and "without a resumption handle" in notice.message
    assert fake.setups[1]["sessionResumption"] == {}
    assert isinstance(replay, dict)
    turns = replay["clientContent"]["turns"]
    assert [t["role"] for t in turns][-2:] == ["user", "model"]
    assert turns[-1]["parts"][0]["text"] == "For how many?"


async def test_drop_then_refused_reconnect_ends_the_call_with_a_reason() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            fake.refuse_status = 401
            await fake.drop()
            notice = await r.wait_event(lambda e: isinstance(e, ProviderNotice) and e.fatal)
            await asyncio.wait_for(r._collector, 5)  # events() ended
    assert "authentication failed" in notice.message and API_KEY not in notice.message


async def test_auth_failure_is_one_clear_error_without_the_key() -> None:
    async with GeminiLiveFake() as fake:
        fake.refuse_status = 401
        with pytest.raises(ProviderError) as ei:
            async with rig(fake):
                pass
    assert "authentication failed" in str(ei.value) and API_KEY not in str(ei.value)


async def test_setup_refused_by_close_reports_the_reason() -> None:
    async with GeminiLiveFake() as fake:
        fake.refuse_setup = (1008, "models/gemini-live-test is not found for API version v1beta")
        with pytest.raises(ProviderError) as ei:
            async with rig(fake):
                pass
    assert "1008" in str(ei.value) and "is not found" in str(ei.value) and API_KEY not in str(ei.value)


async def test_malformed_and_unknown_messages_are_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.send_raw("not json at all")
            await fake.send_raw(b"\xff\xfe not utf-8")
            await fake.send({"somethingNew": {"x": 1}})
            await fake.send({"toolCall": "not an object"})
            await fake.send({"serverContent": {"modelTurn": {"parts": [{"inlineData": {"mimeType": "audio/pcm"}}]}}})
            await fake.send(
                {"serverContent": {"modelTurn": {"parts": [{"inlineData": {"data": "!!", "mimeType": "audio/pcm"}}]}}}
            )
            await fake.send({"toolCall": {"functionCalls": [{"name": "get_weather", "args": {}}]}})  # no id
            await fake.turn_complete()
            await r.wait_event(lambda e: isinstance(e, ResponseDone))
    assert fake.errors == [] and fake.responses() == []
    text = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("engine.realtime"))
    assert "gem: ignored" in text and "somethingNew" in text and "not JSON" in text
    assert "toolCall is a str" in text and "not base64" in text and "without id" in text
    assert "not UTF-8 JSON" in text


async def test_call_for_a_tool_not_shown_gets_an_error_result() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, allow=["get_weather"]) as r:
            await fake.tool_call(("fc-x", "dump_db", {"q": "all"}))
            await fake.wait_for(lambda m: isinstance(m, dict) and "toolResponse" in m)
            assert r.call.shown_tools == {"get_weather"}
    assert fake.errors == []
    (fr,) = fake.responses()
    assert fr["id"] == "fc-x" and fr["name"] == "dump_db"
    assert fr["response"]["error"]["status"] == "rejected"


async def test_large_nested_result_is_bounded_and_json_safe() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake) as r:
            await fake.tool_call(("fc-big", "dump_db", {"q": "all"}))
            await fake.wait_for(lambda m: isinstance(m, dict) and "toolResponse" in m)
            await fake.turn_complete()
            await r.wait_event(lambda e: isinstance(e, ResponseDone))
    assert fake.errors == []  # no 1011: under the size and depth the service accepts
    (fr,) = fake.responses()
    out = fr["response"]["output"]
    assert out["status"] == "success" and out["message"] == "dumped"
    assert "result cut to 16000 bytes" in out["note"] and len(json.dumps(fr)) < 17_000
    assert fake.connections == 1


async def test_uncapped_result_would_kill_the_socket() -> None:
    """The fake enforces the service's limit (so the bounded-result test above can fail)."""
    async with GeminiLiveFake() as fake:
        async with rig(fake, options={"max_result_bytes": 100_000, "max_result_depth": 60}) as r:
            await fake.tool_call(("fc-big", "dump_db", {"q": "all"}))
            await r.wait_event(lambda e: isinstance(e, ProviderNotice))
    assert any("1011" in e for e in fake.errors)


async def test_check_connection_proves_key_model_and_endpoint() -> None:
    async with GeminiLiveFake() as fake:
        r = rig(fake)
        provider = r.engine.providers["gem"]
        assert isinstance(provider, GeminiLiveProvider)
        report = await provider.check_connection()
        assert report == {"provider": "gem", "type": "gemini_live", "model": "gemini-live-test", "url": fake.url}
        assert fake.setups[0]["model"] == "models/gemini-live-test" and "tools" not in fake.setups[0]
        fake.refuse_setup = (1008, "models/gemini-live-test is not found")
        with pytest.raises(ProviderError, match="setup refused: closed by the provider \\(1008: models/"):
            await provider.check_connection()
        fake.refuse_status = 403
        with pytest.raises(ProviderError, match="access denied") as ei:
            await provider.check_connection()
    assert fake.errors == [] and API_KEY not in str(ei.value)

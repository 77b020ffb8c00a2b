"""ElevenLabs Agents: tool changes on a live call (apply now reconnects; next turn takes effect on the next call)."""

from __future__ import annotations

from realtime_elevenlabs_world import TOOLS, world

from engine.realtime.session import ProviderNotice


async def test_apply_now_pushes_the_tools_and_reconnects_with_the_conversation_so_far() -> None:
    async with world() as w:
        session, _ = await w.start()
        await w.engine.calls.realtime_caller_said(session.call_id, "What time is it?")
        w.rest.requests.clear()
        assert w.engine.set_tool_enabled(session.call_id, "get_time", False, apply="now")
        await w.until(lambda e: isinstance(e, ProviderNotice) and "reconnected to apply" in e.message)
        assert sorted(w.rest.linked_names()) == sorted(t for t in TOOLS if t != "get_time")
        assert [m for m, _ in w.rest.mutations()] == ["PATCH"]  # only the agent's tool list changed
        assert w.ws.connections == 2 and "get_time" not in session.shown_tools
        assert w.ws.initiations[1]["conversation_config_override"]["agent"]["first_message"] == ""
        await w.ws.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "contextual_update")
        assert "Caller: What time is it?" in w.ws.contextual[0]
        refused = await w.ws.wait_result(await w.ws.tool_call("get_time", {}))
        assert refused["is_error"] is True
        ok = await w.ws.wait_result(await w.ws.tool_call("get_weather", {"city": "Rome"}))
        assert ok["is_error"] is False
        assert not any(isinstance(e, ProviderNotice) and e.fatal for e in w.events)
    assert w.ws.errors == [] and w.rest.errors == []


async def test_next_turn_change_is_pushed_removals_refused_now_additions_from_the_next_conversation() -> None:
    async with world() as w:
        session, _ = await w.start()
        calls = w.engine.calls
        w.engine.set_tool_enabled(session.call_id, "get_weather", False)
        await calls.realtime_caller_said(session.call_id, "Hello?")
        await w.until(lambda e: isinstance(e, ProviderNotice) and "takes effect on the next call" in e.message)
        assert "get_weather" not in w.rest.linked_names() and w.ws.connections == 1
        assert "get_weather" not in session.shown_tools
        refused = await w.ws.wait_result(await w.ws.tool_call("get_weather", {"city": "Rome"}))
        assert refused["is_error"] is True and w.box.calls == []
        # back on: the live conversation started with it, so it is callable again at once (and the agent has it)
        w.engine.set_tool_enabled(session.call_id, "get_weather", True)
        await calls.realtime_caller_said(session.call_id, "And now?")
        assert "get_weather" in w.rest.linked_names() and "get_weather" in session.shown_tools
        assert len(w.of(ProviderNotice)) == 1
        # a tool the live conversation never had: pushed for the next conversation, not callable in this one
        w.engine.set_tool_enabled(session.call_id, "get_time", False, apply="now")
        await w.until(lambda e: isinstance(e, ProviderNotice) and "reconnected to apply" in e.message)
        w.engine.set_tool_enabled(session.call_id, "get_time", True)
        await calls.realtime_caller_said(session.call_id, "Time?")
        await w.until(lambda e: len(w.of(ProviderNotice)) == 3)
        assert "get_time" in w.rest.linked_names() and "get_time" not in session.shown_tools
        assert w.ws.connections == 2
    assert w.ws.errors == [] and w.rest.errors == []


async def test_an_unchanged_view_changes_nothing() -> None:
    async with world() as w:
        session, live = await w.start()
        w.rest.requests.clear()
        await live.update_tools(w.engine.calls.view_for(session), apply_now=True)
        assert w.rest.requests == [] and w.ws.connections == 1

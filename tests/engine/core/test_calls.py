"""Calls end to end through the scripted provider: greeting, intents, tool path, hangup after the farewell."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.calls.manager import CallError
from engine.config.models import Settings
from engine.events import ToolsChanged
from engine.providers.script import ScriptError, load_script
from engine.sessions.history import ToolCallItem
from engine.tools.base import FunctionTool, ToolDefinition, ToolParameter, ToolResult
from tests.engine.core.helpers import echo_tool, engine_with, settings_with

ECHO_INTENT = {
    "name": "echo",
    "patterns": [r"echo (?P<text>\w+)"],
    "tools": [{"name": "echo", "args": {"text": "{text}"}}],
    "reply": "I said {result}.",
}
BYE = {"name": "bye", "patterns": [r"\bbye\b"], "tools": [{"name": "hangup_call"}], "reply": "{result}"}


async def test_demo_call(demo_config_path: Path) -> None:
    from engine.config import load_settings

    engine = Engine(load_settings(demo_config_path), config_path=demo_config_path)
    sub = engine.bus.subscribe()
    async with engine:
        call = await engine.start_call("demo", caller_name="Ada")
        r = await engine.user_said(call.call_id, "hello")
        assert r.text.startswith("Hello! Ask me to roll dice")
        await engine.user_said(call.call_id, "goodbye")
        assert not call.active and call.end_reason == "hangup"
    types = [e.type for e in sub.drain() if getattr(e, "call_id", None) == call.call_id]
    assert types[0] == "call.started" and types[-1] == "call.ended"
    assert types.index("tool.requested") < types.index("tool.completed") < types.index("call.ended")
    # the farewell is spoken (transcript) before the call ends
    assert types[-2] == "transcript.added"


async def test_tool_reply_uses_result_message(tmp_path: Path) -> None:
    engine = engine_with(settings_with(tmp_path, [ECHO_INTENT, BYE], ["echo", "hangup_call"]), echo_tool())
    call = await engine.start_call("c")
    reply = await engine.user_said(call.call_id, "echo banana")
    assert reply.text == "I said echo banana."


async def test_tool_not_in_context_is_never_run(tmp_path: Path) -> None:
    ran: list[Any] = []

    async def run(args: dict, ctx: object) -> ToolResult:
        ran.append(args)
        return ToolResult.success("x")

    tool = FunctionTool(ToolDefinition("echo", "d", parameters=(ToolParameter("text", "string"),)), run)
    engine = engine_with(settings_with(tmp_path, [ECHO_INTENT], ["hangup_call"]), tool)
    sub = engine.bus.subscribe()
    call = await engine.start_call("c")
    await engine.user_said(call.call_id, "echo banana")
    assert ran == []
    assert "tool.rejected" in [e.type for e in sub.drain()]


async def test_fallback_and_unknown_context(tmp_path: Path) -> None:
    engine = engine_with(settings_with(tmp_path, [ECHO_INTENT], ["echo"]), echo_tool())
    call = await engine.start_call("c")
    assert (await engine.user_said(call.call_id, "what is this")).text == "what?"
    with pytest.raises(CallError, match="unknown context 'nope'"):
        await engine.start_call("nope")


async def test_history_records_calls_and_results(tmp_path: Path) -> None:
    engine = engine_with(settings_with(tmp_path, [ECHO_INTENT], ["echo"]), echo_tool())
    call = await engine.start_call("c")
    await engine.user_said(call.call_id, "echo one")
    kinds = [i.kind for i in call.history.items()]
    assert kinds == ["message", "message", "tool_call", "tool_result", "message"]
    tc = call.history.items()[2]
    assert isinstance(tc, ToolCallItem)
    assert tc.id == "tc_1" and tc.arguments == {"text": "one"}


async def test_apply_now_restarts_turn_without_the_tool(tmp_path: Path) -> None:
    gate = asyncio.Event()

    async def slow(args: dict, ctx: object) -> ToolResult:
        await gate.wait()
        return ToolResult.success("slow done")

    tool = FunctionTool(ToolDefinition("echo", "d", parameters=(ToolParameter("text", "string"),)), slow)
    engine = engine_with(settings_with(tmp_path, [ECHO_INTENT], ["echo"]), tool)
    sub = engine.bus.subscribe()
    call = await engine.start_call("c")
    turn = asyncio.create_task(engine.user_said(call.call_id, "echo x"))
    for _ in range(100):
        await asyncio.sleep(0)
        if call.history.pending_tool_calls():
            break
    assert engine.set_tool_enabled(call.call_id, "echo", False, apply="now") is True
    reply = await asyncio.wait_for(turn, 2)
    assert "not offered" in reply.text or "I said" in reply.text
    assert "echo" not in call.shown_tools
    evs = sub.drain()
    changed = [e for e in evs if isinstance(e, ToolsChanged)]
    assert changed and changed[0].apply == "now" and changed[0].removed == ("echo",)
    # the restarted turn starts from the same snapshot: exactly one user message "echo x"
    users = [i for i in call.history.items() if i.kind == "message" and i.role == "user"]
    assert len(users) == 1
    calls = [i for i in call.history.items() if i.kind == "tool_call"]
    assert len(calls) == 1  # the cancelled call was rolled back; only the restarted turn's (rejected) call
    gate.set()


async def test_next_turn_toggle(tmp_path: Path) -> None:
    engine = engine_with(settings_with(tmp_path, [ECHO_INTENT], ["echo"]), echo_tool())
    call = await engine.start_call("c")
    assert engine.set_tool_enabled(call.call_id, "echo", False) is False
    await engine.user_said(call.call_id, "echo x")
    assert "echo" not in call.shown_tools
    engine.set_tool_enabled(call.call_id, "echo", True)
    r = await engine.user_said(call.call_id, "echo y")
    assert r.text == "I said echo y."


def test_script_errors_name_file_and_intent(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("intents:\n  - name: roll\n    patterns: ['(unclosed']\n")
    with pytest.raises(ScriptError, match=r"bad.yaml: intent 'roll': patterns: pattern '\(unclosed'"):
        load_script(p)
    p.write_text("intents:\n  - name: x\n    patterns: [a]\n    replly: hi\n")
    with pytest.raises(ScriptError, match="intent 'x': replly: unknown key"):
        load_script(p)
    with pytest.raises(ScriptError, match="not found"):
        load_script(tmp_path / "missing.yaml")


def test_settings_without_contexts_is_fine() -> None:
    assert Engine(Settings()).registry.names() == [
        "blind_transfer",
        "cancel_transfer",
        "hangup_call",
        "request_transcript",
        "send_email_summary",
        "transfer",
    ]


@pytest.mark.parametrize(
    ("said", "dice"),
    [
        ("roll 2d6 for me", "2d6"),
        ("roll a d20, please", "d20"),
        ("roll three d six plus two.", "three d six plus two"),
        ("roll me a d8 thanks", "d8"),
    ],
)
def test_the_demo_script_hands_the_dice_tool_only_the_dice(said: str, dice: str) -> None:
    """What a user types to the demo after the dice ("for me", "please") is not part of the notation."""
    assert _demo_route(said) == ("roll", {"expr": dice})


def _demo_route(said: str) -> tuple[str, dict[str, str]] | None:
    """The demo line's script (config/scripts/demo.yaml): the intent ``said`` matches and what it took from it."""
    from engine.config.models import ProviderConfig
    from engine.providers.scripted import ScriptedProvider

    root = Path(__file__).resolve().parents[3]
    provider = ScriptedProvider(
        "demo", ProviderConfig(type="scripted", script="scripts/demo.yaml"), base_dir=root / "config"
    )
    found = provider.match(said)
    return None if found is None else (found[0].name, found[1])


def test_the_demo_script_rolls_on_its_tables() -> None:
    """A roll "on the loot table" is a table's roll, not dice called "on the loot table"; tables can be listed."""
    assert _demo_route("roll on the loot table") == ("table", {"table": "loot"})
    assert _demo_route("roll on a random encounter table please") == ("table", {"table": "random encounter"})
    assert _demo_route("what tables do you have") == ("tables", {})
    assert _demo_route("roll two d six") == ("roll", {"expr": "two d six"})


def test_the_demo_script_remembers_facts_about_the_game_not_about_the_speaker() -> None:
    """A fact about someone of the game is kept under that someone; one about the speaker ("my name is …") would be
    kept under "My", so it gets the hint instead."""
    assert _demo_route("remember that grimble owes the party ten gold") == (
        "remember",
        {"subject": "grimble", "fact": "owes the party ten gold"},
    )
    assert _demo_route("remember that the mayor hates dragons") == (
        "remember",
        {"subject": "mayor", "fact": "hates dragons"},
    )
    assert _demo_route("remember that my name is Ada") is None
    assert _demo_route("please remember that we are in Waterdeep") is None

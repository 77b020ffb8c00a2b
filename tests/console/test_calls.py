"""Pilot tests of the Calls screen, by keyboard alone: start a call, talk, tiers per call and global,
tool toggles next turn and now, end the call; and the keymap from config."""

from __future__ import annotations

from pathlib import Path

from console.app import AvaConsole


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, text: str) -> None:
    path.write_text(text)


async def _start(pilot, app: AvaConsole, wait) -> str:
    await wait(pilot, lambda: app.engine_running)
    await pilot.press("ctrl+n")
    await wait(pilot, lambda: bool(app.state.calls) and app.selected_call in app.state.calls)
    assert app.selected_call is not None
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls")  # where `s` (talk) works
    await pilot.press("s")
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk")
    return app.selected_call


async def test_talk_and_transcript(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _start(pilot, app, wait)
        await wait(pilot, lambda: any(r == "assistant" for _, r, _ in app.state.transcript(call_id)))
        await pilot.press(*"hello", "enter")
        await wait(pilot, lambda: any(t == "Hello! I'm listening." for _, _, t in app.state.transcript(call_id)))
        log = app.screen.query_one("#transcript")
        assert any("listening" in str(line.text) for line in log.lines)  # type: ignore[attr-defined]
        await pilot.press("s", *"goodbye", "enter")  # Enter gave the keys back to the calls table: s talks again
        await wait(pilot, lambda: call_id not in app.state.calls)
        assert any(i.exposed_name == "hangup_call" and i.status == "success" for i in app.state.invocations)


async def test_tier_keys_call_and_global(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _start(pilot, app, wait)
        await pilot.press("escape")
        session = next(s for s in app.engine.live_calls() if s.call_id == call_id)  # type: ignore[union-attr]
        await pilot.press("f7")
        assert session.tier == "deep" and session.tier_override == "deep"
        await wait(pilot, lambda: app.state.calls[call_id].tier == "deep")
        assert "operator override" in app.state.calls[call_id].tier_reason
        await pilot.press("f5")
        assert session.tier == "fast"
        await pilot.press("f8")
        assert session.tier_override is None
        await pilot.press("f19")  # shift+F7: the global default
        assert app.engine.default_tier == "deep"  # type: ignore[union-attr]
        await wait(pilot, lambda: app.state.default_tier == "deep")
        await pilot.press("f18")
        assert app.engine.default_tier == "standard"  # type: ignore[union-attr]
        assert any(line.type == "tier.changed" and "default" in line.text for line in app.state.log)


async def test_tool_toggle_next_turn_and_now(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _start(pilot, app, wait)
        await pilot.press("escape")
        session = next(s for s in app.engine.live_calls() if s.call_id == call_id)  # type: ignore[union-attr]
        await pilot.press("t")
        assert session.tool_overrides == {"hangup_call": False}
        await wait(pilot, lambda: any(ln.type == "tools.changed" and "next turn" in ln.text for ln in app.state.log))
        table = app.screen.query_one("#call-tools")
        await wait(pilot, lambda: "off" in str(table.get_row("hangup_call")[0]))  # type: ignore[attr-defined]
        await pilot.press("n")
        assert session.tool_overrides == {"hangup_call": True}
        await wait(pilot, lambda: sum(ln.type == "tools.changed" for ln in app.state.log) == 2)
        assert app.state.calls[call_id].tools_note in ("now", "next turn")
        await pilot.press("e")
        await wait(pilot, lambda: call_id not in app.state.calls)


async def test_keymap_from_config(config_path: Path, wait) -> None:
    text = _read(config_path) + "\nconsole:\n  keymap: {tier_deep: f12, bogus_action: x}\n"
    _write(config_path, text)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _start(pilot, app, wait)
        await pilot.press("escape")
        session = next(s for s in app.engine.live_calls() if s.call_id == call_id)  # type: ignore[union-attr]
        await pilot.press("f7")
        assert session.tier != "deep"
        await pilot.press("f12")
        assert session.tier == "deep"
        bar = str(app.screen.query_one(".keybar").render())
        assert "F12" in bar


async def test_palette_tier_command(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _start(pilot, app, wait)
        await pilot.press("escape", "ctrl+p")
        await pilot.press(*f"tier: DEEP for {call_id}")
        await pilot.pause(0.5)
        await pilot.press("enter")
        session = next(s for s in app.engine.live_calls() if s.call_id == call_id)  # type: ignore[union-attr]
        await wait(pilot, lambda: session.tier == "deep")

"""Pilot tests of the keys: the command palette lists every keyed action of every screen (and of each dialog,
opened on it), ``?`` shows the current screen's keys with the app-wide ones, ``/`` filters any table, Home and End
move a table's cursor, toggling a tool keeps the cursor on that tool, Ctrl+N leaves the focus where ``s`` works,
and Enter on a call's invocation opens its detail."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.command import CommandPalette
from textual.widgets import DataTable

from console.app import AvaConsole
from console.bindings import SCREEN_BINDING_IDS, app_bindings
from console.commands import ConsoleCommands
from console.state import Invocation
from console.widgets.tables import ConsoleTable, TableFilter, cursor_key
from tests.console.conftest import servers_up

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py"


def _with_servers(config_path: Path, *ids: str) -> None:
    entries = "".join(f"    {sid}:\n      command: [{sys.executable}, {FIXTURE}]\n" for sid in ids)
    config_path.write_text(config_path.read_text().replace("  servers: {}\n", "  servers:\n" + entries))


async def _palette(pilot, app: AvaConsole, wait) -> dict[str, str]:
    """Open the palette on the current screen; its keyed commands as {binding id: help text}."""
    app.action_command_palette()
    await wait(pilot, lambda: isinstance(app.screen, CommandPalette) and bool(app.screen._providers))
    provider = next(p for p in app.screen._providers if isinstance(p, ConsoleCommands))  # type: ignore[attr-defined]
    found = {h.rsplit("· ", 1)[-1]: h for _t, _cb, h in provider._commands() if h.startswith("key ")}
    await pilot.press("escape")
    await wait(pilot, lambda: not isinstance(app.screen, CommandPalette))
    return found


async def test_palette_lists_every_keyed_action_with_its_key(config_path: Path, wait) -> None:
    from console.approvals import PendingRow
    from console.elicitations import QuestionRow
    from console.screens.add_source import AddSourceScreen
    from console.screens.approval_reason import DenyReasonScreen
    from console.screens.audio_devices import AudioDevicesScreen
    from console.screens.call_view import CallViewScreen
    from console.screens.elicitation import ElicitationScreen
    from console.screens.import_dialog import ImportScreen, InputsScreen
    from console.screens.invocations import InvocationDetail
    from console.screens.key_help import KeyHelpScreen
    from console.screens.leave_form import LeaveFormScreen
    from console.screens.modals import ConfirmScreen, DiffScreen, NameEntry, SecretEntry
    from console.screens.recordings import RecordingsScreen
    from console.screens.server_describe import ServerDescribe
    from console.screens.server_form import ServerForm
    from console.screens.sign_in import SignInScreen
    from console.screens.steer_modal import SteerModal
    from console.screens.tool_inspector import ToolInspector
    from console.screens.transfer_modal import TransferModal
    from engine.config.mcp_import_result import Ask
    from engine.config.mcp_vscode import InputPrompt
    from engine.config.models.tools import TransferTarget

    app = AvaConsole(config_path, list_audio_devices=lambda rescan: [])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        seen: dict[str, str] = {}
        for key in ("f1", "f2", "f3", "f4", "f9", "f10", "f11"):
            await pilot.press(key)
            await pilot.pause()  # the screen has handled what its switch queued (its focus, its bindings)
            here = await _palette(pilot, app, wait)
            # the screen's own keys are listed as keys of this screen ("key t · server_test"), not "F3 then t"
            merged = app.screen._merged_bindings
            assert merged is not None
            own = {b.id for b in merged.key_to_bindings.get("t", []) if b.id}
            for bid in own:
                assert " then " not in here[bid], here[bid]
            seen.update(here)
        await pilot.press("f3", "slash")  # a table's filter box, with its own key
        await wait(pilot, lambda: isinstance(app.focused, TableFilter))
        seen.update(await _palette(pilot, app, wait))
        assert seen["server_test"] in ("key t · server_test", "key F3 then t · server_test")
        inv = Invocation(seq=1, ts=0.0, call_id="call-1", tool_call_id="t1", exposed_name="x", server="s", tool="x")
        for dialog in (
            ConfirmScreen("sure?"),
            DiffScreen("title", "--- a\n+++ b\n"),
            LeaveFormScreen("the form", "Save"),
            SecretEntry(),
            NameEntry("new name"),
            ImportScreen(),
            InputsScreen([Ask(InputPrompt("api_key", "API key"), ("gh_API_KEY",), ("gh",))]),
            AddSourceScreen(),
            AudioDevicesScreen((None, None), lambda rescan: []),
            InvocationDetail(inv, set()),
            ServerForm(None),
            KeyHelpScreen(app.screen),
            SteerModal("say", "call-1", 200),
            TransferModal("call-1", {"support": TransferTarget(destination="PJSIP/6000")}),
            RecordingsScreen(config_path.parent),
            DenyReasonScreen(PendingRow("a1", "call-1", "hangup_call", "builtin", {}, "asked", 0.0)),
            CallViewScreen("call-1"),
            ServerDescribe("fx"),
            ToolInspector("fx"),
            SignInScreen("fx"),
            ElicitationScreen(
                QuestionRow(
                    "el-1",
                    "call-1",
                    "fx",
                    "ask",
                    "mcp_fx_ask",
                    "How many?",
                    "form",
                    None,
                    0.0,
                    {"type": "object", "properties": {"n": {"type": "integer"}}},
                ),
                lambda *a: None,
            ),
        ):
            await app.push_screen(dialog)  # returns once the dialog is mounted
            await pilot.pause()
            assert app.screen is dialog
            seen.update(await _palette(pilot, app, wait))
            await app.pop_screen()
            await pilot.pause()
        expected = set(SCREEN_BINDING_IDS) | {b.id for b in app_bindings() if b.id}
        assert expected - set(seen) == set()
        assert seen["screen_servers"] == "key F3 · screen_servers"


async def test_palette_runs_another_screens_key_there(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("ctrl+p")
        await wait(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"Budget: Next context")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "BudgetScreen")


async def test_question_mark_lists_this_screens_keys_and_the_app_keys(config_path: Path, wait) -> None:
    from console.screens.key_help import KeyHelpScreen

    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("question_mark")
        await wait(pilot, lambda: isinstance(app.screen, KeyHelpScreen))
        table = app.screen.query_one("#key-table", DataTable)
        rows = {str(table.get_row(k)[3]): [str(c) for c in table.get_row(k)] for k in table.rows}
        assert rows["server_test"][:3] == ["screen", "t", "Test"]
        assert rows["screen_calls"][:2] == ["app", "F1"]
        assert rows["table_filter"][1] == "/"
        await pilot.press("escape")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")


async def test_slash_filters_a_table_and_esc_clears_it(config_path: Path, wait) -> None:
    _with_servers(config_path, "alpha", "beta")
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        table = app.screen.query_one("#servers", ConsoleTable)
        await wait(pilot, lambda: table.row_count == 2)
        await pilot.press("slash")
        await wait(pilot, lambda: isinstance(app.focused, TableFilter))
        await pilot.press(*"bet")
        await wait(pilot, lambda: table.row_count == 1)
        assert cursor_key(table) == "beta" and table.has_row("alpha")
        app.screen.poll()  # type: ignore[attr-defined]  # updates while filtered keep the hidden row
        await pilot.pause()
        assert table.row_count == 1 and table.has_row("alpha")
        await pilot.press("enter")
        assert app.focused is table
        await pilot.press("slash", "escape")
        await wait(pilot, lambda: table.row_count == 2)
        assert app.focused is table and not app.screen.query(TableFilter)


async def test_home_and_end_move_the_table_cursor(config_path: Path, wait) -> None:
    _with_servers(config_path, "alpha", "beta", "gamma")
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        table = app.screen.query_one("#servers", DataTable)
        await wait(pilot, lambda: table.row_count == 3)
        await pilot.press("end")
        assert table.cursor_row == 2
        await pilot.press("home")
        assert table.cursor_row == 0


async def _call(pilot, app: AvaConsole, wait) -> str:
    await wait(pilot, lambda: app.engine_running, within=30)
    await pilot.press("ctrl+n")
    await wait(pilot, lambda: bool(app.state.calls) and app.selected_call in app.state.calls)
    assert app.selected_call is not None
    return app.selected_call


async def test_ctrl_n_leaves_the_focus_where_s_talks(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _call(pilot, app, wait)
        await pilot.pause(0.3)
        assert app.focused is not None and app.focused.id == "calls"
        await pilot.press("s")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        assert app.screen.query_one("#talk").value == ""  # type: ignore[attr-defined]


async def test_toggling_a_tool_keeps_the_cursor_on_it(config_path: Path, wait) -> None:
    _with_servers(config_path, "fx")
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: servers_up(app, "fx"), within=30)
        call_id = await _call(pilot, app, wait)
        table = app.screen.query_one("#call-tools", DataTable)
        await wait(pilot, lambda: table.row_count > 4)
        table.focus()
        await pilot.press("down", "down", "down")
        name = cursor_key(table)
        engine = app.engine
        assert engine is not None and name is not None
        before = {t.name: t.enabled for t in engine.tool_states(call_id)}
        order = [k.value for k in table.rows]
        await pilot.press("n")
        await wait(pilot, lambda: {t.name: t.enabled for t in engine.tool_states(call_id)}[name] is False)
        await pilot.pause(0.2)
        assert cursor_key(table) == name and [k.value for k in table.rows] == order
        await pilot.press("n")  # the same tool again: back on
        await wait(pilot, lambda: {t.name: t.enabled for t in engine.tool_states(call_id)} == before)
        assert cursor_key(table) == name


async def test_enter_on_a_calls_invocation_opens_its_detail(config_path: Path, wait) -> None:
    from console.screens.invocations import InvocationDetail

    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _call(pilot, app, wait)
        await pilot.press("s", *"goodbye", "enter")
        inv = app.screen.query_one("#call-invocations", DataTable)
        await wait(pilot, lambda: inv.row_count == 1)
        inv.focus()
        await pilot.press("enter")
        await wait(pilot, lambda: isinstance(app.screen, InvocationDetail))
        assert app.screen.inv.exposed_name == "hangup_call"  # type: ignore[attr-defined]


async def test_a_log_table_follows_the_newest_row_unless_moved_up(config_path: Path) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        table = ConsoleTable(follow=True)
        await app.screen.mount(table)
        table.add_column("N", key="n")
        for n in range(3):
            table.add_row(str(n), key=str(n))
        await pilot.pause()
        assert table.cursor_row == 2
        table.move_cursor(row=0)
        table.add_row("3", key="3")
        await pilot.pause()
        assert table.cursor_row == 0

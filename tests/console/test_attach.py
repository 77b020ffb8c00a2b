"""``ava-console --attach`` (issue 19, part 2) against an in-process ``RemoteEngines``: three engines whose call ids
collide show as separate rows with an Engine column; the operator's keys go to the engine that owns the call, once,
and the answer or the failure names that engine; an engine lost marks its calls lost and shows gone; the link lost
and back is shown; keys that need this console's own engine say so. The real clients on a real redis-server are in
``tests/integration/test_attach_console.py``."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from console.app import AvaConsole, main
from console.attach import AttachLink, EnginesChanged, rename
from console.launch import attach_target
from console.messages import EventBatch
from console.screens.calls import CallsScreen
from console.screens.calls_table import ATTACHED_COLUMNS
from engine import RemoteError
from engine.events import (
    CallStarted,
    ServerStateChanged,
    TierChanged,
    ToolApprovalRequested,
    ToolRequested,
    ToolsChanged,
    TranscriptAdded,
)
from tests.console.helpers import record_notifications
from tests.console.remote_double import InProcessRemote
from tests.waiting import wait_until

ENGINES = ("e1", "e2", "e3")


def _started(call_id: str = "call-1", caller: str = "Ann") -> CallStarted:
    return CallStarted(call_id=call_id, context="demo", provider="script", caller_name=caller, tier="standard")


def _answer(engine_id: str, command: str, args: dict[str, Any]) -> dict[str, Any]:
    if command == "server_status":
        return {"servers": [{"id": "dice", "tools": [{"name": "roll", "exposed_name": "mcp_dice_roll"}]}]}
    if command == "set_tool_enabled":
        return {**args, "restarted": args.get("apply") == "now"}
    if command in ("say_now", "whisper"):
        return {"call_id": args["call_id"], "via": "history"}
    if command == "end_call" and args["call_id"] == "call-9":
        raise RemoteError(f"end_call: no live call 'call-9' on engine {engine_id}")
    return {"ok": True}


def _three(remote: InProcessRemote) -> None:
    for i, e in enumerate(ENGINES):
        remote.join(e, host=f"box{i}", version="0.1.0", contexts=("demo",), max_calls=10)
        remote.emit(e, _started("call-1", caller=f"caller of {e}"))


def _calls(app: AvaConsole) -> CallsScreen:
    screen = app.screen
    assert isinstance(screen, CallsScreen)
    return screen


def _rows(table: Any) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


# ---------------------------------------------------------------------------------------------------- units


def test_rename_rewrites_every_per_engine_id_and_keeps_empty_ones() -> None:
    ev = ToolApprovalRequested(
        approval_id="a1", call_id="call-2", tool_call_id="t1", exposed_name="x", server="s", tool="x"
    )
    out = rename(ev, "e7")
    assert isinstance(out, ToolApprovalRequested)
    assert (out.approval_id, out.call_id, out.tool_call_id) == ("e7/a1", "e7/call-2", "t1")
    default = rename(TierChanged(call_id=None, old="fast", new="deep", reason="r"), "e7")
    assert isinstance(default, TierChanged) and default.call_id is None
    no_call = ToolApprovalRequested(
        approval_id="a2", call_id="", tool_call_id="t", exposed_name="x", server="s", tool="x"
    )
    kept = rename(no_call, "e7")
    assert isinstance(kept, ToolApprovalRequested) and kept.call_id == ""  # an MCP client's: no call to name
    server = rename(ServerStateChanged(server="dice", state="up"), "e7")  # the Servers screen: one row per engine
    assert isinstance(server, ServerStateChanged) and server.server == "e7/dice"


def test_attach_target_checks_the_url_and_takes_the_token_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("AVA_ENGINE_TOKEN", "tok-from-env")
    assert attach_target("http://127.0.0.1:8088", None) == ("http://127.0.0.1:8088", "tok-from-env")
    assert attach_target("https://h:1", "given") == ("https://h:1", "given")
    assert attach_target("rediss://u:pw@h:6380/0", None) == ("rediss://u:pw@h:6380/0", None)
    with pytest.raises(ValueError, match="must start with redis://") as bad:
        attach_target("ftp://user:s3cret@h:21", None)
    assert "s3cret" not in str(bad.value)
    with pytest.raises(ValueError, match="names no host"):
        attach_target("redis://", None)
    with pytest.raises(ValueError, match="--token is for"):
        attach_target("redis://h:6379", "tok")


def test_cli_refuses_a_bad_attach_url_before_any_screen(capsys) -> None:
    assert main(["--attach", "mysql://root:pw@db:3306"]) == 2
    err = capsys.readouterr().err
    assert "redis://, rediss://, http:// or https://" in err and "pw" not in err


async def test_link_posts_events_before_the_engine_change_that_follows_them_and_reconnects() -> None:
    remote = InProcessRemote()
    remote.join("e1")
    remote.emit("e1", _started("call-1"))
    remote.lose("e1")
    posted: list[Any] = []
    link = AttachLink(remote, interval=0.01)
    task = asyncio.ensure_future(link.run(posted.append))
    try:

        async def until(pred: Any) -> None:
            await wait_until(pred, what=f"a message the console posts (posted: {posted})")

        await until(lambda: any(isinstance(p, EnginesChanged) and p.lost for p in posted))
        kinds = [
            ("events" if isinstance(p, EventBatch) else "lost" if p.lost else "joined" if p.joined else "link")
            for p in posted
        ]
        assert kinds.index("events") < kinds.index("lost")
        batch = next(p for p in posted if isinstance(p, EventBatch))
        first = batch.events[0]
        assert isinstance(first, CallStarted) and first.call_id == "e1/call-1"
        remote.break_link()
        await until(lambda: link.reconnects == 1 and remote.connects == 1)  # follow again, no new connect needed
        await until(
            lambda: any(
                isinstance(p, EnginesChanged)
                and p.link == (False, f"{remote.description}: Connection closed by server")
                for p in posted
            )
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert remote.closed


# ---------------------------------------------------------------------------------------------------- Pilot


async def test_three_engines_same_call_id_three_rows_with_engine_column(wait) -> None:
    remote = InProcessRemote(answer=_answer)
    _three(remote)
    app = AvaConsole(Path("."), remote=remote)
    async with app.run_test(size=(160, 40)) as pilot:
        calls = app.screen.query_one("#calls", DataTable)
        await wait(pilot, lambda: calls.row_count == 3)
        assert [str(c.label) for c in calls.columns.values()][:2] == ["Engine", "Call"]
        rows = _rows(calls)
        assert sorted((r[0], r[1]) for r in rows) == [("e1", "call-1"), ("e2", "call-1"), ("e3", "call-1")]
        assert {r[2] for r in rows} == {"caller of e1", "caller of e2", "caller of e3"}
        assert set(app.state.calls) == {"e1/call-1", "e2/call-1", "e3/call-1"}
        assert "attached to redis://127.0.0.1:6390/0 · 3 engines" in app.sub_title
        # an event of one engine's call-1 changes that row only
        remote.emit("e2", TierChanged(call_id="call-1", old="standard", new="deep", reason="keyword"))
        await wait(pilot, lambda: app.state.calls["e2/call-1"].tier == "deep")
        assert app.state.calls["e1/call-1"].tier == app.state.calls["e3/call-1"].tier == "standard"


async def test_keys_route_commands_to_the_owning_engine_once_and_name_it(wait) -> None:
    remote = InProcessRemote(answer=_answer)
    _three(remote)
    app = AvaConsole(Path("."), remote=remote)
    async with app.run_test(size=(160, 40)) as pilot:
        seen = record_notifications(app)
        calls = app.screen.query_one("#calls", DataTable)
        await wait(pilot, lambda: calls.row_count == 3 and _calls(app).detail_ready)
        calls.focus()
        calls.move_cursor(row=[r[0] for r in _rows(calls)].index("e2"))
        await wait(pilot, lambda: app.selected_call == "e2/call-1")
        await pilot.press("f5")  # tier FAST for the selected call
        await wait(pilot, lambda: any("tier FAST" in s for s in seen))
        tiers = [s for s in remote.sent if s[1] == "set_tier"]
        assert tiers == [("e2", "set_tier", {"call_id": "call-1", "tier": "fast"})]
        assert any(s == "call-1 on engine e2: tier FAST" for s in seen)
        # the tools table: the engine's MCP tools; n switches the highlighted one off NOW on e2
        tools = app.screen.query_one("#call-tools", DataTable)
        await wait(pilot, lambda: tools.row_count == 1)
        await pilot.press("n")
        await wait(pilot, lambda: any(s[1] == "set_tool_enabled" for s in remote.sent))
        toggles = [s for s in remote.sent if s[1] == "set_tool_enabled"]
        assert toggles == [
            (
                "e2",
                "set_tool_enabled",
                {"call_id": "call-1", "exposed_name": "mcp_dice_roll", "enabled": False, "apply": "now"},
            )
        ]
        await wait(pilot, lambda: any("turn in flight was restarted" in s and "engine e2" in s for s in seen))
        # the engine's tools.changed shows the switch off; the next n switches it on again
        remote.emit("e2", ToolsChanged(revision=1, call_id="call-1", removed=("mcp_dice_roll",), apply="now"))
        await wait(pilot, lambda: "off" in str(tools.get_row_at(0)[0]))
        # a command the engine refuses: the toast names the engine and its reason
        remote.emit("e3", _started("call-9"))
        await wait(pilot, lambda: "e3/call-9" in app.state.calls)
        app.orders.run("end_call", "e3/call-9", {"reason": "x"}, title="call")
        await wait(pilot, lambda: any("no live call 'call-9' on engine e3" in s for s in seen))
        # default tier: every live engine
        await pilot.press("shift+f7")
        await wait(pilot, lambda: len([s for s in remote.sent if s[1] == "set_tier"]) == 4)
        assert {s[0] for s in remote.sent if s[1] == "set_tier" and s[2]["call_id"] is None} == set(ENGINES)


async def test_end_call_steer_and_approvals_go_to_the_call_engine(wait, monkeypatch) -> None:
    remote = InProcessRemote(answer=_answer)
    _three(remote)
    waiting = ToolApprovalRequested(
        approval_id="ap-1",
        call_id="call-1",
        tool_call_id="t1",
        exposed_name="hangup_call",
        server="builtin",
        tool="hangup_call",
        reason="needs approval",
        timeout_s=60,
        deadline=time.time() + 60,
    )
    remote.emit("e3", waiting)
    app = AvaConsole(Path("."), remote=remote)
    async with app.run_test(size=(160, 40)) as pilot:
        seen = record_notifications(app)
        await wait(pilot, lambda: len(app.state.calls) == 3 and bool(app.approvals.rows))
        assert app.approvals.first is not None and app.approvals.first.where() == "call-1 on engine e3"
        await pilot.press("y")
        await wait(pilot, lambda: any(s[1] == "approve_tool" for s in remote.sent))
        assert [s for s in remote.sent if s[1] == "approve_tool"] == [
            ("e3", "approve_tool", {"approval_id": "ap-1", "by": "console"})
        ]
        _calls(app).steering.steer("e1/call-1", "whisper", "be brief")
        await wait(pilot, lambda: any("whispered" in s and "call-1 on engine e1" in s for s in seen))
        assert ("e1", "whisper", {"call_id": "call-1", "text": "be brief"}) in remote.sent
        app.selected_call = "e1/call-1"
        await pilot.press("T")  # transfer: the engine's destinations are typed (it refuses a name it lacks)
        await wait(pilot, lambda: bool(app.screen.query("#transfer-typed")))
        await pilot.press(*"support", "ctrl+w", "enter")
        await wait(pilot, lambda: any(s[1] == "transfer_call" for s in remote.sent))
        assert [s for s in remote.sent if s[1] == "transfer_call"] == [
            ("e1", "transfer_call", {"call_id": "call-1", "destination": "support", "mode": "warm"})
        ]
        await wait(pilot, lambda: any("warm transfer of call-1 on engine e1 to support started" in s for s in seen))
        await pilot.press("e")
        await wait(pilot, lambda: any(s[1] == "end_call" for s in remote.sent))
        assert [s for s in remote.sent if s[1] == "end_call"] == [
            ("e1", "end_call", {"call_id": "call-1", "reason": "ended by operator"})
        ]


async def test_engine_lost_marks_its_calls_lost_and_the_engine_gone(wait) -> None:
    remote = InProcessRemote(answer=_answer)
    _three(remote)
    remote.emit(
        "e1",
        ToolRequested(call_id="call-1", tool_call_id="t1", exposed_name="mcp_dice_roll", server="dice", tool="roll"),
    )
    app = AvaConsole(Path("."), remote=remote)
    async with app.run_test(size=(160, 40)) as pilot:
        seen = record_notifications(app)
        calls = app.screen.query_one("#calls", DataTable)
        await wait(pilot, lambda: calls.row_count == 3)
        remote.lose("e1", "heartbeat expired")
        await wait(pilot, lambda: "e1/call-1" in app.state.ended)
        assert app.state.ended["e1/call-1"].state == "lost"
        row = [str(c) for c in calls.get_row("e1/call-1")]
        assert row[0] == "e1" and "lost" in row[ATTACHED_COLUMNS.index("State")]
        assert app.state.invocations[-1].status == "lost"
        assert "2 engines" in app.sub_title
        assert any("engine e1 lost: heartbeat expired" in s for s in seen)
        # the other engines' calls keep working
        remote.emit("e2", TranscriptAdded(call_id="call-1", role="caller", text="still here"))
        await wait(pilot, lambda: app.state.transcript("e2/call-1") != [])
        # a command for the lost engine's call: refused with the engine named
        app.set_call_tier("e1/call-1", "deep")
        await wait(pilot, lambda: any("engine e1 is gone" in s for s in seen))
        # the Tool log: the engine and its own call id, the lost engine's running tool call "lost"
        await pilot.press("f2")
        log = app.screen.query_one("#invocations", DataTable)
        await wait(pilot, lambda: log.row_count == 1)
        cells = [str(c) for c in log.get_row_at(0)]
        assert cells[1:4] == ["e1", "call-1", "mcp_dice_roll"] and "lost" in cells[5]
        # the engine list (by its key): e1 gone, the others live
        await pilot.press("ctrl+g")
        table = app.screen.query_one("#engines", DataTable)
        await wait(pilot, lambda: table.row_count == 3)
        states = {str(r[0]): str(r[1]) for r in (table.get_row_at(i) for i in range(3))}
        assert states["e1"].startswith("gone") and states["e2"] == "live" and states["e3"] == "live"


async def test_link_lost_and_back_is_shown_and_local_only_keys_say_so(wait) -> None:
    remote = InProcessRemote(answer=_answer)
    _three(remote)
    app = AvaConsole(Path("."), remote=remote)
    async with app.run_test(size=(160, 40)) as pilot:
        seen = record_notifications(app)
        await wait(pilot, lambda: len(app.state.calls) == 3 and app.link is not None and app.link.connected is True)
        # the remote side stays away until the lost link has been seen: the reader retries after 0.2 s, and a
        # loaded machine polled too late to see the header between "lost" and "back"
        remote.unreachable = "Connection refused"
        remote.break_link("Connection reset by peer")
        await wait(pilot, lambda: "connection lost" in app.sub_title)
        assert any("connection to redis://127.0.0.1:6390/0 lost" in s for s in seen)
        remote.unreachable = None
        await wait(pilot, lambda: app.link is not None and app.link.connected is True)
        assert "connection lost" not in app.sub_title
        assert any("is back" in s for s in seen)
        remote.emit("e3", TranscriptAdded(call_id="call-1", role="caller", text="after the gap"))
        await wait(pilot, lambda: app.state.transcript("e3/call-1") != [])
        # keys that need this console's own engine: a clear refusal, nothing breaks
        await wait(pilot, lambda: _calls(app).detail_ready)
        calls = app.screen.query_one("#calls", DataTable)
        calls.focus()
        for key, what in (
            ("v", "a voice call on the softphone"),
            ("ctrl+n", "a test call"),
            ("s", "talking as the caller"),
            ("ctrl+e", "export"),
        ):
            await pilot.press(key)
            await wait(
                pilot,
                lambda w=what: any(
                    s.startswith(w) and "not available when attached to redis://127.0.0.1:6390/0" in s for s in seen
                ),
            )
        assert not app.screen.query_one("#softphone").display  # the softphone is this console's engine's
        await pilot.press("f3")  # the servers are each engine's: the screen says where this console is attached
        await wait(pilot, lambda: "no engine of its own" in str(app.screen.query_one("#mcp-note").render()))
        for key, what in (("t", "the MCP servers"), ("e", "the MCP servers")):
            await pilot.press(key)
            await wait(pilot, lambda w=what: any(s.startswith(w) and "not available when attached" in s for s in seen))
        await pilot.press("f9", "a")  # secrets live in each engine's keyring
        await wait(pilot, lambda: any(s.startswith("secrets") and "not available when attached" in s for s in seen))
        assert app.engine is None


async def test_a_link_lost_silently_is_found_by_the_probe_and_shown_back(wait, monkeypatch) -> None:
    """A client whose ``follow`` rides out a lost connection by itself (the Redis client does): the link's probe
    (``engines()`` every PROBE_S) shows it lost, and back."""
    monkeypatch.setattr("console.attach.PROBE_S", 0.05)
    remote = InProcessRemote(answer=_answer)
    _three(remote)
    app = AvaConsole(Path("."), remote=remote)
    async with app.run_test(size=(160, 40)) as pilot:
        seen = record_notifications(app)
        await wait(pilot, lambda: len(app.state.calls) == 3 and app.link is not None and app.link.connected is True)
        remote.unreachable = "Error 111 connecting to 127.0.0.1:6390. Connection refused."
        await wait(pilot, lambda: "connection lost, retrying" in app.sub_title and "refused" in app.sub_title)
        remote.unreachable = None
        await wait(pilot, lambda: "connection lost" not in app.sub_title)
        assert [s for s in seen if "connection to" in s] == [
            "connection to redis://127.0.0.1:6390/0 lost: redis://127.0.0.1:6390/0: Error 111 connecting to "
            "127.0.0.1:6390. Connection refused.",
            "connection to redis://127.0.0.1:6390/0 is back",
        ]


async def test_the_tools_table_shows_the_engines_own_view_of_the_call(wait) -> None:
    """The selected call's tools come from its engine (``tool_states``): shown, switched off, or hidden and why;
    asked again when the call's tier or switches change."""

    def answer(engine_id: str, command: str, args: dict[str, Any]) -> dict[str, Any]:
        if command == "tool_states":
            off = any(c == "set_tool_enabled" for _, c, _ in remote.sent)
            return {
                "call_id": args["call_id"],
                "tools": [
                    {
                        "name": "hangup_call",
                        "server": "builtin",
                        "shown": not off,
                        "enabled": not off,
                        "reason": "switched off by the operator" if off else "",
                    },
                    {
                        "name": "mcp_dice_roll",
                        "server": "dice",
                        "shown": False,
                        "enabled": True,
                        "reason": f"over the {engine_id} call's tier budget",
                    },
                ],
            }
        return _answer(engine_id, command, args)

    remote = InProcessRemote(answer=answer)
    remote.join("e1", host="box", version="0.1.0", contexts=("demo",), max_calls=10)
    remote.emit("e1", _started())
    app = AvaConsole(Path("."), remote=remote)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait(pilot, lambda: app.selected_call == "e1/call-1")
        tools = app.screen.query_one("#call-tools", DataTable)

        def table() -> list[tuple[str, str, str]]:
            return [(r[1], r[0], r[3]) for r in _rows(tools)]

        first = [("hangup_call", "● on", "shown"), ("mcp_dice_roll", "● on", "hidden: over the e1 call's tier budget")]
        await wait(pilot, lambda: table() == first)
        assert ("e1", "tool_states", {"call_id": "call-1"}) in remote.sent
        remote.emit("e1", ToolsChanged(call_id="call-1", revision=1, added=(), removed=("hangup_call",)))
        remote.sent.append(("e1", "set_tool_enabled", {}))  # what the engine answers from now on
        await wait(pilot, lambda: table()[0] == ("hangup_call", "○ off", "hidden: switched off by the operator"))


async def test_transfer_lists_the_call_engines_destinations(wait) -> None:
    """An engine's heartbeat lists its transfer destinations: the dialog offers exactly those for its calls."""
    from textual.widgets import OptionList

    remote = InProcessRemote(answer=_answer)
    listed = [
        {"name": "support", "destination": "PJSIP/6000", "description": "the support desk"},
        {"name": "sales", "destination": "PJSIP/6001", "description": ""},
    ]
    remote.join("e1", host="box", version="0.1.0", contexts=("demo",), raw={"transfer_destinations": listed})
    remote.emit("e1", _started())
    app = AvaConsole(Path("."), remote=remote)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait(pilot, lambda: app.selected_call == "e1/call-1")
        await pilot.press("T")
        await wait(pilot, lambda: bool(app.screen.query("#transfer-targets")))
        targets = app.screen.query_one("#transfer-targets", OptionList)
        prompts = [str(targets.get_option_at_index(i).prompt) for i in range(targets.option_count)]
        assert prompts == ["support  PJSIP/6000  · the support desk", "sales  PJSIP/6001"]
        assert not app.screen.query("#transfer-typed")
        await pilot.press("down", "enter")
        await wait(pilot, lambda: any(s[1] == "transfer_call" for s in remote.sent))
        assert [s for s in remote.sent if s[1] == "transfer_call"] == [
            ("e1", "transfer_call", {"call_id": "call-1", "destination": "sales", "mode": "blind"})
        ]

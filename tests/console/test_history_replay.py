"""Call history (issue 16 A.15) and replay (B.3) in the console, by keyboard: an ended call stays in the Calls table
(dimmed, newest first), shows its transcript with tier changes, exports with Ctrl+E; a recorded call replayed with no
engine (`--replay`, instant) gives the same Calls and Tool log tables as the live run; Ctrl+O / Ctrl+R in a live
console replay a recording beside the live calls."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from console.app import AvaConsole
from tests.console.conftest import FIXTURE_SERVER, servers_up
from tests.console.helpers import record_notifications


def _read(path: Path) -> str:
    return path.read_text()


def _inv(i: Any) -> tuple[Any, ...]:
    return (i.call_id, i.exposed_name, i.status, i.latency_ms, i.message)


def _rows(table: Any) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def _transcript(app: AvaConsole) -> list[str]:
    return [str(x.text) for x in app.screen.query_one("#transcript").lines]  # type: ignore[attr-defined]


async def _scripted_call(app: AvaConsole, pilot: Any, wait: Any) -> str:
    """A call driven by keys: start, hello, tier DEEP, goodbye (the agent hangs up)."""
    await wait(pilot, lambda: app.engine_running, 60)  # cold imports on a loaded machine
    await pilot.press("ctrl+n")
    await wait(pilot, lambda: app.selected_call in app.state.calls)
    call_id = app.selected_call
    assert call_id is not None
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls")  # s: talk
    await pilot.press("s")
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk")
    await pilot.press(*"hello", "enter")
    await wait(pilot, lambda: any("listening" in t for _, _, t in app.state.transcript(call_id)))
    await pilot.press("f7")
    await wait(pilot, lambda: app.state.calls[call_id].tier == "deep")
    await pilot.press("s", *"goodbye", "enter")  # Enter gave the keys back to the calls table: s talks again
    await wait(pilot, lambda: call_id in app.state.ended)
    return call_id


async def test_an_ended_call_stays_dimmed_newest_first_with_history_and_export(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        seen = record_notifications(app)
        first = await _scripted_call(app, pilot, wait)
        calls = app.screen.query_one("#calls", DataTable)
        await wait(pilot, lambda: first in calls.rows)
        row = calls.get_row(first)
        assert str(row[8]).startswith("ended: ") and all(isinstance(c, Text) and c.style == "dim" for c in row)
        second = await _scripted_call(app, pilot, wait)
        await pilot.press("ctrl+n")  # a live call as well: it comes first, then the ended ones, newest first
        await wait(pilot, lambda: len(app.state.calls) == 1)
        live = next(iter(app.state.calls))
        await wait(pilot, lambda: [str(r[0]) for r in _rows(calls)] == [live, second, first])
        # select the first (ended) call from the keyboard and read its history
        await pilot.press("escape", "down", "down")
        await wait(pilot, lambda: app.selected_call == first)
        log = app.screen.query_one("#transcript")
        text = "\n".join(str(line.text) for line in log.lines)  # type: ignore[attr-defined]
        assert "Hello! I'm listening." in text and "tier: STANDARD → DEEP (operator override)" in text
        assert "ended: hangup" in text.splitlines()[-1]
        inv = app.screen.query_one("#call-invocations", DataTable)
        assert any("hangup_call" in str(r[1]) for r in (inv.get_row_at(i) for i in range(inv.row_count)))
        await pilot.press("ctrl+e")
        await wait(pilot, lambda: any("written to" in m for m in seen))
        path = Path(next(m for m in seen if "written to" in m).rsplit("written to ", 1)[1])
        md = _read(path)
        assert md.startswith(f"# Call {first}") and "**user:** hello" in md and "operator override" in md


async def test_a_replayed_recording_reproduces_the_live_screens(config_path: Path, wait) -> None:
    live = AvaConsole(config_path)
    async with live.run_test(size=(160, 40)) as pilot:
        call_id = await _scripted_call(live, pilot, wait)
        await pilot.press("escape")
        calls_live = _rows(live.screen.query_one("#calls", DataTable))
        # a RichLog draws its writes once it has a size: wait for the last line, not for a pause
        await wait(pilot, lambda: "ended: hangup" in "".join(_transcript(live)[-1:]))
        transcript_live = _transcript(live)
        await pilot.press("f2")
        await wait(pilot, lambda: bool(_rows(live.screen.query("#invocations").first())))
        log_live = _rows(live.screen.query_one("#invocations", DataTable))
        recording = live.engine.recordings()[0].path  # type: ignore[union-attr]
        invocations_live = [_inv(i) for i in live.state.invocations]
    assert recording.name.endswith(f"-{call_id}.jsonl")

    replay = AvaConsole(recording.parent, replay=recording, replay_speed=0.0)
    async with replay.run_test(size=(160, 40)) as pilot:
        await wait(pilot, lambda: replay.replay is not None and replay.replay.done and call_id in replay.state.ended)
        assert replay.engine is None and "replay" in replay.sub_title
        await pilot.press("escape")
        assert _rows(replay.screen.query_one("#calls", DataTable)) == calls_live
        await wait(pilot, lambda: len(_transcript(replay)) >= len(transcript_live))
        assert _transcript(replay) == transcript_live
        await pilot.press("f2")
        await wait(pilot, lambda: bool(_rows(replay.screen.query("#invocations").first())))
        assert _rows(replay.screen.query_one("#invocations", DataTable)) == log_live
        assert [_inv(i) for i in replay.state.invocations] == invocations_live


def _with_fixture_server(config_path: Path) -> None:
    entry = f"    fx:\n      command: [{sys.executable}, {FIXTURE_SERVER}]\n      connect_timeout_ms: 20000\n"
    config_path.write_text(_read(config_path).replace("  servers: {}\n", "  servers:\n" + entry))


def _server_cols(app: AvaConsole) -> list[list[str]]:
    """Id, state, transport, protocol and restarts of every row of the Servers screen."""
    return [row[:5] for row in _rows(app.screen.query_one("#servers", DataTable))]


async def test_a_replay_shows_the_servers_as_they_were(config_path: Path, wait) -> None:
    """The Servers screen of a replay (no engine) lists the recorded call's MCP servers as the live one did."""
    _with_fixture_server(config_path)
    live = AvaConsole(config_path)
    async with live.run_test(size=(160, 40)) as pilot:
        await wait(pilot, lambda: servers_up(live, "fx"), within=30)
        call_id = await _scripted_call(live, pilot, wait)
        await pilot.press("escape", "f3")
        await wait(pilot, lambda: type(live.screen).__name__ == "ServersScreen")
        await wait(pilot, lambda: bool(_rows(live.screen.query_one("#servers", DataTable))))
        servers_live = _server_cols(live)
        recording = live.engine.recordings()[0].path  # type: ignore[union-attr]
    assert servers_live[0][:2] == ["fx", "● up"] and servers_live[0][3].startswith("20")

    replay = AvaConsole(recording.parent, replay=recording, replay_speed=0.0)
    async with replay.run_test(size=(160, 40)) as pilot:
        await wait(pilot, lambda: replay.replay is not None and replay.replay.done and call_id in replay.state.ended)
        await pilot.press("escape", "f3")
        await wait(pilot, lambda: type(replay.screen).__name__ == "ServersScreen")
        await wait(pilot, lambda: bool(_rows(replay.screen.query_one("#servers", DataTable))))
        assert _server_cols(replay) == servers_live


async def test_ctrl_o_replays_a_recording_beside_live_calls_and_ctrl_r_switches_speed(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        seen = record_notifications(app)
        call_id = await _scripted_call(app, pilot, wait)
        await pilot.press("escape", "ctrl+r")  # no replay yet: sets the speed of the next one
        assert app.replay_speed == 4.0 and "replay speed 4×" in seen
        await pilot.press("ctrl+o")
        await wait(pilot, lambda: bool(app.screen.query("#recordings")) and _rows(app.screen.query_one("#recordings")))
        await pilot.press("enter")
        replayed = f"replay:{call_id}"
        await wait(pilot, lambda: replayed in app.state.calls or replayed in app.state.ended)
        await pilot.press("ctrl+r")  # while it runs: 4× → instant
        # a replayed call is a history row from its first event ("replaying"), "ended" once its recording ends
        await wait(pilot, lambda: replayed in app.state.ended and app.state.ended[replayed].state == "ended")
        assert replayed not in app.state.calls
        assert call_id in app.state.ended  # the live call's history is untouched
        assert app.state.transcript(replayed) and [t for _, _, t in app.state.transcript(replayed)] == [
            t for _, _, t in app.state.transcript(call_id)
        ]


def test_replay_of_a_missing_or_bad_file_says_so() -> None:
    console = Path(sys.executable).parent / "ava-console"
    p = subprocess.run(
        [str(console), "--replay", "/nonexistent/x.jsonl"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert p.returncode == 2 and "cannot read the recording /nonexistent/x.jsonl" in p.stderr
    p = subprocess.run(
        [str(console), "--replay", __file__, "--speed", "9x9"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert p.returncode == 2 and "replay speed '9x9': use 1, 4 or instant" in p.stderr


def test_the_history_keeps_the_newest_ended_calls_and_says_which_it_forgot() -> None:
    from console.state import MAX_ENDED_KEPT, ConsoleState
    from engine.events import CallEnded, CallStarted, TierChanged

    st = ConsoleState()
    st.apply(
        [
            CallStarted(call_id="c0", context="x", provider="p"),
            TierChanged(call_id="c0", old="standard", new="deep", reason="operator override"),
        ]
    )
    assert st.tier_history["c0"][0][1:] == ("standard", "deep", "operator override")
    forgotten: list[str] = []
    for n in range(MAX_ENDED_KEPT + 2):
        ch = st.apply([CallStarted(call_id=f"c{n}", context="x", provider="p"), CallEnded(call_id=f"c{n}", reason="r")])
        assert ch.calls_removed == [f"c{n}"]  # started and ended in one batch: still a history row
        forgotten += ch.calls_forgotten
    assert forgotten == ["c0", "c1"] and "c0" not in st.tier_history and len(st.ended) == MAX_ENDED_KEPT

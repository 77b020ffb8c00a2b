"""Issue 16 B.7 (part): the header shows live calls, servers up/failed and errors in the last 5 minutes on every
screen; a server that fails rings the bell and shows a notification naming it."""

from __future__ import annotations

from pathlib import Path

from console.app import AvaConsole
from console.format import Clock
from console.state import ConsoleState
from console.widgets.header import WINDOW_S, Glance, glance_line
from engine.events import EngineError, ServerStateChanged, ToolCompleted
from tests.console.helpers import record_notifications


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, text: str) -> None:
    path.write_text(text)


START_S = 90  # a loaded test box starts the engine slowly


async def test_header_counts_and_a_failed_server_rings(config_path: Path, crash_yaml, wait) -> None:
    text = _read(config_path).replace("  servers: {}\n", "  servers:\n" + crash_yaml("crashy"))
    _write(config_path, text)
    app = AvaConsole(config_path)
    bells: list[int] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
        seen = record_notifications(app)
        await wait(pilot, lambda: app.engine_running, START_S)
        await wait(pilot, lambda: "servers 0 up, 1 failed" in app.sub_title, 30)
        assert app.sub_title.startswith("0 calls · servers 0 up, 1 failed · 1 error/5 min · ")
        assert app.sub_title.endswith(str(config_path))
        assert bells == [1]
        assert any(m.startswith("server crashy failed") for m in seen)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.sub_title.startswith("1 call · "))
        await pilot.press("escape", "f3")  # every screen's header shows it
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        assert app.screen.sub_title in (None, "", app.sub_title) and "1 failed" in app.sub_title


def test_errors_age_out_and_each_failure_rings_once() -> None:
    glance, state, now = Glance(), ConsoleState(), Clock().now()
    failed = ServerStateChanged(server="s", state="failed", last_error="exit 1", ts=now - 10)
    assert glance.apply([failed, failed]) == [("s", "exit 1")]  # the same failure again: no second alarm
    glance.apply(
        [
            EngineError(message="x", ts=now - WINDOW_S - 1),  # too old to count
            ToolCompleted(
                call_id="c",
                tool_call_id="t",
                exposed_name="e",
                server="b",
                tool="e",
                status="timeout",
                latency_ms=1.0,
                message="",
                ts=now - 5,
            ),
            ToolCompleted(
                call_id="",
                tool_call_id="p",
                exposed_name="e",
                server="b",
                tool="e",
                status="error",
                latency_ms=1.0,
                message="",
                is_probe=True,
                ts=now - 5,
            ),  # probes do not count
        ]
    )
    assert glance_line(state, glance, now, None) == "0 calls · servers 0 up · 2 errors/5 min"
    assert glance_line(state, glance, now + WINDOW_S, "http://127.0.0.1:9") == (
        "0 calls · servers 0 up · 0 errors/5 min · API http://127.0.0.1:9"
    )
    glance.apply([ServerStateChanged(server="s", state="ready", ts=now)])
    assert glance.apply([failed]) == [("s", "exit 1")]  # up again, then failed again: rings again

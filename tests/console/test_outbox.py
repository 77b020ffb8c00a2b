"""The Outbox screen (F11): queued e-mail with its state and the server's reason; retry and drop by key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static

from console.app import AvaConsole

EMAIL = """  email:
    enabled: true
    smtp_host: 127.0.0.1
    smtp_port: 9
    from_address: ava@example.test
    admin_address: admin@example.test
    outbox: outbox.sqlite3
    max_attempts: 1
"""


def _with_email(config_path: Path, email: str = EMAIL) -> Path:
    config_path.write_text(config_path.read_text(encoding="utf-8") + email, encoding="utf-8")
    return config_path


async def test_outbox_lists_messages_and_retries_and_drops_them(config_path: Path, wait: Any) -> None:
    _with_email(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        engine = app.engine
        assert engine is not None
        first = engine.email.queue_test("caller@example.test")  # nobody listens on port 9: it fails
        await wait(pilot, lambda: [m.status for m in engine.outbox_messages()] == ["failed"], within=15)
        await pilot.press("f11")
        await wait(pilot, lambda: type(app.screen).__name__ == "OutboxScreen")
        table = app.screen.query_one("#outbox", DataTable)
        await wait(pilot, lambda: table.row_count == 1)
        row = [str(c) for c in table.get_row(first)]
        assert row[0] == "failed" and row[3] == "caller@example.test" and row[4] == "test"
        detail = str(app.screen.query_one("#outbox-detail", Static).render())
        assert first in detail and ("refused" in detail.lower() or "connect" in detail.lower())
        assert "1 failed" in str(app.screen.query_one("#outbox-counts", Static).render())

        before = engine.outbox_messages()[0].updated_at
        await pilot.press("r")  # send again now (attempts start again): it is tried and fails again
        await wait(
            pilot, lambda: (m := engine.outbox_messages()[0]).status == "failed" and m.updated_at > before, within=15
        )
        await pilot.press("d")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait(pilot, lambda: engine.outbox_messages() == [] and table.row_count == 0)
        app.save_screenshot(str(config_path.parent / "outbox.svg"))


async def test_a_pending_message_shows_when_it_is_tried_next(config_path: Path, wait: Any) -> None:
    _with_email(config_path, EMAIL.replace("max_attempts: 1", "retry_first_s: 600"))
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        engine = app.engine
        assert engine is not None
        engine.email.queue_test("caller@example.test")  # refused: a temporary failure, tried again in ~10 min
        # pending before the first try too, and "sending" while it is tried: wait for the refusal's outcome
        await wait(
            pilot,
            lambda: [(m.status, (m.attempts or 0) >= 1) for m in engine.outbox_messages()] == [("pending", True)],
            within=15,
        )
        (m,) = engine.outbox_messages()
        assert m.next_attempt_at is not None and m.next_attempt_at > m.updated_at + 60
        await pilot.press("f11")
        await wait(pilot, lambda: type(app.screen).__name__ == "OutboxScreen")
        detail = app.screen.query_one("#outbox-detail", Static)
        await wait(pilot, lambda: "next attempt at" in str(detail.render()))

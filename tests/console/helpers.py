"""Helpers shared by the console's Pilot tests."""

from __future__ import annotations

from typing import Any


def record_notifications(app: Any) -> list[str]:
    """Every notification ``app`` shows from now on, recorded as text (the app still shows them)."""
    seen: list[str] = []
    original = app.notify

    def record(message: str, **kwargs: Any) -> None:
        seen.append(message)
        original(message, **kwargs)

    app.notify = record
    return seen

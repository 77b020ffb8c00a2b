"""Which path stopped a stdio MCP server: the connection's own escalation or the SDK's slower one.

Why it exists: a stop is bounded by ``engine.mcp.connection``'s escalation (SIGTERM to the child's process group,
then SIGKILL), well before the SDK's own (close stdin, wait, SIGTERM, wait, SIGKILL). Tests check that this path
ended a stubborn server by recording both, instead of timing the stop.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any

import mcp.client.stdio as sdk_stdio
import pytest

from engine.mcp import connection


@dataclass
class Escalations:
    """What the stops sent: the connection's signals (group, name, whether the group was there) and the children
    the SDK had to escalate on itself."""

    sent: list[tuple[int, str, bool]] = field(default_factory=list)
    sdk: list[int] = field(default_factory=list)

    def to(self, pgid: int | None) -> list[tuple[str, bool]]:
        """The connection's signals to one group, in order: (signal name, delivered to a live group)."""
        return [(name, delivered) for group, name, delivered in self.sent if group == pgid]


def record_escalations(monkeypatch: pytest.MonkeyPatch) -> Escalations:
    """Record both escalations (each still does its work) for the rest of the test."""
    seen = Escalations()
    real_signal_group = connection.signal_group
    real_terminate = sdk_stdio._terminate_process_tree

    def signal_group(pgid: int, sig: int) -> bool:
        delivered = real_signal_group(pgid, sig)
        seen.sent.append((pgid, signal.Signals(sig).name, delivered))
        return delivered

    async def terminate(process: Any) -> None:
        seen.sdk.append(process.pid)
        await real_terminate(process)

    monkeypatch.setattr(connection, "signal_group", signal_group)
    monkeypatch.setattr(sdk_stdio, "_terminate_process_tree", terminate)
    return seen

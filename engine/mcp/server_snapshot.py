"""A supervised MCP server's status as plain data: what ``engine servers``, the console and the API show.

Apart from ``engine.mcp.supervisor`` because it is a read-only view of many fields, not part of the supervision
state machine (and it kept that module over 400 lines).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from engine.config.models import McpServerConfig
from engine.mcp.connection import Connection
from engine.mcp.stderr import StderrCapture
from engine.mcp.tool import MCPTool


class Supervised(Protocol):
    """What the snapshot reads of a supervisor (``engine.mcp.supervisor.Supervisor``)."""

    @property
    def server_id(self) -> str: ...
    @property
    def cfg(self) -> McpServerConfig: ...
    @property
    def state(self) -> str: ...
    @property
    def conn(self) -> Connection | None: ...
    @property
    def up_since(self) -> float | None: ...
    @property
    def restarts(self) -> int: ...
    @property
    def restarts_total(self) -> int: ...
    @property
    def last_error(self) -> str | None: ...
    @property
    def errors(self) -> Iterable[tuple[float, str]]: ...
    @property
    def warnings(self) -> Sequence[str]: ...
    @property
    def tools(self) -> Sequence[MCPTool]: ...
    @property
    def stderr(self) -> StderrCapture: ...


def server_snapshot(sup: Supervised, auth: dict[str, Any] | None) -> dict[str, Any]:
    """``sup``'s state, connection, config (environment and header names, never values), tools and stderr tail;
    ``auth`` is its sign-in status (None for a server without ``auth``)."""
    conn = sup.conn
    info = conn.server_info if conn is not None else None
    return {
        "id": sup.server_id,
        "state": sup.state,
        "transport": sup.cfg.transport,
        "enabled": sup.cfg.enabled,
        "start": sup.cfg.start,
        "protocol_version": conn.protocol_version if conn is not None else None,
        "server_name": info.name if info is not None else None,
        "server_version": info.version if info is not None else None,
        "pid": conn.pid if conn is not None else None,
        "uptime_s": round(time.monotonic() - sup.up_since, 3) if sup.up_since is not None else None,
        "restarts": sup.restarts,
        "restarts_total": sup.restarts_total,
        "last_error": sup.last_error,
        "errors": [{"at": at, "error": e} for at, e in sup.errors],
        "command": list(sup.cfg.command),
        "args": list(sup.cfg.args or []),
        "url": sup.cfg.url,
        "target": sup.cfg.target,
        "env_keys": sorted(sup.cfg.env),  # never the values
        "header_keys": sorted(sup.cfg.headers),
        "auth": auth,
        "warnings": list(sup.warnings),
        "tool_count": len(sup.tools),
        "tools": [
            {
                "name": t.definition.origin_name,
                "exposed_name": t.definition.name,
                "description": t.definition.description,
                "timeout_ms": t.definition.timeout_ms,
                "estimated_duration_ms": t.definition.latency.estimated_duration_ms,
                "max_duration_ms": t.definition.latency.max_duration_ms,
                **t.info(),
            }
            for t in sup.tools
        ],
        "stderr_tail": sup.stderr.tail(20),
        "stderr_lines": sup.stderr.total_lines,
        "stderr_suppressed": sup.stderr.suppressed_total,
        "malformed_messages": conn.malformed_messages if conn is not None else 0,
    }

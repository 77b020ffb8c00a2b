"""Test one server config with a fresh connection: connect → initialize → list tools, with timings.

Why it exists: the console's server form and ``ava-engine mcp test`` must check a server (even an unsaved config)
without disturbing the running supervisor: a separate child, bounded by ``connect_timeout_ms``, closed afterwards,
with its stderr tail in the report so a failure says why.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import pydantic

from engine.config.models import McpServerConfig
from engine.mcp.connection import Connection, ServerGone, describe
from engine.mcp.oauth import SignInRequired
from engine.mcp.oauth_select import engine_auth
from engine.mcp.stderr import StderrCapture
from engine.mcp.token_store import KeyringTokenStorage

if TYPE_CHECKING:
    from engine.mcp.supervisor import HostServices


async def probe_server(server_id: str, cfg: McpServerConfig, services: HostServices) -> dict[str, Any]:
    stderr = StderrCapture(f"{server_id}:test", redact=services.redact)
    conn = Connection(server_id, cfg, base_dir=services.base_dir, stderr=stderr, on_list_changed=lambda: None)
    report: dict[str, Any] = {
        "server": server_id,
        "transport": cfg.transport,
        "ok": False,
        "protocol_version": None,
        "server_name": None,
        "server_version": None,
        "timings_ms": {},
        "tools": [],
        "error": None,
    }
    start = time.perf_counter()
    needs: list[str] = []
    try:
        if cfg.auth is not None:  # the stored token (refreshed if due); never a browser from here
            tokens = KeyringTokenStorage(server_id, str(cfg.url), services.remember_secrets)
            conn.auth = engine_auth(server_id, cfg, tokens, on_needs_sign_in=needs.append)
        async with AsyncExitStack() as stack:
            async with asyncio.timeout(cfg.connect_timeout_ms / 1000):
                await conn.open(stack, cfg.connect_timeout_ms / 1000)
                report["timings_ms"]["connect_initialize"] = round(conn.connect_ms, 2)
                report["protocol_version"] = conn.protocol_version
                info = conn.server_info
                if info is not None:
                    report["server_name"], report["server_version"] = info.name, info.version
                t = time.perf_counter()
                listed = await conn.list_tools()
                report["timings_ms"]["list_tools"] = round((time.perf_counter() - t) * 1000, 2)
            names = services.names.preview(server_id, cfg, [t.name for t in listed])
            report["tools"] = [
                {
                    "name": t.name,
                    "exposed_name": names[t.name],
                    "description": t.description or "",
                    "input_schema": t.input_schema,
                }
                for t in listed
            ]
            report["ok"] = True
    except TimeoutError:
        report["error"] = f"no answer within connect_timeout_ms ({cfg.connect_timeout_ms} ms)"
    except SignInRequired as e:
        report["error"] = str(e)
    except (ServerGone, pydantic.ValidationError, Exception) as e:
        report["error"] = needs[0] if needs else (conn.auth.fault if conn.auth and conn.auth.fault else describe(e))
    report["timings_ms"]["total"] = round((time.perf_counter() - start) * 1000, 2)
    report["stderr_tail"] = stderr.tail(20)
    return report

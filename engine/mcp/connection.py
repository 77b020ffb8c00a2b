"""One live connection to an MCP server: open, list tools, call, notice death, hear list changes.

Why it exists: the supervisor restarts connections; this module is what one attempt holds. Every step is bounded
by its caller, a stdio child's exit is noticed the moment it happens (a pidfd watch, not the next call's timeout),
and a call in flight races that death: it ends as soon as the server is gone. ``tools/list_changed`` arrives as a
legacy notification or, on 2026-07-28 connections, through ``subscriptions/listen``; both end in one callback.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engine.config.models import McpServerConfig
from engine.mcp.stderr import StderrCapture
from engine.mcp.transports import ProcessWatch, build_client, kill_process_group, report_spawn

log = logging.getLogger(__name__)

#: A paginating server that never stops cannot hang discovery.
MAX_PAGES = 100


class ServerGone(Exception):
    """The server died or the connection closed while a request was in flight."""


class Connection:
    def __init__(
        self,
        server_id: str,
        cfg: McpServerConfig,
        *,
        base_dir: Path,
        stderr: StderrCapture | None,
        on_list_changed: Callable[[], None],
    ) -> None:
        self.server_id = server_id
        self.cfg = cfg
        self.base_dir = base_dir
        self.stderr = stderr
        self._on_list_changed = on_list_changed
        self.client: Client | None = None
        self.process: Any = None
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.malformed_messages = 0
        self.dead: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._watch: ProcessWatch | None = None
        self.connect_ms = 0.0

    # ------------------------------------------------------------------------------------------- lifecycle

    async def open(self, stack: AsyncExitStack, connect_s: float) -> None:
        """Spawn/connect and negotiate; everything entered is undone by ``stack`` (child killed, pipes closed)."""
        stack.callback(self._cleanup)
        errlog = self.stderr.open() if self.stderr is not None and self.cfg.transport == "stdio" else None
        client = build_client(
            self.cfg, base_dir=self.base_dir, message_handler=self._on_message, errlog=errlog, connect_s=connect_s,
            on_transport_end=self._transport_ended,
        )
        start = time.perf_counter()
        async with report_spawn(self._spawned):
            await stack.enter_async_context(client)
        self.connect_ms = (time.perf_counter() - start) * 1000
        self.client = client

    def _spawned(self, process: Any) -> None:
        self.process = process
        self.pid = process.pid
        if self.stderr is not None:
            self.stderr.child_started()
        self._watch = ProcessWatch(process, self._exited)

    def _exited(self, code: int | None) -> None:
        self.exit_code = code
        how = f"process exited with code {code}" if code is not None else "process exited"
        self.mark_dead(f"server {self.server_id} stopped ({how})")

    def _transport_ended(self) -> None:
        self.mark_dead(f"server {self.server_id} stopped (connection closed)")

    def mark_dead(self, reason: str) -> None:
        if not self.dead.done():
            self.dead.set_result(reason)

    def _cleanup(self) -> None:
        self.mark_dead(f"server {self.server_id} stopped")
        if self._watch is not None:
            self._watch.close()
        if self.pid is not None:
            kill_process_group(self.pid)  # grandchildren that outlived their parent
        if self.stderr is not None:
            self.stderr.close()

    @property
    def protocol_version(self) -> str | None:
        if self.client is None:
            return None
        return self.client.session.protocol_version

    @property
    def server_info(self) -> types.Implementation | None:
        return self.client.server_info if self.client is not None else None

    @property
    def modern(self) -> bool:
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    def _require(self) -> Client:
        if self.client is None:
            raise ServerGone(f"server {self.server_id} is not connected")
        return self.client

    # ------------------------------------------------------------------------------------------- messages

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._on_list_changed()
        elif isinstance(message, ValueError):  # a line or event that is not a valid JSON-RPC message
            self.malformed_messages += 1
            log.warning("server %s sent a malformed message: %s", self.server_id, str(message)[:200])
        elif isinstance(message, Exception):  # the transport failed (e.g. the SSE stream broke off)
            log.warning("server %s: transport error: %s: %s", self.server_id, type(message).__name__,
                        str(message)[:200])

    async def listen(self) -> None:
        """2026-07-28: ``subscriptions/listen`` for tool list changes, re-listening when the stream drops."""
        client = self._require()
        caps = client.server_capabilities.tools
        if not self.modern or caps is None or not caps.list_changed:
            return
        while not self.dead.done():
            try:
                async with client.listen(tools_list_changed=True) as sub:
                    async for _event in sub:
                        self._on_list_changed()
                return
            except ListenNotSupportedError:
                return
            except SubscriptionLost:
                self._on_list_changed()  # no replay: refetch, then listen again
                await asyncio.sleep(0.2)
            except (MCPError, TimeoutError) as e:
                log.info("server %s: tools listen ended: %s", self.server_id, e)
                return

    # ------------------------------------------------------------------------------------------- requests

    async def _race(self, coro: Any) -> Any:
        """Await ``coro`` unless the server dies first; a cancelled caller cancels the request (→ cancelled)."""
        if self.dead.done():
            coro.close()
            raise ServerGone(self.dead.result())
        task = asyncio.ensure_future(coro)
        try:
            await asyncio.wait((task, self.dead), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task.done():
            try:
                return task.result()
            except MCPError as e:
                if e.error.code == types.CONNECTION_CLOSED:
                    self.mark_dead(f"server {self.server_id} stopped (connection closed)")
                    raise ServerGone(self.dead.result()) from e
                raise
        task.cancel()
        raise ServerGone(self.dead.result())

    async def list_tools(self) -> list[types.Tool]:
        """Every tool, page by page (at most ``MAX_PAGES``; a repeated cursor ends the walk)."""
        client = self._require()
        tools: list[types.Tool] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await self._race(client.list_tools(cursor=cursor, cache_mode="bypass"))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None or cursor in seen:
                break
            seen.add(cursor)
        return tools

    async def call(
        self, name: str, arguments: dict[str, Any], timeout_s: float | None, progress: ProgressFnT | None
    ) -> types.CallToolResult:
        client = self._require()
        result: types.CallToolResult = await self._race(
            client.call_tool(name, arguments, read_timeout_seconds=timeout_s, progress_callback=progress)
        )
        return result

"""One live connection to an MCP server: open, list tools, call, notice death, hear list changes.

Why it exists: the supervisor restarts connections; this module is what one attempt holds. Every step is bounded
by its caller, a stdio child's exit is noticed the moment it happens (a pidfd watch, not the next call's timeout),
and a call in flight races that death: it ends as soon as the server is gone. ``tools/list_changed`` arrives as a
legacy notification or, on 2026-07-28 connections, through ``subscriptions/listen``; both end in one callback.
A listing's ``ttlMs`` cache hint is kept (``list_ttl_ms``): the supervisor lists again when it runs out.

Stopping is bounded too: the SDK closes the child's stdin and waits seconds before it escalates, so
``stop_soon`` SIGTERMs the child's process group after ``TERM_AFTER_S`` and SIGKILLs it after ``KILL_AFTER_S``
(a child hung in initialize, in a call, or ignoring SIGTERM is gone within ``KILL_AFTER_S``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

import mcp.types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared import subscriptions as subs
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engine.config.models import McpServerConfig
from engine.core.backoff import Backoff
from engine.elicitation.route import Asker, InFlight
from engine.mcp.cancel_watch import Watched, uncancel
from engine.mcp.connection_errors import ServerGone, describe
from engine.mcp.passthrough import asked_call
from engine.mcp.result_check import ResultChecks
from engine.mcp.stderr import StderrCapture
from engine.mcp.transport_watch import ProcessWatch, kill_process_group, signal_group
from engine.mcp.transports import build_client, report_spawn

log = logging.getLogger(__name__)

__all__ = ["MAX_PAGES", "Connection", "Elicit", "ServerGone", "describe"]

T = TypeVar("T")

#: A paginating server that never stops cannot hang discovery.
MAX_PAGES = 100

#: How long a cancelled request may spend on its way out (the SDK's courtesy cancel) before it is cut short.
CANCEL_GRACE_S = 0.1

#: Waits before subscribing again after a lost ``subscriptions/listen`` stream (0.2 s doubling to 5 s).
RELISTEN = Backoff(0.2, 5.0)

#: On stop: the child has this long after its stdin closed to exit on its own, then its group gets SIGTERM …
TERM_AFTER_S = 0.3
#: … and this long (from the stop) before SIGKILL.
KILL_AFTER_S = 1.0


#: Answers one elicitation: (server id, the asking call or None, calls in flight, the request) → the result.
Elicit = Callable[[str, Asker | None, int, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


#: What the engine's MCP endpoint passes on to its clients (``on_notification``).
RELAYED = (
    types.LoggingMessageNotification,
    types.ResourceUpdatedNotification,
    types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
)


#: The list changes a listen stream may carry, in the order of ``listen``'s ``want``.
LIST_EVENTS: tuple[subs.ServerEvent, ...] = (
    subs.ToolsListChanged(),
    subs.PromptsListChanged(),
    subs.ResourcesListChanged(),
)


class Connection:
    def __init__(
        self,
        server_id: str,
        cfg: McpServerConfig,
        *,
        base_dir: Path,
        stderr: StderrCapture | None,
        on_list_changed: Callable[[], None],
        elicit: Elicit | None = None,
    ) -> None:
        self.server_id = server_id
        #: Answers the server's questions (engine.elicitation); None: the client offers no elicitation at all.
        self._elicit = elicit
        #: The calls in flight, to place a question on the call that asked it (engine.elicitation.route).
        self.in_flight = InFlight()
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
        #: The last listing's ``ttlMs`` (2026-07-28 cache hint; the smallest over its pages), None without one.
        self.list_ttl_ms: int | None = None
        self._stopping_at: float | None = None
        self._timers: list[asyncio.TimerHandle] = []
        #: Signs a remote server's requests (OAuth, ``engine.mcp.oauth``); set by the supervisor before ``open``.
        self.auth: Any = None
        #: Checks structured results against the listed output schemas (in place of the SDK's slower check).
        self.results = ResultChecks()
        #: Gets the server's log messages, resource updates and prompt/resource list changes (``RELAYED``): the
        #: engine's MCP endpoint relays them.
        self.on_notification: Callable[[str, types.ServerNotification], Awaitable[None]] | None = None

    # ------------------------------------------------------------------------------------------- lifecycle

    async def open(self, stack: AsyncExitStack, connect_s: float) -> None:
        """Spawn/connect and negotiate; everything entered is undone by ``stack`` (child killed, pipes closed)."""
        stack.callback(self._cleanup)
        errlog = self.stderr.open() if self.stderr is not None and self.cfg.transport == "stdio" else None
        client = build_client(
            self.cfg,
            base_dir=self.base_dir,
            message_handler=self._on_message,
            errlog=errlog,
            connect_s=connect_s,
            on_transport_end=self._transport_ended,
            auth=self.auth,
            elicitation_callback=self._on_elicit if self._elicit is not None else None,
        )
        start = time.perf_counter()
        async with report_spawn(self._spawned):
            await stack.enter_async_context(client)
        self.connect_ms = (time.perf_counter() - start) * 1000
        self.results.install(client.session)
        self.client = client

    def _spawned(self, process: Any) -> None:
        self.process = process
        self.pid = process.pid
        if self.stderr is not None:
            self.stderr.child_started()
        self._watch = ProcessWatch(process, self._exited)
        if self._stopping_at is not None:  # stopped while spawning: bound this child too
            self._arm_timers()

    def stop_soon(self) -> None:
        """Bound the child's exit from now: SIGTERM to its group after ``TERM_AFTER_S``, SIGKILL after ``KILL_AFTER_S``.

        The caller still ends the connection as usual (cancel, or leave the exit stack); this only makes sure a
        child that ignores its closed stdin, or SIGTERM, cannot hold the stop up. Network transports have no child.
        """
        if self._stopping_at is not None:
            return
        self._stopping_at = time.monotonic()
        if self.pid is not None:
            self._arm_timers()

    def _arm_timers(self) -> None:
        if self._timers or self._stopping_at is None or self.pid is None:
            return
        loop = asyncio.get_running_loop()
        elapsed = time.monotonic() - self._stopping_at
        pid = self.pid
        self._timers = [
            loop.call_later(max(0.0, TERM_AFTER_S - elapsed), signal_group, pid, signal.SIGTERM),
            loop.call_later(max(0.0, KILL_AFTER_S - elapsed), signal_group, pid, signal.SIGKILL),
        ]

    def _exited(self, code: int | None) -> None:
        self.exit_code = code
        how = f"process exited with code {code}" if code is not None else "process exited"
        self.mark_dead(f"server {self.server_id} stopped ({how})")

    def _transport_ended(self, error: Exception | None) -> None:
        why = f": {str(error)[:200] or type(error).__name__}" if error is not None else ""
        self.mark_dead(f"server {self.server_id} stopped (connection closed{why})")

    def mark_dead(self, reason: str) -> None:
        if not self.dead.done():
            self.dead.set_result(reason)

    def _cleanup(self) -> None:
        self.mark_dead(f"server {self.server_id} stopped")
        if self._watch is not None:
            self._watch.close()
        for timer in self._timers:
            timer.cancel()
        self._timers = []
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
        elif isinstance(message, RELAYED):
            if self.on_notification is not None:
                try:
                    await self.on_notification(self.server_id, message)
                except Exception as e:  # a relay bug must not end the server's connection
                    log.debug("server %s: relaying %s failed: %s", self.server_id, type(message).__name__, e)
        elif isinstance(message, ValueError):  # a line or event that is not a valid JSON-RPC message
            self.malformed_messages += 1
            log.warning("server %s sent a malformed message: %s", self.server_id, str(message)[:200])
        elif isinstance(message, Exception):  # the transport failed (e.g. the SSE stream broke off)
            log.warning(
                "server %s: transport error: %s: %s", self.server_id, type(message).__name__, str(message)[:200]
            )

    async def _on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The SDK's elicitation callback (both eras): the desk answers, on the call that asked."""
        assert self._elicit is not None
        asker, in_flight = self.in_flight.asker()
        try:
            return await self._elicit(self.server_id, asker, in_flight, params)
        except Exception as e:  # a desk bug must not hang the server's call: it is told no
            log.warning("server %s: answering an elicitation failed: %s", self.server_id, describe(e))
            return types.ElicitResult(action="decline")

    async def listen(self) -> None:
        """2026-07-28: ``subscriptions/listen`` for tool list changes — and prompt and resource list changes when
        someone relays them (``on_notification``: the engine's MCP endpoint) — re-listening when the stream drops."""
        client = self._require()
        caps = client.server_capabilities
        relayed = self.on_notification is not None
        tools, prompts, resources = caps.tools, caps.prompts, caps.resources
        want = (
            bool(tools and tools.list_changed),
            relayed and bool(prompts and prompts.list_changed),
            relayed and bool(resources and resources.list_changed),
        )
        if not self.modern or not any(want):
            return
        lost = 0  # streams lost in a row: a server that keeps dropping it is re-subscribed ever more slowly
        while not self.dead.done():
            try:
                async with client.listen(
                    tools_list_changed=want[0], prompts_list_changed=want[1], resources_list_changed=want[2]
                ) as sub:
                    async for event in sub:
                        lost = 0
                        await self._on_message(subs.event_to_notification(event, {}))  # as the handshake era's
                return
            except ListenNotSupportedError:
                return
            except SubscriptionLost:
                for event, wanted in zip(LIST_EVENTS, want, strict=True):  # no replay: refetch, listen again
                    if wanted:
                        await self._on_message(subs.event_to_notification(event, {}))
                await asyncio.sleep(RELISTEN.delay_s(lost))
                lost += 1
            except (MCPError, TimeoutError) as e:
                log.info("server %s: tools listen ended: %s", self.server_id, e)
                return

    # ------------------------------------------------------------------------------------------- requests

    async def _race(self, coro: Any) -> Any:
        """Await ``coro`` unless the server dies first; a cancelled caller cancels the request (→ cancelled).

        The request runs in the caller's own task (a task per call costs several loop turns on every call). The
        server's death cancels that task, and only a cancellation that is ours alone becomes ``ServerGone``: a
        caller cancelled from outside (the tool timeout, a barge-in) stays cancelled even when the server dies
        in the same moment, and the task's cancel count is left as it was found, so an ``asyncio.timeout``
        around the call still turns its own cancellation into ``TimeoutError``.

        A cancelled request first sends the SDK's courtesy ``notifications/cancelled``, in this task. That write
        blocks when a stdio server has stopped reading its stdin and the pipe is full, and the SDK only gives
        up on it after seconds, so once a cancellation has reached the request it gets ``CANCEL_GRACE_S`` to
        finish and is then cancelled again: a timeout or a death ends the call on time, as the task per call did.
        """
        if self.dead.done():
            coro.close()
            raise ServerGone(self.dead.result())
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Connection._race must be awaited in a task")
        loop = task.get_loop()
        baseline = task.cancelling()
        active, killed, forced = True, False, 0
        guard: asyncio.TimerHandle | None = None

        def on_dead(_: asyncio.Future[str]) -> None:
            # Runs as a scheduled callback: by then the request may already have ended (``active``).
            nonlocal killed
            if active:
                killed = True
                task.cancel()

        def on_cancel() -> None:
            nonlocal guard
            if guard is None:
                guard = loop.call_later(CANCEL_GRACE_S, force)

        def force() -> None:
            # Only while a cancellation is still pending: the SDK's own read timeout cancels inside its cancel
            # scope and takes that back at once; its courtesy cancel then runs unforced, as it always has.
            nonlocal guard, forced
            guard = None
            if active and task.cancelling() > baseline:
                forced += 1
                task.cancel()

        self.dead.add_done_callback(on_dead)
        try:
            result = await Watched(coro, on_cancel)
        except asyncio.CancelledError:
            if uncancel(task, killed + forced) == 0 and killed:
                raise ServerGone(self.dead.result()) from None
            raise
        except Exception as e:
            uncancel(task, killed + forced)
            if killed:  # our cancellation became another error on its way out: the server is gone all the same
                raise ServerGone(self.dead.result()) from e
            if isinstance(e, MCPError) and e.error.code == types.CONNECTION_CLOSED:
                self.mark_dead(f"server {self.server_id} stopped (connection closed)")
                raise ServerGone(self.dead.result()) from e
            raise
        finally:
            active = False
            self.dead.remove_done_callback(on_dead)
            if guard is not None:
                guard.cancel()
        uncancel(task, killed + forced)  # the request swallowed a cancellation of ours and answered anyway
        return result

    async def ask(self, request: Callable[[Client], Awaitable[T]]) -> T:
        """Any other request to the server (resources, prompts, completion), ended like a call if the server dies."""
        result: T = await self._race(request(self._require()))
        return result

    async def list_tools(self) -> list[types.Tool]:
        """Every tool, page by page (at most ``MAX_PAGES``; a repeated cursor ends the walk)."""
        client = self._require()
        tools: list[types.Tool] = []
        cursor: str | None = None
        seen: set[str] = set()
        ttl: int | None = None
        for _ in range(MAX_PAGES):
            page = await self._race(client.list_tools(cursor=cursor, cache_mode="bypass"))
            tools.extend(page.tools)
            if self.modern and page.ttl_ms:  # the SDK ignores the hint on older protocols; so do we
                ttl = page.ttl_ms if ttl is None else min(ttl, page.ttl_ms)
            cursor = page.next_cursor
            if cursor is None or cursor in seen:
                break
            seen.add(cursor)
        self.list_ttl_ms = ttl
        self.results.learn(tools)
        return tools

    async def call(
        self, name: str, arguments: dict[str, Any], timeout_s: float | None, progress: ProgressFnT | None
    ) -> types.CallToolResult:
        client = self._require()
        asked = asked_call(client, name, arguments, timeout_s, progress) if self.modern else None
        result: types.CallToolResult = await self._race(
            asked or client.call_tool(name, arguments, read_timeout_seconds=timeout_s, progress_callback=progress)
        )
        return result

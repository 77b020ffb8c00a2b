"""The supervisor of one MCP server: its state machine, restarts, tool registration and calls.

Why it exists: a server may crash at start, die mid-call, hang, flood stderr or change its tools at run time; the
engine must stay up and tell the truth about it. States: ``starting → up → restarting → failed`` or ``stopped``,
each change published as ``server.state`` and mirrored in ``ai_agent_mcp_server_up``. Every step is bounded
(``connect_timeout_ms`` for connect + list, the tool timeout for calls). A dead child is noticed at once and calls
in flight end with an error. Restarts back off exponentially with jitter up to ``max_restarts``; the count resets
after ``stable_after_ms`` up; past the limit the server is ``failed`` until the operator restarts it.
Its tools' registration (names settled across servers, renames) is the ``ToolRegistration`` part it holds, in
``engine.mcp.registration``; ``stop`` is bounded (the child is killed within ``connection.KILL_AFTER_S``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from contextlib import AsyncExitStack, suppress
from typing import Any, Literal

import pydantic
from mcp.shared.exceptions import MCPError

from engine.config.models import McpServerConfig
from engine.core.backoff import Backoff
from engine.elicitation.route import Asker
from engine.events import ServerStateChanged
from engine.mcp.call_failures import CALL_FAILURES, call_failure, not_running
from engine.mcp.connection import Connection, ServerGone, describe
from engine.mcp.host_services import HostServices
from engine.mcp.oauth import NEEDS_SIGN_IN, EngineOAuth, SignInRequired
from engine.mcp.oauth_select import engine_auth
from engine.mcp.oauth_watch import auth_status, tend, wait_for_sign_in
from engine.mcp.passthrough import offer
from engine.mcp.registration import ToolRegistration
from engine.mcp.results import to_tool_result
from engine.mcp.server_snapshot import server_snapshot
from engine.mcp.stderr import StderrCapture
from engine.mcp.token_store import KeyringTokenStorage
from engine.mcp.tool import MCPTool
from engine.tools.base import ToolExecutionContext, ToolResult

log = logging.getLogger(__name__)

__all__ = ["HostServices", "State", "Supervisor"]

State = Literal["starting", "up", "restarting", "failed", "stopped", "needs sign-in"]

#: How long ``stop`` waits for the supervision loop to wind down (the child is SIGKILLed well before that).
STOP_WAIT_S = 2.0
#: The shortest listing lifetime honoured: a ``ttlMs`` of 1 must not turn into a thousand re-lists a second.
MIN_TTL_S = 1.0


class Supervisor:
    def __init__(self, server_id: str, cfg: McpServerConfig, services: HostServices) -> None:
        self.server_id = server_id
        self.cfg = cfg
        self.services = services
        self.state: State = "stopped"
        self.restarts = 0
        self.restarts_total = 0
        self.last_error: str | None = None
        #: The last errors with their wall-clock times (the console's describe view): (unix time, error).
        self.errors: deque[tuple[float, str]] = deque(maxlen=10)
        #: This server's tools in the registry (``tools`` and ``warnings`` below are its).
        self.registration = ToolRegistration(server_id, lambda: self.cfg, services, self)
        self.conn: Connection | None = None
        #: The connection of the attempt in progress, from spawn on (``conn`` is set only once it is up).
        self._attempt_conn: Connection | None = None
        self.up_since: float | None = None
        self.stderr = StderrCapture(server_id, redact=services.redact)
        self.settled = asyncio.Event()
        self._up = asyncio.Event()
        self._stop = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._attempt_started = 0.0
        #: Why the server waits for an operator's sign-in (OAuth), set by the attempt that found out.
        self._needs_sign_in: str | None = None
        self._auth: EngineOAuth | None = None
        #: The server's OAuth token store (the keyring); the status shows what it last read, never waiting for it.
        self._tokens: KeyringTokenStorage | None = None
        services.names.configure(server_id, cfg, self.registration.names_changed)

    @property
    def tools(self) -> list[MCPTool]:
        return self.registration.tools

    @property
    def warnings(self) -> list[str]:
        return self.registration.warnings

    # ------------------------------------------------------------------------------------------- control

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the supervision loop (idempotent while running)."""
        if self.running:
            return
        self._stop.clear()
        self.settled.clear()
        spawn = self.services.spawn or asyncio.get_running_loop().create_task
        self._task = spawn(self._run(), name=f"mcp:{self.server_id}")

    async def stop(self, reason: str | None = None) -> None:
        """Stop the child (no orphans), unregister the tools, end in ``stopped``."""
        self._stop.set()
        task = self._task
        if self._attempt_conn is not None:
            self._attempt_conn.stop_soon()  # a child that ignores its closed stdin or SIGTERM is killed anyway
        if task is not None and not task.done():
            if self.state != "up":  # connecting or backing off: nothing to drain, end it now
                task.cancel()
            done, _ = await asyncio.wait({task}, timeout=STOP_WAIT_S)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
        self._task = None
        self.registration.unregister()
        self._set_state("stopped", reason or self.last_error)
        self.settled.set()

    async def restart(self) -> None:
        """Operator restart: a fresh start with the restart count reset (also leaves ``failed``)."""
        await self.stop()
        self.restarts = 0
        self.last_error = None
        self.start()

    async def wait_up(self, timeout_s: float) -> bool:
        """Start if needed (lazy servers) and wait until up, or until this attempt settled otherwise."""
        if self.state == "up":
            return True
        if not self.running and self.state not in ("failed", NEEDS_SIGN_IN):
            self.start()
        with suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while self.state != "up" and self.running:
                    waiter = asyncio.ensure_future(self._up.wait())
                    settled = asyncio.ensure_future(self.settled.wait())
                    try:
                        await asyncio.wait((waiter, settled), return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        waiter.cancel()
                        settled.cancel()
                    if self.state != "up" and self.settled.is_set() and self.state != "starting":
                        break
        return self.state == "up"

    # ------------------------------------------------------------------------------------------- state

    def _set_state(self, state: State, error: str | None = None) -> None:
        if error is not None:
            self.last_error = error
            self.errors.append((time.time(), error))
        changed = state != self.state
        self.state = state
        self.services.metrics.server_up.labels(self.server_id).set(1 if state == "up" else 0)
        if state == "up":
            self._up.set()
        else:
            self._up.clear()
        if changed:
            log.info("MCP server %s: %s%s", self.server_id, state, f" ({self.last_error})" if error else "")
            self.services.bus.publish(self._state_event(state))

    def _state_event(self, state: str) -> ServerStateChanged:
        """The state as an event, with what a recording needs to show the server again (transport, protocol)."""
        conn = self.conn
        version = conn.protocol_version if conn is not None and state == "up" else None
        return ServerStateChanged(
            server=self.server_id,
            state=state,
            restarts=self.restarts,
            last_error=self.last_error,
            transport=self.cfg.transport,
            protocol_version=version or "",
        )

    def _on_list_changed(self) -> None:
        self._changed.set()

    # ------------------------------------------------------------------------------------------- the loop

    def _backoff_s(self) -> float:
        """The wait before restart number ``restarts`` (1 for the first): ``backoff_ms`` doubling to the cap."""
        r = self.cfg.restart
        return Backoff(r.backoff_ms / 1000, r.backoff_max_ms / 1000).delay_s(self.restarts - 1)

    async def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            self._set_state("starting" if first else "restarting")
            first = False
            reason = await self._attempt()
            self.settled.set()
            if self._stop.is_set():
                return
            if self._needs_sign_in is not None:  # waits for the operator: restarting would not help …
                self.registration.unregister()
                self._set_state(NEEDS_SIGN_IN, self._needs_sign_in)
                if self._tokens is None or not await wait_for_sign_in(self._tokens, self._stop):
                    return
                self.restarts, first = 0, True  # … until a sign-in elsewhere (`mcp login`) stored new tokens
                continue
            if self._auth is not None and self._auth.fault:
                reason = self._auth.fault  # e.g. the token endpoint is down: said plainly, then retried
            self.last_error = reason
            self.errors.append((time.time(), reason))
            r = self.cfg.restart
            if not r.enabled or self.restarts >= r.max_restarts:
                limit = "restarts disabled" if not r.enabled else f"gave up after {self.restarts} restarts"
                self.registration.unregister()
                self._set_state("failed", f"{reason} ({limit})")
                return
            self.restarts += 1
            self.restarts_total += 1
            self.services.metrics.server_restarts.labels(self.server_id).inc()
            if self.state == "restarting":  # a failed restart: still tell the world about the new count
                self.services.bus.publish(self._state_event("restarting"))
            self._set_state("restarting", reason)
            with suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self._backoff_s())

    async def _attempt(self) -> str:
        """One connection, from spawn to death or stop; returns why it ended."""
        connect_s = self.cfg.connect_timeout_ms / 1000
        self._attempt_started = time.monotonic()
        conn = Connection(
            self.server_id,
            self.cfg,
            base_dir=self.services.base_dir,
            stderr=self.stderr,
            on_list_changed=self._on_list_changed,
            elicit=self.services.elicit,
        )
        self._attempt_conn = conn
        conn.on_notification = self.services.on_notification
        if self._stop.is_set():
            conn.stop_soon()
        helpers: list[asyncio.Task[Any]] = []
        self._needs_sign_in, self._auth = None, None
        if self.cfg.auth is not None:
            try:
                if self._tokens is None or self._tokens.url != self.cfg.url:
                    remember = self.services.remember_secrets
                    self._tokens = KeyringTokenStorage(self.server_id, str(self.cfg.url), remember)
                conn.auth = self._auth = engine_auth(
                    self.server_id, self.cfg, self._tokens, on_needs_sign_in=lambda why: self._sign_in_needed(conn, why)
                )
            except SignInRequired as e:
                self._needs_sign_in = str(e)
                return str(e)
            except Exception as e:  # no usable keyring …: this server only
                return describe(e)
        try:
            async with AsyncExitStack() as stack:
                try:
                    async with asyncio.timeout(connect_s):
                        await conn.open(stack, connect_s)
                        listed = await conn.list_tools()
                except TimeoutError:
                    return f"no answer within connect_timeout_ms ({self.cfg.connect_timeout_ms} ms)"
                except ServerGone as e:
                    return self._with_exit(conn, str(e))
                self.conn = conn
                self._changed.clear()
                self.registration.adopt(listed)
                self.up_since = time.monotonic()
                self.last_error = None
                self._set_state("up")
                self.settled.set()
                if self.services.on_up is not None:
                    try:
                        self.services.on_up(self.server_id)
                    except Exception as e:  # a hook bug must not take the server down
                        log.warning("MCP server %s: on_up hook failed: %s", self.server_id, e)
                loop = asyncio.get_running_loop()
                sid = self.server_id
                helpers = [
                    loop.create_task(conn.listen(), name=f"mcp:{sid}:listen"),
                    loop.create_task(self._refresher(conn), name=f"mcp:{sid}:refresh"),
                    loop.create_task(self._stability_timer(), name=f"mcp:{sid}:stable"),
                ]
                if self._auth is not None and self._tokens is not None:  # refresh on time; notice a sign-out
                    oauth = tend(self._auth, self._tokens, conn.list_tools, lambda why: self._sign_in_needed(conn, why))
                    helpers.append(loop.create_task(oauth, name=f"mcp:{sid}:oauth"))
                stop_wait = loop.create_task(self._stop.wait(), name=f"mcp:{sid}:stop-wait")
                helpers.append(stop_wait)
                await asyncio.wait((conn.dead, stop_wait), return_when=asyncio.FIRST_COMPLETED)
                for h in helpers:
                    h.cancel()
                await asyncio.gather(*helpers, return_exceptions=True)
                self.conn = None
                if self._stop.is_set():
                    conn.mark_dead(f"server {self.server_id} stopped")
                    return "stopped"
                return self._with_exit(conn, conn.dead.result())
        except Exception as e:  # a failed attempt (spawn error, handshake error, transport crash)
            return self._with_exit(conn, describe(e))
        finally:
            for h in helpers:
                h.cancel()
            self.conn = None
            self._attempt_conn = None
            self.up_since = None

    def _sign_in_needed(self, conn: Connection, why: str) -> None:
        """The token expired and could not be refreshed (or was refused): this connection ends, no restart."""
        self._needs_sign_in = why
        conn.mark_dead(why)

    def _with_exit(self, conn: Connection, reason: str) -> str:
        tail = self.stderr.tail(1)
        if tail and "exited" in reason:
            return f"{reason}; stderr: {tail[0][:200]}"
        return reason

    async def _stability_timer(self) -> None:
        await asyncio.sleep(self.cfg.restart.stable_after_ms / 1000)
        if self.restarts:
            log.info(
                "MCP server %s stayed up %d ms: restart count reset", self.server_id, self.cfg.restart.stable_after_ms
            )
        self.restarts = 0

    async def _refresher(self, conn: Connection) -> None:
        """Re-list after list_changed notifications, one re-list per burst (debounced), and when the listing's
        ``ttlMs`` runs out (at most once a ``MIN_TTL_S``): a server that says how long its list stays fresh
        need not send a notification for the engine to see a change."""
        while True:
            ttl_ms = conn.list_ttl_ms
            if ttl_ms:
                with suppress(TimeoutError):
                    async with asyncio.timeout(max(ttl_ms / 1000, MIN_TTL_S)):
                        await self._changed.wait()
                self._changed.set()
            await self._changed.wait()
            await asyncio.sleep(self.services.debounce_s)
            self._changed.clear()
            try:
                async with asyncio.timeout(self.cfg.connect_timeout_ms / 1000):
                    listed = await conn.list_tools()
            except (TimeoutError, ServerGone, MCPError, pydantic.ValidationError) as e:
                log.warning("MCP server %s: re-listing tools failed: %s", self.server_id, describe(e))
                continue
            self.registration.adopt(listed)

    # ------------------------------------------------------------------------------------------- calls

    async def call_tool(self, tool: MCPTool, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        conn = self.conn
        d = tool.definition
        if conn is None or self.state != "up":
            if self.cfg.start == "lazy" and self.state in ("stopped", "starting"):
                await self.wait_up(self.cfg.connect_timeout_ms / 1000)
                conn = self.conn
            if conn is None or self.state != "up":
                return not_running(self.server_id, self.state, d, self.state == NEEDS_SIGN_IN)
        started = time.perf_counter()
        try:
            with conn.in_flight.calling(Asker(self.server_id, d.name, d.origin_name or d.name, ctx)):
                # No SDK read timeout: the executor's deadline (engine.tools.execution) is this tool's limit or shorter,
                # stops while a person answers the tool's question, and ends the call first; its cancellation
                # sends the SDK's courtesy cancel as the SDK's timeout would. A second clock cost a loop timer
                # (``call_at``) per call.
                result = await conn.call(d.origin_name, args, None, tool.progress_callback(ctx))
            tool.answered(time.perf_counter() - started)
        except CALL_FAILURES as e:
            failed = call_failure(self.server_id, d, e, self.services.redact)
            if failed is None:
                raise
            return failed
        offer(result)  # its media, whole, for the engine's MCP endpoint when it is the caller
        return to_tool_result(result, tool.speech, d)

    # ------------------------------------------------------------------------------------------- status

    def snapshot(self) -> dict[str, Any]:
        auth = auth_status(self._tokens) if self.cfg.auth is not None else None
        return server_snapshot(self, auth)

"""The one execution path every tool call in the product goes through.

Order matters and is the contract: the name must be one this call was shown (else ``rejected`` and the tool never
runs) → arguments parsed (malformed JSON → ``rejected`` with the parser's message) → validated against the schema
(every violation named → ``rejected``) → cache → timeout → run → exceptions become ``error`` with a safe message →
events, metrics and latency hooks. Several calls from one model turn run concurrently and come back in order.

Every call that published ``tool.requested`` ends with ``tool.completed``, also when its task is cancelled (apply-now,
barge-in, call end, a provider's cancel): status ``cancelled``, so no invocation shows "running" forever. A timeout
says where its limit came from (the tool's timeout, its declared max, its server's default, the tier's budget or
the engine's default), so the operator knows which number to change.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from engine.config.models import Settings
from engine.core.metrics import UNKNOWN_TOOL, Metrics
from engine.core.running_task import current_task
from engine.events import EventBus, ToolCompleted, ToolRejected, ToolRequested
from engine.redaction.redactor import Redactor
from engine.sessions.session import CallSession
from engine.tools import speech
from engine.tools.approvals import ApprovalDesk, approval_reason
from engine.tools.base import ToolDefinition, ToolExecutionContext, ToolResult
from engine.tools.limits import Limits, clip, clip_repr
from engine.tools.registry import RegisteredTool, ToolRegistry
from engine.tools.timers import Deadlines
from engine.tools.validation import ArgumentError, parse_arguments

log = logging.getLogger(__name__)

_REQUESTED, _COMPLETED = ToolRequested.type, ToolCompleted.type


def own_limit(d: ToolDefinition, settings: Settings) -> tuple[float | None, str]:
    """The tool's own time limit in seconds (None: it has none) and where it comes from, for timeout messages."""
    if d.timeout_ms:
        server = settings.mcp.servers.get(d.server)
        origin = d.origin_name or d.name
        per_tool = server is not None and any(t.name == origin and t.timeout_ms for t in server.tools)
        if server is not None and not per_tool and server.defaults.timeout_ms == d.timeout_ms:
            return d.timeout_ms / 1000, f"server {d.server}'s default timeout (defaults.timeout_ms: {d.timeout_ms})"
        return d.timeout_ms / 1000, f"the tool's timeout (timeout_ms: {d.timeout_ms})"
    if d.latency.max_duration_ms:
        ms = d.latency.max_duration_ms
        return ms / 1000, f"the tool's declared max duration (max_duration_ms: {ms})"
    return None, ""


#: How a limit that is the engine's default is named (its setting follows).
DEFAULT_SOURCE = "the engine's default tool timeout"


def default_limit_for(ms: int) -> tuple[float, str]:
    """The engine's default tool timeout of ``ms`` milliseconds and its name."""
    return ms / 1000, f"{DEFAULT_SOURCE} (engine.tool_timeout_ms: {ms})"


def timeout_result(d: ToolDefinition, timeout_s: float, source: str) -> ToolResult:
    """The ``timeout`` result: how long, and which setting set that limit (the caller hears only how long)."""
    message = f"{d.name} did not answer within {timeout_s:g} seconds, the limit set by {source}."
    return ToolResult("timeout", message, spoken=speech.timed_out(d, timeout_s))


class ExecutionHooks(Protocol):
    """What the budget layer (``engine.budget.layer``, the one implementation, handed over by the composition root)
    plugs into the path: timeouts, the result cache and latency recording. ``task`` runs
    the call (None: the current task), so a hook that tracks calls need not look it up again; ``settings`` are the
    ones the call runs under."""

    def begin(
        self,
        entry: RegisteredTool,
        args: Mapping[str, Any],
        session: CallSession | None,
        task: asyncio.Task[Any] | None,
        settings: Settings,
    ) -> ToolResult | tuple[float, str]:
        """Before the call runs: a result to answer with instead (a cache hit), or the call's time limit in seconds
        and where it comes from (named in a timeout's message)."""
        ...

    def completed(
        self,
        entry: RegisteredTool,
        args: Mapping[str, Any],
        result: ToolResult,
        latency_ms: float,
        is_probe: bool,
        task: asyncio.Task[Any] | None,
        settings: Settings,
    ) -> None:
        """The call ended (every call that passed ``begin``, also a cancelled one)."""
        ...


class ToolExecutor:
    def __init__(
        self,
        registry: ToolRegistry,
        bus: EventBus,
        metrics: Metrics,
        settings: Callable[[], Settings],
        redactor: Redactor,
        hooks: ExecutionHooks,
    ) -> None:
        self.registry = registry
        self.bus = bus
        self.metrics = metrics
        self._settings = settings
        self.redact = redactor
        self.hooks = hooks
        self._deadlines = Deadlines()
        #: Tools that may do harm wait here for the operator, after the checks and before they run.
        self.approvals = ApprovalDesk(bus, metrics, settings, redactor)

    def argument_limits(self) -> Limits:
        """The bounds arguments are checked against (``engine.tool_arguments``), for whoever parses them first."""
        return self._settings().engine.tool_arguments

    def _reject(
        self, session: CallSession | None, name: str, tool_call_id: str, kind: str, reason: str, known: bool
    ) -> ToolResult:
        """``kind`` is the metric's reason label (a fixed word); ``known`` whether ``name`` may be a label value
        (a registered tool): any other name counts under one series, so bad names cannot grow the metrics."""
        call_id = session.call_id if session else ""
        self.metrics.tool_rejected(name if known else UNKNOWN_TOOL, kind)
        if self.bus.wants(ToolRejected.type):
            self.bus.publish(
                ToolRejected(call_id=call_id, tool_call_id=tool_call_id, exposed_name=clip(name), reason=reason)
            )
        return ToolResult("rejected", reason)

    async def execute(
        self,
        session: CallSession | None,
        exposed_name: str,
        args: str | Mapping[str, Any] | None,
        *,
        tool_call_id: str = "",
        is_probe: bool = False,
        allowed: frozenset[str] | None = None,
        limit: tuple[float, str] | None = None,
        approved_by: str | None = None,
    ) -> ToolResult:
        """Run one tool call for ``session``. ``allowed`` overrides the session's shown tools (probes, CLI);
        ``limit`` is a caller's own deadline (seconds, where it comes from; the MCP endpoint's per-tool timeout):
        the call gets the shorter of it and its usual limit, and a timeout names the one that applied.
        ``approved_by`` names who already approved it (the operator's own command), else it may wait for one."""
        shown = allowed if allowed is not None else (session.shown_tools if session is not None else frozenset())
        if not isinstance(exposed_name, str):
            return self._reject(
                session,
                repr(exposed_name),
                tool_call_id,
                "not shown",
                f"not shown: a tool name must be text, got {type(exposed_name).__name__}",
                False,
            )
        if exposed_name not in shown:
            return self._reject(
                session,
                exposed_name,
                tool_call_id,
                "not shown",
                f"not shown: the tool {clip_repr(exposed_name)} was not offered on this call, so it was not run",
                self.registry.get(exposed_name) is not None,
            )
        entry = self.registry.get(exposed_name)
        if entry is None:
            return self._reject(
                session,
                exposed_name,
                tool_call_id,
                "unavailable",
                f"unavailable: the tool {clip_repr(exposed_name)} is no longer available",
                False,
            )
        settings = self._settings()
        try:
            parsed = entry.validator.check(parse_arguments(args, settings.engine.tool_arguments))
        except ArgumentError as e:
            return self._reject(
                session,
                exposed_name,
                tool_call_id,
                "invalid arguments",
                f"invalid arguments for {exposed_name}: {e}",
                True,
            )
        d = entry.tool.definition
        # Only a call that may have to wait (or a probe) goes to the desk: the rule is approval_reason's either way.
        if is_probe or (not approved_by and approval_reason(d, session, settings) is not None):
            if refusal := await self.approvals.admit(session, d, parsed, tool_call_id, approved_by, is_probe):
                return self._reject(session, exposed_name, tool_call_id, "not approved", refusal, True)
            return await self._run(session, entry, parsed, tool_call_id, is_probe, limit)  # settings may be newer
        return await self._run(session, entry, parsed, tool_call_id, is_probe, limit, settings)

    async def _run(
        self,
        session: CallSession | None,
        entry: RegisteredTool,
        args: dict[str, Any],
        tool_call_id: str,
        is_probe: bool,
        limit: tuple[float, str] | None = None,
        settings: Settings | None = None,
    ) -> ToolResult:
        d = entry.tool.definition
        call_id = session.call_id if session else ""
        origin = d.origin_name or d.name
        if settings is None:
            settings = self._settings()
        bus = self.bus
        wanted = bus.wanted  # ``bus.wants``, inline: events nobody listens for are not built
        if wanted is None or _REQUESTED in wanted:
            bus.publish(
                ToolRequested.build(
                    call_id=call_id,
                    tool_call_id=tool_call_id,
                    exposed_name=d.name,
                    server=d.server,
                    tool=origin,
                    arguments=args,
                    is_probe=is_probe,
                )
            )
        start = time.perf_counter()
        hooks = self.hooks
        task = current_task()  # looked up once: the deadline and the hooks know the call by it
        began = hooks.begin(entry, args, session, task, settings)
        if isinstance(began, ToolResult):  # answered from the cache
            result = began
        else:
            # positional: a dataclass called with keywords costs three times as much
            ctx = ToolExecutionContext(
                call_id,
                session,
                settings,
                bus.publish,
                session.channel_id if session else None,
                tool_call_id,
                is_probe,
            )
            timeout, source = began
            if limit is not None and limit[0] < timeout:
                timeout, source = limit
            deadline = self._deadlines.start(timeout, task)
            ctx.extras["hold"] = deadline  # hold(): a question to a person stops the clock (Deadlines.held)
            try:
                result = await entry.tool.execute(args, ctx)
            except asyncio.CancelledError:
                if not self._deadlines.end(deadline):  # cancelled, not by its deadline: the turn it served is gone
                    latency_ms = (time.perf_counter() - start) * 1000
                    message = f"{d.name} was cancelled before it finished; no result was used."
                    cancelled = ToolResult("cancelled", message)  # to nobody; the event, metrics and hooks see it
                    self._ended(call_id, entry, args, cancelled, latency_ms, tool_call_id, is_probe, task, settings)
                    raise
                result = timeout_result(d, timeout, source)
            except TimeoutError:  # the tool's own timeout, not ours: as asyncio.timeout saw it, a timeout
                self._deadlines.end(deadline)
                result = timeout_result(d, timeout, source)
            except Exception as e:  # a tool bug must never take the call down
                self._deadlines.end(deadline)
                log.warning("tool %s raised %s", d.name, type(e).__name__, exc_info=log.isEnabledFor(logging.DEBUG))
                detail = self.redact(str(e))[:200]
                raw = f"{d.name} failed: {type(e).__name__}{': ' + detail if detail else ''}"
                result = ToolResult("error", raw, spoken=speech.failed(d))
            except BaseException:
                self._deadlines.end(deadline)
                raise
            else:
                self._deadlines.end(deadline)
            if not isinstance(result, ToolResult):
                raw = f"{d.name} returned {type(result).__name__}, not a ToolResult"
                result = ToolResult("error", raw, spoken=speech.failed(d))
        latency_ms = (time.perf_counter() - start) * 1000
        # The one boundary every result passes: providers, the transcript, events and the CLI get it masked.
        redact = self.redact
        if redact.active:
            result.message = redact(result.message)
            result.data = redact.value(result.data)
        self._ended(call_id, entry, args, result, latency_ms, tool_call_id, is_probe, task, settings)
        return result

    def _ended(
        self,
        call_id: str,
        entry: RegisteredTool,
        args: dict[str, Any],
        result: ToolResult,
        latency_ms: float,
        tool_call_id: str,
        is_probe: bool,
        task: asyncio.Task[Any] | None,
        settings: Settings,
    ) -> None:
        """Every invocation's end, whatever became of it: the metrics, the latency hooks, then ``tool.completed``."""
        d = entry.tool.definition
        origin = d.origin_name or d.name
        self.metrics.tool_done(d.server, origin, result.status, latency_ms / 1000)
        if result.cache_hit:
            self.metrics.cache_hits.labels(d.name).inc()
        self.hooks.completed(entry, args, result, latency_ms, is_probe, task, settings)
        wanted = self.bus.wanted  # read again: subscribers come and go while the tool runs
        if wanted is not None and _COMPLETED not in wanted:
            return
        self.bus.publish(
            ToolCompleted.build(
                call_id=call_id,
                tool_call_id=tool_call_id,
                exposed_name=d.name,
                server=d.server,
                tool=origin,
                status=result.status,
                latency_ms=int(latency_ms * 1000 + 0.5) / 1000,  # round(x, 3) costs a float-to-text trip
                message=result.message,
                cache_hit=result.cache_hit,
                is_probe=is_probe,
                data=result.data,
            )
        )

    async def execute_many(
        self,
        session: CallSession | None,
        calls: Sequence[tuple[str, str | Mapping[str, Any] | None, str]],
    ) -> list[ToolResult]:
        """Run (name, args, tool_call_id) calls concurrently; results in request order."""
        if len(calls) == 1:
            name, args, tcid = calls[0]
            return [await self.execute(session, name, args, tool_call_id=tcid)]
        return list(await asyncio.gather(*(self.execute(session, n, a, tool_call_id=t) for n, a, t in calls)))

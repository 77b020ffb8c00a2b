"""The Engine: wires registry, executor, sessions, providers and components; the console's and CLI's one API.

Commands come in as method calls (start_call, user_said, set_tier, set_tool_enabled, reload …); queries return
plain data or snapshots (calls_info, tool_states, server_status, leaderboard …); everything that happens goes
out as events on ``engine.bus``. The public surface is listed in ``engine/__init__.py``; attributes not listed
there (registry, executor, views, sessions, calls, components …) are the engine's internals.

This is the composition root: it builds each part and hands it what it uses (``engine.components`` wires the
components: the MCP host, the HTTP server, the budget layer …). ``Engine`` is one object for its callers, a facade:
the commands of the operator's desk, steering, approvals, tools' questions and recordings are its parts' methods,
forwarded (``Forward``), and no part is handed the engine to reach the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from engine.bounds.json_text import valid_text
from engine.budget.tier_control import TIERS, TierControl
from engine.calls.capacity import Admission
from engine.calls.manager import CallError, CallManager, TurnHooks
from engine.calls.turn_timing import TurnTimingBook
from engine.components import EngineComponent, budget_layer, default_components, email_service
from engine.config.models import Settings
from engine.core.forward import Forward
from engine.core.metrics import Metrics
from engine.core.tasks import EngineTasks, Spawn
from engine.events import ConfigReloaded, EngineError, EventBus
from engine.operator.approvals import ApprovalCommands
from engine.operator.call_switches import CallSwitches
from engine.operator.desk import OperatorDesk
from engine.operator.elicitation import ElicitationCommands
from engine.operator.servers import ServerDesk
from engine.operator.steering import Steering
from engine.providers.base import Provider, TurnReply
from engine.providers.factory import create_provider
from engine.providers.pipeline import bind_pipelines
from engine.recorder.desk import RecordingDesk
from engine.redaction.redactor import Redactor, secret_values
from engine.sessions.session import CallSession
from engine.sessions.snapshot import CallInfo
from engine.sessions.store import InMemorySessionStore, SessionStore
from engine.tools.base import Tool, ToolResult
from engine.tools.builtin import builtin_tools
from engine.tools.builtin.transfer import PhoneLines
from engine.tools.execution import ToolExecutor
from engine.tools.registry import ToolRegistry
from engine.tools.view import ToolView, ToolViewBuilder

if TYPE_CHECKING:  # budget, MCP, voice (numpy and the speech engines load on first use)
    from engine.budget.layer import BudgetLayer
    from engine.elicitation.desk import ElicitationDesk
    from engine.http.backend import HttpBackend
    from engine.mcp.host import McpHost
    from engine.operator.control import CommandDispatcher
    from engine.recorder.component import Recorder
    from engine.voice.softphone import BackendFactory, Softphone

log = logging.getLogger(__name__)
__all__ = ["TIERS", "CallError", "Engine", "EngineComponent", "TurnHooks"]


class Engine:
    """The engine: its commands, queries and events (see the module and ``engine/__init__.py``)."""

    # ---- the parts' commands, forwarded (each keeps its part's signature and docstring)
    say_now = Forward("steering", Steering.say_now)
    whisper = Forward("steering", Steering.whisper)
    approve_tool = Forward("approvals", ApprovalCommands.approve_tool)
    deny_tool = Forward("approvals", ApprovalCommands.deny_tool)
    pending_approvals = Forward("approvals", ApprovalCommands.pending_approvals)
    attach_approver = Forward("approvals", ApprovalCommands.attach_approver)
    pending_elicitations = Forward("questions", ElicitationCommands.pending_elicitations)
    answer_elicitation = Forward("questions", ElicitationCommands.answer_elicitation)
    attach_elicitation_operator = Forward("questions", ElicitationCommands.attach_elicitation_operator)
    caller_answered = Forward("questions", ElicitationCommands.caller_answered)
    monitor_call = Forward("operator", OperatorDesk.monitor_call)
    transfer_call = Forward("operator", OperatorDesk.transfer_call)
    outbox_messages = Forward("operator", OperatorDesk.outbox_messages)
    retry_email = Forward("operator", OperatorDesk.retry_email)
    drop_email = Forward("operator", OperatorDesk.drop_email)
    drain = Forward("operator", OperatorDesk.drain)
    resume = Forward("operator", OperatorDesk.resume)
    capacity = Forward("operator", OperatorDesk.capacity)
    export_call = Forward("recording", RecordingDesk.export_call)
    recordings = Forward("recording", RecordingDesk.recordings)
    record_audio = Forward("recording", RecordingDesk.record_audio)
    set_tier = Forward("switches", CallSwitches.set_tier)
    set_tool_enabled = Forward("switches", CallSwitches.set_tool_enabled)
    tool_states = Forward("switches", CallSwitches.tool_states)
    restart_server = Forward("servers", ServerDesk.restart_server)
    sign_in_server = Forward("servers", ServerDesk.sign_in_server)
    sign_out_server = Forward("servers", ServerDesk.sign_out_server)
    test_server = Forward("servers", ServerDesk.test_server)
    server_status = Forward("servers", ServerDesk.server_status)
    set_server_enabled = Forward("servers", ServerDesk.set_server_enabled)
    ensure_server_started = Forward("servers", ServerDesk.ensure_server_started)

    #: The longest say-now line or whisper (characters); UIs size their input by it.
    steer_max_chars = Steering.max_chars

    def __init__(
        self,
        settings: Settings,
        *,
        config_path: str | Path | None = None,
        store: SessionStore | None = None,
        extra_tools: list[Tool] | None = None,
        serve_http: bool = False,
    ) -> None:
        self.settings = settings
        #: Whether this engine runs its HTTP server (serve and the console do; tests and one-shot commands don't).
        self.serve_http = serve_http
        self.config_path = Path(config_path) if config_path else None
        self.base_dir = self.config_path.parent if self.config_path else Path.cwd()
        self.redactor = Redactor(secret_values(settings))
        self.bus = EventBus(settings.engine.event_queue_size, redactor=self.redactor)
        self.metrics = Metrics()
        #: The one task group: every background task of the engine is spawned here, named.
        self.tasks = EngineTasks(on_failure=self._task_failed)
        #: What parts get to start background tasks (never the group or the engine).
        self.spawn: Spawn = self.tasks.spawn
        self.tiers = TierControl(self.bus, self.metrics, settings.budget.default_tier)
        self.registry = ToolRegistry()
        self.sessions: SessionStore = store or InMemorySessionStore()
        self.providers: dict[str, Provider] = {}
        self._softphone: Softphone | None = None
        # the budget layer plugs into the three declared seams as they are built
        self._budget = budget_layer(self)
        self.views = ToolViewBuilder(self.registry, tier_filter=self._budget.board)
        self.executor = ToolExecutor(
            self.registry, self.bus, self.metrics, lambda: self.settings, self.redactor, hooks=self._budget
        )
        self.timing_book = TurnTimingBook(self.bus, self._budget.tier_budget_ms)  # turn.timings: the waterfall
        self.turn_hooks: list[TurnHooks] = [self._budget, self.timing_book]
        #: Who may start a call now (engine.max_calls, drain): asked by start_call and by telephony.
        self.admission = Admission(lambda: self.settings.engine.max_calls, lambda: len(self.sessions.all()))
        self.calls = CallManager(
            settings=lambda: self.settings,
            providers=lambda: self.providers,
            sessions=self.sessions,
            bus=self.bus,
            metrics=self.metrics,
            executor=self.executor,
            views=self.views,
            turn_hooks=self.turn_hooks,
            spawn=self.spawn,
            admission=self.admission,
        )
        self.started = False
        self.ready = False
        self.not_ready_reason = "starting"
        #: Live phone calls, for the transfer tools (telephony registers each call it carries).
        self.lines = PhoneLines()
        #: E-mail: the outbox worker and the desk of request_transcript / send_email_summary (engine.email).
        self.email = email_service(self)
        self.calls.end_hooks.append(self.email.call_ended)
        for t in builtin_tools(
            settings,
            self.lines,
            lambda: self.settings.tools.extensions,
            mail=self.email,
            email=lambda: self.settings.tools.email,
        ):
            self.registry.register(t)
        for t in extra_tools or []:
            self.registry.register(t)
        self._build_providers(settings)
        self.steering = Steering(self.calls, self.bus, self.metrics)
        self.approvals = ApprovalCommands(self.executor.approvals)
        self.switches = CallSwitches(self.calls, self.tiers, self._budget, self.registry, self.bus)
        parts = default_components(
            self, self._budget, self.email, softphone_call=lambda: self._softphone.call_id if self._softphone else None
        )
        self.components: list[EngineComponent] = parts.components
        #: The named parts: the MCP host (supervisors, status, restart/test/enable), the flight recorder, the
        #: elicitation desk, and the doors the facade forwards to.
        self.mcp: McpHost = parts.mcp
        self.recorder: Recorder = parts.recorder
        self.elicitations: ElicitationDesk = parts.elicitations
        self.voice_parts = parts.voice  # what voice calls use of the engine: hand it to ``voice_call``, never self
        self._call_carriers = parts.call_carriers
        self.questions = ElicitationCommands(parts.elicitations)
        self.operator: OperatorDesk = parts.operator
        self.recording = parts.recording
        self.servers: ServerDesk = parts.servers
        #: The remote operator commands' dispatcher, and what the HTTP API is handed (``build_app`` takes it).
        self.control: CommandDispatcher = parts.control
        self.http_backend: Callable[[], HttpBackend] = parts.http_backend
        self.api_url: Callable[[], str | None] = parts.api_url  # where the HTTP API listens, None if not served

    # ------------------------------------------------------------------------------------------------ lifecycle

    def _build_providers(self, settings: Settings) -> None:
        self.providers = {
            name: create_provider(name, cfg, base_dir=self.base_dir) for name, cfg in settings.providers.items()
        }
        bind_pipelines(self.providers)

    def _task_failed(self, name: str, exc: BaseException) -> None:
        """A background task failed: the engine stays up and says so on the bus."""
        self.bus.publish(EngineError(message=valid_text(f"background task {name} failed: {type(exc).__name__}: {exc}")))

    async def run_probe(self, exposed_name: str, args: Mapping[str, Any]) -> ToolResult:
        """One calibration probe through the execution path (``is_probe``; only that tool is allowed)."""
        return await self.executor.execute(None, exposed_name, args, is_probe=True, allowed=frozenset({exposed_name}))

    async def start(self) -> None:
        """Open the task group and start every component in order (returns once MCP servers settled)."""
        self.tasks.open()
        try:
            for c in self.components:
                await c.start()
        except BaseException:
            await self.stop()  # what did start is stopped, and no task of this engine is left running
            raise
        self.started = True
        self.ready = True
        self.not_ready_reason = ""

    async def stop(self) -> None:
        self.ready = False
        self.not_ready_reason = "stopping"
        if self._softphone is not None:
            await self._softphone.end("engine stopping")  # releases the sound devices first
        for carrier in self._call_carriers:  # phone callers hear a farewell while their sessions still run
            try:
                await carrier.end_calls()
            except Exception as e:  # stopping must go on
                log.warning("ending the calls of %s failed: %s", carrier.name, e)
        await self.calls.end_all("engine stopping")
        for c in reversed(self.components):
            try:
                await c.stop()
            except Exception as e:  # stopping must reach every component
                log.warning("stopping %s failed: %s", c.name, e)
        for p in self.providers.values():
            await p.aclose()
        await self.tasks.close()  # whatever a component left running is cancelled and awaited
        self.started = False

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def reload(self, settings: Settings) -> None:
        """Apply a new config: components diff their sections; providers and contexts take effect next turn.

        Publishes ``config.reloaded`` (MCP servers added, removed and changed; ``error`` when a part refused it,
        and then the error is raised too).
        """
        old = self.settings
        before, after = old.mcp.servers, settings.mcp.servers
        added = tuple(sorted(set(after) - set(before)))
        removed = tuple(sorted(set(before) - set(after)))
        changed = tuple(sorted(s for s in set(after) & set(before) if before[s] != after[s]))
        try:
            self._build_providers(settings)
            self.settings = settings
            self.redactor.update(secret_values(settings))
            for c in self.components:
                await c.reload(old, settings)
        except Exception as e:
            self.bus.publish(
                ConfigReloaded(added=added, removed=removed, changed=changed, error=f"{type(e).__name__}: {e}"[:500])
            )
            raise
        self.bus.publish(ConfigReloaded(added=added, removed=removed, changed=changed))

    # ------------------------------------------------------------------------------------------------ calls

    async def start_call(self, context: str, **kw: Any) -> CallSession:
        """Start a call of ``context`` (provider, caller_name, caller_number, direction, deliver …); the greeting
        is said before this returns. ``CallError`` for an unknown context or provider."""
        return await self.calls.start_call(context, **kw)

    async def user_said(self, call_id: str, text: str) -> TurnReply:
        """One caller turn: the text goes through the call's provider (and tools); returns the reply."""
        return await self.calls.user_said(call_id, text)

    async def end_call(self, call_id: str, reason: str = "ended by operator") -> None:
        """End a live call (a no-op for an ended or unknown one)."""
        await self.calls.end_call(call_id, reason)

    def live_calls(self) -> list[CallSession]:
        """The live calls' sessions (engine internals: UIs use ``calls_info``)."""
        return self.sessions.all()

    def calls_info(self) -> list[CallInfo]:
        """A snapshot of every live call (id, context, provider, caller, state, tier and why, turn)."""
        return [CallInfo.of(s) for s in self.sessions.all()]

    def call_info(self, call_id: str) -> CallInfo | None:
        """A snapshot of one live call, or None when there is no such live call."""
        s = self.sessions.get(call_id)
        return CallInfo.of(s) if s is not None else None

    def tool_view(self, session: CallSession) -> ToolView:
        return self.calls.view_for(session)

    def context_view(self, context: str, tier: str | None = None) -> ToolView:
        ctx = self.settings.contexts.get(context)
        if ctx is None:
            raise CallError(f"unknown context {context!r}")
        return self.views.view(ctx.tools, tier or ctx.tier.default, None, 0, context)

    async def execute_tool(
        self,
        session: CallSession | None,
        exposed_name: str,
        args: str | Mapping[str, Any] | None,
        *,
        tool_call_id: str = "",
    ) -> ToolResult:
        """The one execution path (see engine.tools.execution)."""
        return await self.executor.execute(session, exposed_name, args, tool_call_id=tool_call_id)

    # ------------------------------------------------------------------------------------------------ operator

    @property
    def default_tier(self) -> str:
        """The operator's global default tier ("auto": each context's own default)."""
        return self.tiers.default_tier

    @property
    def waiting_callers(self) -> int:
        """Callers waiting for an agent (telephony sets it; the selector drops to FAST past a depth)."""
        return self.tiers.waiting_callers

    @waiting_callers.setter
    def waiting_callers(self, n: int) -> None:
        self.tiers.waiting_callers = n

    async def set_provider(self, call_id: str, provider_name: str) -> None:
        """Switch a live call to another provider from its next turn."""
        await self.calls.switch_provider(call_id, provider_name)

    def configure_logging(self, stream: TextIO | None = None) -> None:
        """Install the handlers the running config's ``engine.logging`` asks for (file paths relative to the
        config's folder), every one masking known secrets; ``stream`` adds a console handler (None: none)."""
        from engine.core.logs import configure_logging

        configure_logging(self.settings.engine.logging, self.redactor, stream=stream, base_dir=self.base_dir)

    def known_secrets(self) -> set[str]:
        """The secret values of the running config (for UIs that mask them in what they show)."""
        return secret_values(self.settings)

    # ---- softphone (engine/voice)

    def softphone(self, backend_factory: BackendFactory | None = None) -> Softphone:
        """The engine's local mic/speaker softphone (one voice call at a time), made on first use.

        Commands: ``start(context, input_device, output_device)``, ``end()``, ``mute(bool)``, ``press()`` /
        ``release()``; state and levels come as ``softphone.state`` / ``softphone.level`` events on the bus.
        ``backend_factory`` (WAV files, tests) replaces the sound card when the softphone is made.
        """
        if self._softphone is None:
            from engine.voice.softphone import Softphone

            recorded = self.recording.recorded(backend_factory)
            self._softphone = Softphone(self.voice_parts, spawn=self.spawn, backend_factory=recorded)
        return self._softphone

    @property
    def recordings_dir(self) -> Path:
        """Where this engine's recordings go (``recording.dir``, else the user data folder's ``recordings``)."""
        return self.recording.recordings_dir

    # ---- budget (delegates to the latency budget layer, engine/budget)

    @property
    def budget(self) -> BudgetLayer:
        """The budget layer (tiers, latency book, cache, calibration)."""
        return self._budget

    def tools_report(self, context: str | None, tier: str | None, provider_type: str | None = None) -> dict[str, Any]:
        """Shown tools (tier, p50, p99, badge, health) and hidden ones with the reason, for a context and tier;
        ``tools`` is the declarations array as ``provider_type`` receives it (``ava-engine tools``)."""
        from engine.operator.tools_report import tools_report

        return tools_report(self.settings, self.views, self._budget.board, context, tier, provider_type)

    def leaderboard(self) -> dict[str, list[dict[str, Any]]]:
        """Per tool category, the tools ranked fastest first (rows as in ``tools_report``, plus ``rank``)."""
        from engine.operator.tools_report import leaderboard

        return leaderboard(self.registry, self._budget.board)

    async def calibrate(self, server_id: str, probes: int | None = None) -> dict[str, Any]:
        """Probe a server's idempotent tools now (``ava-engine mcp calibrate``); returns the report."""
        return await self.budget.calibrate(server_id, probes)

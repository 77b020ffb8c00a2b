"""The engine's wiring: which components exist, in start order, and what each one is handed.

Every part gets what it needs — the event bus, the registry, metrics, a settings getter, the engine's ``spawn``
and a narrow protocol for what it calls back — never the ``Engine`` itself: the HTTP API gets an ``HttpBackend``
record and the command dispatcher a ``ControlOps`` record, both made of the parts. The budget layer is built first
because the engine plugs it into its declared seams (the executor's hooks, the view builder's tier filter, a turn
hook) as it builds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from engine.config.models import Settings
from engine.services import Services

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any

    from engine.budget.layer import BudgetLayer
    from engine.budget.tier_control import TierControl
    from engine.calls.capacity import Admission
    from engine.calls.manager import CallManager, TurnHooks
    from engine.calls.turn_timing import TurnTimingBook
    from engine.core.metrics import Metrics
    from engine.core.tasks import EngineTasks, Spawn
    from engine.elicitation.desk import ElicitationDesk
    from engine.email.component import EmailService
    from engine.events import Event, EventBus
    from engine.http.backend import HttpBackend
    from engine.http.server import HttpServer
    from engine.mcp.host import McpHost
    from engine.operator.approvals import ApprovalCommands
    from engine.operator.call_switches import CallSwitches
    from engine.operator.control import CommandDispatcher
    from engine.operator.desk import OperatorDesk
    from engine.operator.servers import ServerDesk
    from engine.operator.steering import Steering
    from engine.providers.base import Provider
    from engine.realtime.voice_host import VoiceParts
    from engine.recorder.component import Recorder
    from engine.recorder.desk import RecordingDesk
    from engine.redaction.redactor import Redactor
    from engine.sessions.store import SessionStore
    from engine.store.component import StoreComponent
    from engine.telephony.component import Telephony
    from engine.tools.base import ToolResult
    from engine.tools.builtin.transfer import PhoneLines
    from engine.tools.execution import ToolExecutor
    from engine.tools.registry import ToolRegistry


class EngineComponent(Protocol):
    """A part of the engine with its own lifecycle (MCP host, HTTP server, budget …)."""

    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def reload(self, old: Settings, new: Settings) -> None: ...


if TYPE_CHECKING:

    class Wired(Protocol):
        """What the wiring reads of the engine it wires (``Engine`` is one): its core parts and its lifecycle state."""

        serve_http: bool
        base_dir: Path
        registry: ToolRegistry
        tiers: TierControl
        admission: Admission
        sessions: SessionStore
        redactor: Redactor
        executor: ToolExecutor
        turn_hooks: list[TurnHooks]
        lines: PhoneLines
        spawn: Spawn
        tasks: EngineTasks
        started: bool
        ready: bool
        not_ready_reason: str
        email: EmailService
        steering: Steering
        approvals: ApprovalCommands
        switches: CallSwitches
        providers: dict[str, Provider]
        timing_book: TurnTimingBook

        @property
        def settings(self) -> Settings: ...

        @property
        def bus(self) -> EventBus: ...

        @property
        def metrics(self) -> Metrics: ...

        @property
        def calls(self) -> CallManager: ...

        async def run_probe(self, exposed_name: str, args: Mapping[str, Any]) -> ToolResult: ...


class CallCarrier(Protocol):
    """A component told first when the engine stops, while the calls still run (phone callers hear a farewell)."""

    name: str

    async def end_calls(self) -> None: ...


@dataclass(frozen=True)
class Parts:
    """What the wiring built: every component in start order, and the ones the engine's facade names."""

    components: list[EngineComponent]
    mcp: McpHost
    recorder: Recorder
    telephony: Telephony
    store: StoreComponent
    elicitations: ElicitationDesk
    recording: RecordingDesk
    #: What voice calls, the softphone and telephony use of the engine, made of parts (never the Engine).
    voice: VoiceParts
    #: In start order; ``Engine.stop`` asks each to end its calls before the call manager ends the rest.
    call_carriers: Sequence[CallCarrier]
    operator: OperatorDesk
    servers: ServerDesk
    #: The one dispatcher of remote operator commands, for both transports (the Redis stream, the HTTP API).
    control: CommandDispatcher
    #: What the HTTP API is handed (the served one's, else made on call: aiohttp loads only for an engine serving).
    http_backend: Callable[[], HttpBackend]
    #: Where the HTTP API listens once started; None when the engine does not serve it.
    api_url: Callable[[], str | None]


def services_of(engine: Wired) -> Services:
    """What every ``Component`` is handed: the engine's settings (a getter, so a reload reaches it), bus, metrics
    and ``spawn``."""
    return Services(lambda: engine.settings, engine.bus, engine.metrics, engine.spawn)


def email_service(engine: Wired) -> EmailService:
    """E-mail (the outbox's worker, the desk of the e-mail tools), before the built-in tools that use it; it
    stores the summary from the call-end hook the engine adds for it."""
    from engine.email.component import EmailService

    return EmailService(services_of(engine), engine.base_dir)


def budget_layer(engine: Wired) -> BudgetLayer:
    """The latency budget layer (tiers, latency book, cache, selector), before the executor and view builder."""
    from engine.budget.layer import BudgetLayer

    return BudgetLayer(services_of(engine), registry=engine.registry, tiers=engine.tiers, probe=engine.run_probe)


def heartbeat_facts(engine: Wired) -> dict[str, object]:
    """What an engine's heartbeat tells about it (in Redis, and on the HTTP event stream): version, contexts,
    capacity (live calls, max_calls, draining), the live calls' ids and its transfer destinations."""
    from engine.core.version import __version__

    return {
        "version": __version__,
        "contexts": sorted(engine.settings.contexts),
        "capacity": engine.admission.status().to_dict(),
        "calls": [s.call_id for s in engine.sessions.all()],
        # an attached console's transfer dialog lists them (tools.extensions: names, what is dialled, what for)
        "transfer_destinations": [
            {"name": name, "destination": t.destination, "description": t.description}
            for name, t in engine.settings.tools.extensions.items()
        ],
    }


def live_call_events(engine: Wired) -> list[Event]:
    """Each live call's ``call.started`` as it stands now (its start time, current tier), redacted like the bus's:
    a reader that starts listening mid-call learns the calls that began before it."""
    from engine.events import CallStarted

    return [
        engine.redactor.event(
            CallStarted(
                ts=s.started_at,
                call_id=s.call_id,
                context=s.context,
                provider=s.provider,
                caller_name=s.caller_name,
                caller_number=s.caller_number,
                direction=s.direction,
                tier=s.tier,
            )
        )
        for s in engine.sessions.all()
    ]


def store(engine: Wired) -> StoreComponent:
    """The state-and-events store (engine.store: memory or Redis): the heartbeat, every event, live call state."""
    from engine.store.component import LiveCall, StoreComponent

    def facts() -> dict[str, object]:
        return heartbeat_facts(engine)

    def live_calls() -> list[LiveCall]:
        return [LiveCall(s.call_id, s.provider, s.shown_tools, s.turn) for s in engine.sessions.all()]

    return StoreComponent(services_of(engine), facts, live_calls)


def engine_id(engine: Wired) -> str:
    """This engine's id (``engine.id``, or host name and process id): in the store, the heartbeat, errors."""
    from engine.store.component import default_engine_id

    return engine.settings.engine.id or default_engine_id()


def voice_parts(engine: Wired, recording: RecordingDesk, desk: ElicitationDesk) -> VoiceParts:
    """The host of voice calls (the softphone's, telephony's, ``ava-engine call --audio-in``'s): the call manager,
    the bus, the turn timing book, the elicitation desk's ear and the recorder's audio tap."""
    from engine.realtime.voice_host import VoiceParts

    return VoiceParts(
        settings=lambda: engine.settings,
        providers=lambda: engine.providers,  # a reload rebuilds them
        calls=engine.calls,
        bus=engine.bus,
        timing_book=engine.timing_book,
        hear=desk.hear,
        record_audio=recording.record_audio,
    )


def default_components(
    engine: Wired,
    budget: BudgetLayer,
    email: EmailService | None = None,
    *,
    softphone_call: Callable[[], str | None],
) -> Parts:
    from engine.mcp.host import McpHost  # MCP servers: supervisors, discovery, calls
    from engine.mcp.host_services import HostServices
    from engine.mcp_endpoint.on_demand import EndpointSlot  # serves exposed tools to other agents

    engine.calls.end_hooks.append(engine.executor.approvals.call_ended)  # a call's pending approvals end with it
    components: list[EngineComponent] = []
    http: HttpServer | None = None  # the HTTP doors are built last (they serve the desks) and start first
    shared = store(engine)
    components.append(shared)  # before the parts whose events it shares (MCP servers' states …)
    control_at = len(components)  # operator commands over Redis, next: built below with the desks they reach
    components.append(budget)
    engine.calls.end_hooks.append(budget.call_ended)  # a call that ends mid-turn leaves no turn state behind
    from engine.store.shared_book import SharedBook  # the environment's measured latencies, before MCP servers

    book = SharedBook(lambda: engine.settings, budget, engine.spawn, lambda: engine_id(engine))
    components.append(book)
    from engine.telemetry import Telemetry  # OpenTelemetry traces from the bus's events (engine.telemetry, OTEL_*)

    def tool_class(name: str) -> str | None:
        status = budget.status(name)
        return status.tier if status is not None else None

    telemetry = Telemetry(lambda: engine.settings, engine.bus, engine.spawn, tool_class)
    components.append(telemetry)
    from engine.recorder.component import Recorder  # the flight recorder: every call's events (and audio)

    recorder = Recorder(
        services_of(engine),
        engine.redactor,
        engine.base_dir,
        trace_id=telemetry.trace_id,  # the call's trace id in its recording's header
    )
    components.append(recorder)
    from engine.elicitation.desk import ElicitationDesk  # tools' mid-call questions (contexts.*.elicitation)
    from engine.operator.elicitation import CallVoice

    desk = ElicitationDesk(
        engine.bus,
        engine.metrics,
        lambda: engine.settings,
        engine.redactor,
        CallVoice(engine.calls, engine.bus),
        mail=email,  # a link a tool asks the caller to open is e-mailed (contexts.*.elicitation.url: email)
    )
    engine.calls.end_hooks.append(desk.call_ended)

    services = HostServices(
        registry=engine.registry,
        bus=engine.bus,
        metrics=engine.metrics,
        base_dir=engine.base_dir,
        redact=engine.redactor,
        remember_secrets=engine.redactor.update,
        on_up=budget.on_server_up,
        spawn=engine.spawn,
        elicit=desk.elicit,
    )
    host = McpHost(services, lambda: engine.settings, engine.spawn)
    components.append(host)

    async def restart_http() -> None:
        if http is not None and http.port is not None:
            await http.stop()
            await http.start()

    endpoint = EndpointSlot(  # the engine's own /mcp (engine.mcp_server)
        services_of(engine),
        registry=engine.registry,
        runner=engine.executor,
        restart_http=restart_http,
        upstream=host,
    )
    components.append(endpoint)
    services.on_notification = endpoint.on_upstream  # servers' logs and updates reach its clients
    from engine.recorder.desk import RecordingDesk  # the recorder's doors: the voice calls' audio tap
    from engine.telephony.component import Telephony  # Asterisk calls (ARI), when asterisk.enabled

    recording = RecordingDesk(recorder, softphone_call)
    voice = voice_parts(engine, recording, desk)
    telephony = Telephony(services_of(engine), voice, engine.lines, admit=engine.admission.reserve)
    components.append(telephony)
    if email is not None:
        components.append(email)
    from engine.operator.control import CommandDispatcher, ControlOps
    from engine.operator.desk import OperatorDesk
    from engine.operator.servers import ServerDesk
    from engine.store.control_component import ControlComponent

    operator = OperatorDesk(
        settings=lambda: engine.settings,
        lines=engine.lines,
        phone=telephony,
        outbox=lambda: engine.email.outbox,
        admission=engine.admission,
        store_status=shared.status,
        say_now=engine.steering.say_now,
    )
    servers = ServerDesk(host, engine.redactor)
    ops = ControlOps.of(
        engine.sessions, engine.calls, engine.switches, engine.steering, engine.approvals, operator, servers
    )
    control = CommandDispatcher(ops, lambda: engine_id(engine), engine.redactor)
    attach_approver = engine.executor.approvals.attach
    commands = ControlComponent(
        services_of(engine), lambda: engine_id(engine), control.run, attach_approver=attach_approver
    )
    components.insert(control_at, commands)
    sections = [(c.name, c.status) for c in (shared, commands, book)]  # /health's sections, in start order
    routes = [endpoint.install_routes]

    def backend() -> HttpBackend:
        """What the HTTP API is handed (made on call: aiohttp loads only for an engine that serves HTTP)."""
        from engine.http.backend import HealthSection, HttpBackend, Lifecycle

        return HttpBackend(
            read_settings=lambda: engine.settings,
            lifecycle=lambda: Lifecycle(engine.started, engine.ready, engine.not_ready_reason),
            metrics=engine.metrics,
            pending_servers=host.pending,
            server_status=servers.server_status,
            test_server=servers.test_server,
            task_health=engine.tasks.health,
            health=tuple(HealthSection(name, read) for name, read in sections),
            routes=tuple(routes),
        )

    if engine.serve_http and engine.settings.engine.http.enabled:
        from engine.http.approvals import HttpApprovals  # the approval queue over HTTP (engine.approvals.http)
        from engine.http.capacity import HttpCapacity  # /capacity, /drain, /resume and /health's capacity
        from engine.http.remote import HttpRemote  # /events (WebSocket), /engine, /control: --attach http://
        from engine.http.server import HttpServer  # /health /ready /metrics /mcp/status /mcp/test (aiohttp: 0.2 s)

        approvals = HttpApprovals(engine.executor.approvals, lambda: engine.settings)
        capacity = HttpCapacity(operator)
        remote = HttpRemote(
            services_of(engine),
            lambda: heartbeat_facts(engine),
            engine.redactor.value,
            lambda: engine_id(engine),
            control.run,
            snapshot=lambda: live_call_events(engine),
            attach_approver=attach_approver,
        )
        sections.insert(0, (capacity.name, capacity.health))
        routes[:0] = [approvals.install_routes, capacity.install_routes, remote.install_routes]
        http = HttpServer(backend())
        components[0:0] = [http, approvals, remote]  # first up, so /ready answers 503 while MCP servers start
    built = (components, host, recorder, telephony, shared, desk, recording, voice, (telemetry, telephony))
    served = (lambda: http.backend, lambda: http.url) if http is not None else (backend, lambda: None)
    return Parts(*built, operator, servers, control, *served)

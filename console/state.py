"""What the console knows, built from engine events: calls, transcripts, tool invocations, servers, the log.

The app feeds each batch of events from the pump into ``ConsoleState.apply`` and gets back a ``Changes`` record
naming exactly what moved, so screens update only those rows instead of rebuilding tables. Pure data: no Textual,
no I/O, so it is unit-tested directly and stays cheap under thousands of events. The event classes are imported
where events are read (the first batch comes from the engine, long after the console's first frame), not with the
module: ``engine.events`` defines some forty dataclasses, a good part of the console's import time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from console.replay import is_replayed
from console.state_rows import CallRow, Changes, Invocation, LogLine, ServerRow
from engine import percentile

if TYPE_CHECKING:
    from engine.events import (
        CallEnded,
        CallStarted,
        CallUsage,
        ConfigReloaded,
        ElicitationResolved,
        ElicitationWaiting,
        Event,
        ServerStateChanged,
        SteeringInjected,
        TierChanged,
        ToolCompleted,
        ToolProgressed,
        ToolRejected,
        ToolRequested,
        ToolsChanged,
        TranscriptAdded,
        UsageUpdated,
    )

MAX_INVOCATIONS = 5000
MAX_LOG = 2000
MAX_TRANSCRIPT = 500
MAX_ENDED_KEPT = 50
LATENCY_WINDOW = 100
#: A replayed call's state while its recording plays (``console.replay``): a history row, never a live call.
REPLAYING = "replaying"
#: The transcript's role for an operator's steering (``steering.injected``): shown apart from what was said.
STEER_ROLES = {"say": "say-now", "whisper": "whisper"}


class ConsoleState:
    def __init__(self) -> None:
        self.calls: dict[str, CallRow] = {}
        self.ended: dict[str, CallRow] = {}
        self.transcripts: dict[str, deque[tuple[float, str, str]]] = {}
        #: Each call's tier changes (ts, old, new, reason), for the history of an ended call.
        self.tier_history: dict[str, list[tuple[float, str, str, str]]] = {}
        self.invocations: deque[Invocation] = deque(maxlen=MAX_INVOCATIONS)
        self._open: dict[tuple[str, str], Invocation] = {}
        self.servers: dict[str, ServerRow] = {}
        self.log: deque[LogLine] = deque(maxlen=MAX_LOG)
        #: Recent latencies per MCP server (ms), for p50/p99 and the sparkline.
        self.server_latency: dict[str, deque[float]] = {}
        self.default_tier: str = "auto"
        #: Per call, the operator's tool switches as ``tools.changed`` reported them (name → on), and the tools it
        #: used (name → server): what an attached console (no ``tool_states`` of a remote engine) knows of them.
        self.tool_switches: dict[str, dict[str, bool]] = {}
        self.tools_used: dict[str, dict[str, str]] = {}
        self.events_seen = 0
        self.dropped = 0
        self._seq = 0

    # ------------------------------------------------------------------------------------------ queries

    def call_or_ended(self, call_id: str) -> CallRow | None:
        return self.calls.get(call_id) or self.ended.get(call_id)

    def invocations_for(self, call_id: str) -> list[Invocation]:
        return [i for i in self.invocations if i.call_id == call_id]

    def percentile(self, server: str, q: float) -> float | None:
        """The server's recent latency at quantile ``q`` (the engine's one definition), None without samples."""
        values = sorted(self.server_latency.get(server, ()))
        return percentile(values, q) if values else None

    def transcript(self, call_id: str) -> list[tuple[float, str, str]]:
        return list(self.transcripts.get(call_id, ()))

    # ------------------------------------------------------------------------------------------ updates

    def apply(self, events: Iterable[Event]) -> Changes:
        from engine.events import describe_event  # the log's sentences: one wording for the console and the CLI

        ch = Changes()
        for ev in events:
            self.events_seen += 1
            self._apply_one(ev, ch)
            call_id = getattr(ev, "call_id", None)
            line = LogLine(ev.ts, ev.type, call_id if isinstance(call_id, str) else None, describe_event(ev))
            self.log.append(line)
            ch.log.append(line)
        if len(ch.log) > MAX_LOG:
            ch.log = ch.log[-MAX_LOG:]
        return ch

    def _apply_one(self, ev: Event, ch: Changes) -> None:
        handle = _handler(type(ev))
        if handle is not None:
            handle(self, ev, ch)
        elif ev.type.startswith(("call.transfer_", "call.monitor_")):  # the Line column shows them
            call_id = getattr(ev, "call_id", None)
            if call_id in self.calls:
                if ev.type == "call.monitor_changed":
                    mode = str(getattr(ev, "mode", "off"))
                    self.calls[call_id].operator = "" if mode == "off" else mode
                self._changed(call_id, ch)

    def _call_started(self, ev: CallStarted, ch: Changes) -> None:
        started = CallRow(
            ev.call_id,
            ev.context,
            ev.provider,
            ev.caller_name or ev.caller_number or "-",
            ev.tier,
            started_at=ev.ts,
        )
        if is_replayed(ev.call_id):  # history from its first event: never a live call (rows, counts, keys)
            started.state = REPLAYING
            self.ended.pop(ev.call_id, None)  # replayed again: the newest history row
            self.ended[ev.call_id] = started
            ch.calls_removed.append(ev.call_id)
        else:
            self.calls[ev.call_id] = started
            ch.calls_added.append(ev.call_id)

    def _call_ended(self, ev: CallEnded, ch: Changes) -> None:
        row = self.calls.pop(ev.call_id, None) or self._replaying(ev.call_id, pop=True)
        if row is None:
            return
        row.state, row.ended_at, row.end_reason = "ended", ev.ts, ev.reason
        self.ended[ev.call_id] = row
        while len(self.ended) > MAX_ENDED_KEPT:
            self._forget(next(iter(self.ended)), ch)
        if ev.call_id in ch.calls_added:
            ch.calls_added.remove(ev.call_id)
        if ev.call_id not in ch.calls_removed:  # ended (within this batch too): a history row
            ch.calls_removed.append(ev.call_id)
        ch.calls_changed.discard(ev.call_id)

    def _transcript_added(self, ev: TranscriptAdded | SteeringInjected, ch: Changes) -> None:
        """What was said, or the operator's line or whisper, in the transcript where it happened."""
        from engine.events import TranscriptAdded

        role = ev.role if isinstance(ev, TranscriptAdded) else STEER_ROLES.get(ev.kind, "operator")
        buf = self.transcripts.setdefault(ev.call_id, deque(maxlen=MAX_TRANSCRIPT))
        buf.append((ev.ts, role, ev.text))
        ch.transcripts.add(ev.call_id)

    def _tier_changed(self, ev: TierChanged, ch: Changes) -> None:
        if ev.call_id is None:
            self.default_tier = ev.new
            ch.default_tier = ev.new
            return
        if (row := self.calls.get(ev.call_id) or self._replaying(ev.call_id)) is not None:
            row.tier, row.tier_reason = ev.new, ev.reason
            self._changed(ev.call_id, ch)
            self.tier_history.setdefault(ev.call_id, []).append((ev.ts, ev.old, ev.new, ev.reason))
        ch.tools_changed.add(ev.call_id)

    def _tools_changed(self, ev: ToolsChanged, ch: Changes) -> None:
        if ev.call_id is None:
            ch.tools_changed.update(self.calls)
            return
        switches = self.tool_switches.setdefault(ev.call_id, {})
        switches.update({n: True for n in ev.added} | {n: False for n in ev.removed})
        ch.tools_changed.add(ev.call_id)
        if (row := self.calls.get(ev.call_id) or self._replaying(ev.call_id)) is not None:
            row.tools_note = "now" if ev.apply == "now" else "next turn"
            self._changed(ev.call_id, ch)

    def _tool_requested(self, ev: ToolRequested, ch: Changes) -> None:
        self._seq += 1
        inv = Invocation(
            self._seq,
            ev.ts,
            ev.call_id,
            ev.tool_call_id,
            ev.exposed_name,
            ev.server,
            ev.tool,
            arguments=dict(ev.arguments),
            is_probe=ev.is_probe,
        )
        self._open[(ev.call_id, ev.tool_call_id)] = inv
        self.tools_used.setdefault(ev.call_id, {})[ev.exposed_name] = ev.server
        self.invocations.append(inv)
        ch.invocations_added.append(inv)

    def _tool_running(self, ev: ToolProgressed | ElicitationWaiting | ElicitationResolved, ch: Changes) -> None:
        """A running tool's progress, or whom its question waits for."""
        from engine.events import ElicitationWaiting, ToolProgressed

        if (running := self._open.get((ev.call_id, ev.tool_call_id))) is None:
            return
        if isinstance(ev, ToolProgressed):
            running.progress, running.progress_total = ev.progress, ev.total
        else:
            running.waiting = ev.who if isinstance(ev, ElicitationWaiting) else None
        if running not in ch.invocations_added and running not in ch.invocations_changed:
            ch.invocations_changed.append(running)

    def _server_state(self, ev: ServerStateChanged, ch: Changes) -> None:
        self.servers[ev.server] = ServerRow(
            ev.server, ev.state, ev.restarts, ev.last_error, ev.ts, ev.transport, ev.protocol_version
        )
        ch.servers.add(ev.server)

    def _config_reloaded(self, ev: ConfigReloaded, ch: Changes) -> None:
        ch.config_reloaded = True

    def _usage(self, ev: UsageUpdated | CallUsage, ch: Changes) -> None:
        """The Cost column and the call's total."""
        from engine.events import UsageUpdated

        if (row := self.call_or_ended(ev.call_id)) is not None:
            row.cost = (ev.total_cost if isinstance(ev, UsageUpdated) else ev.cost) if ev.priced else None
            self._changed(ev.call_id, ch)

    def lose_engine(self, engine_id: str, reason: str, now: float) -> Changes:
        """An attached engine is gone (``--attach``): its live calls become history rows in state "lost", its tool
        calls still running end "lost". Calls are keyed ``engine/call`` there (``console.attach``)."""
        ch = Changes()
        prefix = f"{engine_id}/"
        for call_id in [c for c in self.calls if c.startswith(prefix)]:
            row = self.calls.pop(call_id)
            row.state, row.ended_at, row.end_reason = "lost", now, f"engine {engine_id} {reason}"
            self.ended[call_id] = row
            ch.calls_removed.append(call_id)
        for key in [k for k in self._open if k[0].startswith(prefix)]:
            inv = self._open.pop(key)
            inv.status, inv.message = "lost", f"engine {engine_id} {reason}"
            ch.invocations_changed.append(inv)
        while len(self.ended) > MAX_ENDED_KEPT:
            self._forget(next(iter(self.ended)), ch)
        if ch.calls_removed:
            line = LogLine(now, "engine.lost", None, f"engine {engine_id} {reason}: {len(ch.calls_removed)} calls lost")
            self.log.append(line)
            ch.log.append(line)
        return ch

    def _replaying(self, call_id: str, *, pop: bool = False) -> CallRow | None:
        """The history row of a call being replayed beside live ones (``console.replay``), None for any other."""
        row = self.ended.get(call_id)
        if row is None or row.state != REPLAYING:
            return None
        return self.ended.pop(call_id) if pop else row

    def _forget(self, call_id: str, ch: Changes) -> None:
        """An ended call drops out of the history (past ``MAX_ENDED_KEPT``)."""
        self.ended.pop(call_id, None)
        for per_call in (self.transcripts, self.tier_history, self.tool_switches, self.tools_used):
            per_call.pop(call_id, None)
        ch.calls_forgotten.append(call_id)

    def _changed(self, call_id: str, ch: Changes) -> None:
        if call_id in self.ended:  # a replayed call's history row
            if call_id not in ch.calls_removed:
                ch.calls_removed.append(call_id)
        elif call_id not in ch.calls_added:
            ch.calls_changed.add(call_id)

    def _complete(self, ev: ToolCompleted | ToolRejected, ch: Changes) -> None:
        from engine.events import ToolCompleted

        inv = self._open.pop((ev.call_id, ev.tool_call_id), None)
        fresh = inv is None
        if inv is None:
            self._seq += 1
            server = ev.server if isinstance(ev, ToolCompleted) else ""
            tool = ev.tool if isinstance(ev, ToolCompleted) else ev.exposed_name
            inv = Invocation(self._seq, ev.ts, ev.call_id, ev.tool_call_id, ev.exposed_name, server, tool)
            self.invocations.append(inv)
        if isinstance(ev, ToolCompleted):
            inv.status, inv.latency_ms, inv.cache_hit = ev.status, ev.latency_ms, ev.cache_hit
            inv.message, inv.data = ev.message, ev.data
            if ev.server and ev.server != "builtin" and not ev.cache_hit:
                self.server_latency.setdefault(ev.server, deque(maxlen=LATENCY_WINDOW)).append(ev.latency_ms)
                ch.servers.add(ev.server)
        else:
            inv.status, inv.message = "rejected", ev.reason
        if fresh:
            ch.invocations_added.append(inv)
        elif inv not in ch.invocations_added:
            ch.invocations_changed.append(inv)


_Handler = Callable[[ConsoleState, Any, Changes], None]


_BY_CLASS: dict[type, _Handler | None] = {}


def _handler(kind: type) -> _Handler | None:
    """The state's handler for an event class (or the class it builds), None for one that changes no table."""
    if kind not in _BY_CLASS:
        table = _handlers()
        _BY_CLASS[kind] = next((table[cls] for cls in kind.__mro__ if cls in table), None)
    return _BY_CLASS[kind]


@cache
def _handlers() -> dict[type, _Handler]:
    from engine.events import (
        CallEnded,
        CallStarted,
        CallUsage,
        ConfigReloaded,
        ElicitationResolved,
        ElicitationWaiting,
        ServerStateChanged,
        SteeringInjected,
        TierChanged,
        ToolCompleted,
        ToolProgressed,
        ToolRejected,
        ToolRequested,
        ToolsChanged,
        TranscriptAdded,
        UsageUpdated,
    )

    s = ConsoleState
    return {
        CallStarted: s._call_started,
        CallEnded: s._call_ended,
        TranscriptAdded: s._transcript_added,
        SteeringInjected: s._transcript_added,
        TierChanged: s._tier_changed,
        ToolsChanged: s._tools_changed,
        ToolRequested: s._tool_requested,
        ToolCompleted: s._complete,
        ToolRejected: s._complete,
        ToolProgressed: s._tool_running,
        ElicitationWaiting: s._tool_running,
        ElicitationResolved: s._tool_running,
        ServerStateChanged: s._server_state,
        ConfigReloaded: s._config_reloaded,
        UsageUpdated: s._usage,
        CallUsage: s._usage,
    }

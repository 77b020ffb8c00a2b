"""The tracing component: collects the bus's events and hands them to the exporter thread in batches.

Why a component with only the bus: it starts and stops with the engine (stop ends the calls' spans still open
and waits for the exporter, so ``ava-engine call`` exits with its trace sent) and follows a reload of
``engine.telemetry``. On the loop it does as little as it can: the bus's tap keeps a tuple of a few fields of each
tool call and turn as it is published (``records.recorder``: not the event, which would live until the handoff and
reach the GC's old generations), and a timer hands what gathered to the exporter every ``HANDOFF_S`` (no task wakes
per event). Off, it subscribes to nothing — the publishers on the tool path build no event for it — and never
imports OpenTelemetry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.telemetry.setup import CallTraceIds, TraceSetup, span_outputs, trace_setup

if TYPE_CHECKING:
    from engine.config.models import Settings
    from engine.core.tasks import Spawn
    from engine.events.bus import EventBus, Subscription
    from engine.telemetry.export import SpanExport

log = logging.getLogger(__name__)

#: How long stop waits for the exporter to send what is left.
FLUSH_TIMEOUT_S = 10.0
#: How often the gathered events go to the exporter thread.
HANDOFF_S = 0.2
#: Records the tap holds between handoffs (a full queue drops its oldest; that is logged).
QUEUE_SIZE = 1 << 16


class Telemetry:
    name = "telemetry"

    def __init__(
        self,
        settings: Callable[[], Settings],
        bus: EventBus,
        spawn: Spawn,
        tool_class: Callable[[str], str | None] = lambda name: None,
    ) -> None:
        self._settings = settings
        self.bus = bus
        self._spawn = spawn  # the component's signature (default_components); it needs no task of its own
        #: A tool's latency class (fast, standard, deep) by exposed name, for its span: asked when the tool's first
        #: span is built and again at each handoff, the last one known kept (a tool may be gone by then).
        self._tool_class = tool_class
        self._classes: dict[str, str | None] = {}
        self.ids = CallTraceIds()
        self.setup: TraceSetup | None = None
        self.export: SpanExport | None = None
        self._sub: Subscription | None = None
        self._records: deque[Any] = deque(maxlen=QUEUE_SIZE)
        self._timer: asyncio.TimerHandle | None = None

    @property
    def active(self) -> bool:
        return self.export is not None

    def trace_id(self, call_id: str) -> str | None:
        """The call's trace id as 32 hex digits while tracing is on (the recording's header keeps it), else None.
        Safe from any thread."""
        return self.ids.hex(call_id) if self.export is not None else None

    async def start(self) -> None:
        setup = trace_setup(self._settings().engine.telemetry)
        if setup is None:
            return
        outputs, sampled = span_outputs(setup)
        from engine.telemetry.export import Limits, SpanExport
        from engine.telemetry.records import recorder
        from engine.telemetry.spans import EVENT_TYPES, SpanBuilder

        limits = Limits.from_env()
        self.setup = setup
        self.export = SpanExport(outputs, limits, lambda: SpanBuilder(self.ids.of, sampled, self._class))
        self._records.clear()
        self._sub = self.bus.tap(recorder(self._records.append), set(EVENT_TYPES))
        self._timer = asyncio.get_running_loop().call_later(HANDOFF_S, self._handoff)

    def _class(self, name: str) -> str | None:
        classes = self._classes
        if name in classes:
            return classes[name]
        cls = classes[name] = self._tool_class(name)
        return cls

    def _handoff(self) -> None:
        self._hand_over()
        if self.export is not None:
            self.export.tick()
        self._timer = asyncio.get_running_loop().call_later(HANDOFF_S, self._handoff)

    def _hand_over(self) -> None:
        records, export = self._records, self.export
        if export is None or not records:
            return
        if len(records) == QUEUE_SIZE:
            log.warning("telemetry: more than %d events between handoffs: the oldest were lost", QUEUE_SIZE)
        classes, moved = self._classes, False
        for name, known in classes.items():  # the tools spans were made for: their classes move with their latency
            if (cls := self._tool_class(name)) is not None and cls != known:
                classes[name], moved = cls, True
        if moved:
            export.builder.tool_classes_changed()
        export.take(records)
        records.clear()

    async def end_calls(self) -> None:
        """The engine is stopping: what gathered is handed over while its tools are still registered (their class)."""
        self._hand_over()

    async def flush(self, timeout_s: float = FLUSH_TIMEOUT_S) -> bool:
        """Hands over what gathered and waits until its spans are sent (False: not within the timeout)."""
        self._hand_over()
        export = self.export
        return True if export is None else await asyncio.to_thread(export.flush().wait, timeout_s)

    async def stop(self) -> None:
        self._hand_over()  # the calls ended while stopping
        timer, sub, export = self._timer, self._sub, self.export
        self._timer = self._sub = self.export = None
        self.setup = None
        if timer is not None:
            timer.cancel()
        if sub is not None:
            sub.close()
        if export is None:
            return
        export.end_all(time.time())  # then sent with the rest, from the thread: the loop stays free meanwhile
        if not await asyncio.to_thread(export.stop, FLUSH_TIMEOUT_S):  # the loop stays free meanwhile
            log.warning("telemetry: the spans were not all exported within %.0f s", FLUSH_TIMEOUT_S)

    async def reload(self, old: Settings, new: Settings) -> None:
        if old.engine.telemetry != new.engine.telemetry:
            await self.stop()
            await self.start()

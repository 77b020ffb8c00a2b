"""The tracing component: reads the bus, hands the events to the span builder, flushes the spans at stop.

Why a component with only the bus: it starts and stops with the engine (stop ends the calls' spans still open
and waits for the exporter, so ``ava-engine call`` exits with its trace sent) and follows a reload of
``engine.telemetry``. Off, it subscribes to nothing — the publishers on the tool path build no event for it — and
never imports OpenTelemetry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from engine.events import Event
from engine.telemetry.setup import CallTraceIds, TraceSetup, trace_setup, tracer_provider

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from engine.config.models import Settings
    from engine.event_bus import EventBus, Subscription
    from engine.tasks import Spawn
    from engine.telemetry.spans import SpanBuilder

log = logging.getLogger(__name__)

#: How long stop waits for the exporter to send what is left.
FLUSH_TIMEOUT_S = 10.0


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
        self._spawn = spawn
        #: A tool's latency class (fast, standard, deep) by exposed name, for its span.
        self._tool_class = tool_class
        self.ids = CallTraceIds()
        self.setup: TraceSetup | None = None
        self.provider: TracerProvider | None = None
        self.builder: SpanBuilder | None = None
        self._sub: Subscription | None = None
        self._task: asyncio.Task[Any] | None = None
        #: The span builder runs on one thread of its own: the loop only hands it each batch of events.
        self._thread: ThreadPoolExecutor | None = None

    @property
    def active(self) -> bool:
        return self.builder is not None

    def trace_id(self, call_id: str) -> str | None:
        """The call's trace id as 32 hex digits while tracing is on (the recording's header keeps it), else None.
        Safe from any thread."""
        return self.ids.hex(call_id) if self.builder is not None else None

    async def start(self) -> None:
        setup = trace_setup(self._settings().engine.telemetry)
        if setup is None:
            return
        next_trace_id = [0]
        provider = tracer_provider(setup, next_trace_id)
        from engine.telemetry.spans import EVENT_TYPES, SpanBuilder

        self.setup, self.provider = setup, provider
        self.builder = SpanBuilder(provider.get_tracer("ava-engine"), self.ids.of, next_trace_id, self._tool_class)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="telemetry")
        self._sub = self.bus.subscribe(types=set(EVENT_TYPES))
        self._task = self._spawn(self._pump(self._sub, self.builder, self._thread), name="telemetry:spans")

    async def _pump(self, sub: Subscription, builder: SpanBuilder, thread: ThreadPoolExecutor) -> None:
        while True:
            try:
                first = await sub.get()
            except StopAsyncIteration:
                return
            thread.submit(_handle, builder, [first, *sub.drain()])

    async def stop(self) -> None:
        task, sub, builder, provider, thread = self._task, self._sub, self.builder, self.provider, self._thread
        self._task = self._sub = self.builder = self.provider = self._thread = None
        self.setup = None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if sub is not None:
            sub.close()
        if builder is not None and thread is not None:
            thread.submit(_handle, builder, sub.drain() if sub is not None else [])  # the calls ended while stopping
            thread.submit(builder.end_all, time.time())
        if thread is not None:
            await asyncio.to_thread(thread.shutdown, wait=True)
        if provider is not None:  # the exporter posts from this thread: the loop stays free meanwhile
            flushed = await asyncio.to_thread(provider.force_flush, int(FLUSH_TIMEOUT_S * 1000))
            if not flushed:
                log.warning("telemetry: the spans were not all exported within %.0f s", FLUSH_TIMEOUT_S)
            await asyncio.to_thread(provider.shutdown)

    async def reload(self, old: Settings, new: Settings) -> None:
        if old.engine.telemetry != new.engine.telemetry:
            await self.stop()
            await self.start()


def _handle(builder: SpanBuilder, events: Sequence[Event]) -> None:
    for ev in events:
        try:
            builder.handle(ev)
        except Exception as e:  # one odd event never stops the traces of the others
            log.warning("telemetry: no span for a %s event (%s: %s)", ev.type, type(e).__name__, e)

"""The exporter thread: turns the bus's batches of events into spans and sends them as the SDK's batch processor does.

Why a thread of its own with its own batching: the loop only hands over a list of events now and then, and
everything after that (building the spans, encoding, the HTTP round trip, retries) runs here. The limits are the
SDK's ``BatchSpanProcessor``'s, read from the same variables with the same defaults: a batch leaves every
``OTEL_BSP_SCHEDULE_DELAY`` ms or as soon as ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` spans wait; beyond
``OTEL_BSP_MAX_QUEUE_SIZE`` waiting spans, new ones are dropped (counted, and logged at the next export).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.config.errors import ConfigError
from engine.events import Event
from engine.telemetry.otlp import SpanData
from engine.telemetry.spans import SpanBuilder

log = logging.getLogger(__name__)


class Output(Protocol):
    """Where batches of spans go (OTLP/HTTP, the console): ``encode`` on the loop, ``send`` on the sender thread."""

    def encode(self, spans: Sequence[SpanData]) -> Any: ...

    def send(self, payload: Any) -> bool: ...

    def shutdown(self) -> None: ...


@dataclass(frozen=True)
class Limits:
    """The batch processor's limits (the SDK's defaults)."""

    schedule_delay_s: float = 5.0
    max_queue_size: int = 2048
    max_export_batch_size: int = 512
    export_timeout_s: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        """As the SDK reads them: a value that is not a whole number is logged and the default used; a value
        below 1, or a batch larger than the queue, is a ``ConfigError`` naming the variable."""
        env = os.environ if env is None else env
        d = cls()

        def read(name: str, default: int) -> int:
            raw = env.get(name, "").strip()
            if not raw:
                return default
            try:
                value = int(raw)
            except ValueError:
                log.warning("telemetry: %s=%r is not a whole number; using %d", name, raw, default)
                return default
            if value < 1:
                raise ConfigError.single("engine.telemetry", f"{name}={raw!r} must be at least 1")
            return value

        delay = read("OTEL_BSP_SCHEDULE_DELAY", int(d.schedule_delay_s * 1000))
        queue_size = read("OTEL_BSP_MAX_QUEUE_SIZE", d.max_queue_size)
        batch = read("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", d.max_export_batch_size)
        timeout = read("OTEL_BSP_EXPORT_TIMEOUT", int(d.export_timeout_s * 1000))
        if batch > queue_size:
            raise ConfigError.single(
                "engine.telemetry",
                f"OTEL_BSP_MAX_EXPORT_BATCH_SIZE={batch} is larger than OTEL_BSP_MAX_QUEUE_SIZE={queue_size}",
            )
        return cls(delay / 1000, queue_size, batch, timeout / 1000)


class SpanExport:
    """Spans built and encoded where ``take`` is called (the loop, in batches), sent from a thread of its own.

    Why not build on that thread too: a thread busy with Python contends with the loop for the GIL, and every
    loop iteration then hands the GIL over and back (measured: that cost more CPU than the spans themselves).
    ``take`` a batch of events, ``tick`` now and then (a batch leaves on its schedule), ``end_all`` at stop;
    ``flush`` (blocking) waits until everything taken so far is sent; ``stop`` sends what is left."""

    def __init__(
        self,
        outputs: Sequence[Output],
        limits: Limits,
        builder: Callable[[Callable[[SpanData], None]], SpanBuilder],
    ) -> None:
        self.outputs = tuple(outputs)
        self.limits = limits
        self._pending: list[SpanData] = []
        #: The builder appends straight to the waiting spans (no call of ours per span); ``_admit`` then holds
        #: them to the queue's limit.
        self.builder = builder(self._pending.append)
        self.dropped = 0
        #: Spans handed to the sender thread, and those it has sent (each written by one side only): what is
        #: between the two counts against the queue's limit too, as in the SDK's processor.
        self._queued = 0
        self._sent = 0
        self._deadline = 0.0
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="telemetry", daemon=True)
        self._thread.start()

    def take(self, events: Sequence[Event]) -> None:
        handle, waiting = self.builder.handle, len(self._pending)
        for ev in events:
            try:
                handle(ev)
            except Exception as e:  # one odd event never stops the traces of the others
                log.warning("telemetry: no span for a %s event (%s: %s)", ev.type, type(e).__name__, e)
        self._admit(waiting)
        self._export(everything=False)

    def tick(self) -> None:
        if self._pending and time.monotonic() >= self._deadline:
            self._export(everything=True)

    def end_all(self, at: float) -> None:
        waiting = len(self._pending)
        self.builder.end_all(at)
        self._admit(waiting)

    def flush(self) -> threading.Event:
        """Sends what is waiting; the returned event is set once the sender thread has sent it all."""
        self._export(everything=True)
        done = threading.Event()
        self._queue.put(done)
        return done

    def stop(self, timeout_s: float) -> bool:
        """Blocks: sends what is left, ends the thread and the outputs; False if that took longer than the timeout."""
        self._export(everything=True)
        self._queue.put(None)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            return False
        for out in self.outputs:
            out.shutdown()
        return True

    def _admit(self, waiting: int) -> None:
        """The spans built since ``waiting`` were waiting: those beyond the queue's limit are dropped (the newest,
        as the SDK's processor drops what comes to a full queue); a batch's schedule starts with its first span."""
        pending, limits = self._pending, self.limits
        room = limits.max_queue_size - (self._queued - self._sent)
        if len(pending) > room:
            over = len(pending) - max(room, waiting)
            del pending[len(pending) - over :]
            self.dropped += over
        if not waiting and pending:
            self._deadline = time.monotonic() + limits.schedule_delay_s

    def _export(self, *, everything: bool) -> None:
        batch, pending = self.limits.max_export_batch_size, self._pending
        while pending and (everything or len(pending) >= batch):
            chunk = pending[:batch]
            del pending[:batch]
            self._queued += len(chunk)
            for out in self.outputs:
                try:
                    self._queue.put((out, len(chunk), out.encode(chunk)))
                except Exception as e:
                    log.warning("telemetry: %d spans not encoded (%s: %s)", len(chunk), type(e).__name__, e)
        if pending:
            self._deadline = time.monotonic() + self.limits.schedule_delay_s
        if self.dropped:
            log.warning("telemetry: %d spans dropped (more than OTEL_BSP_MAX_QUEUE_SIZE waiting)", self.dropped)
            self.dropped = 0

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            out, n, payload = item
            try:
                sent = out.send(payload)
            except Exception as e:
                log.warning("telemetry: %d spans not exported (%s: %s)", n, type(e).__name__, e)
            else:
                if not sent:
                    log.warning("telemetry: the collector did not take %d spans", n)
            if out is self.outputs[0]:  # each batch goes to every output: counted once
                self._sent += n

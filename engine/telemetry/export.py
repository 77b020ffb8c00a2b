"""The exporter: the tap's records become spans at each handoff, and batches of them are sent from a thread of its own.

Why batching of its own: the loop hands over what the tap recorded now and then; the spans are built and encoded
then, a few at a time (``SpanExport``), and only the HTTP round trip and its retries run on the sender thread. The
limits are the SDK's ``BatchSpanProcessor``'s, read from the same variables (larger default sizes: see ``Limits``): a
batch leaves every ``OTEL_BSP_SCHEDULE_DELAY`` ms or as soon as ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` spans wait; beyond
``OTEL_BSP_MAX_QUEUE_SIZE`` waiting spans, new ones are dropped (counted, and logged at the next export)."""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol

from engine.config.errors import ConfigError
from engine.telemetry.spans import SpanBuilder

log = logging.getLogger(__name__)

#: Records built into spans at a time (a few spans each): well below the GC's young generation threshold.
_CHUNK = 64


class Output(Protocol):
    """Where batches of spans go (OTLP/HTTP, the console). ``add`` (on the loop, as spans are built) keeps the spans
    as the builder wrote them, two protobuf pieces each (``engine.telemetry.otlp``: the spans waiting for their batch
    hold nothing the GC tracks); ``batch`` takes the first ``n`` kept as one payload; ``send`` (on the sender
    thread) sends it."""

    def add(self, pieces: Sequence[bytes]) -> None: ...

    def batch(self, n: int) -> Any: ...

    def send(self, payload: Any) -> bool: ...

    def shutdown(self) -> None: ...


@dataclass(frozen=True)
class Limits:
    """The batch processor's limits. The defaults are the SDK's but for the sizes: a POST through the exporter's
    client costs about 1 ms of CPU whatever it carries, which the SDK's 512-span batches spread at ~2 µs a span (more
    than building and encoding the span); 4096 make it ~0.25 µs. What waits is encoded spans (~150 bytes each), so the
    larger queue holds a few MB at most."""

    schedule_delay_s: float = 5.0
    max_queue_size: int = 16384
    max_export_batch_size: int = 4096
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
        builder: Callable[[], SpanBuilder],
    ) -> None:
        self.outputs = tuple(outputs)
        self.limits = limits
        #: The builder appends each span's two pieces to its ``out``; ``_admit`` then holds the new spans to the
        #: queue's limit and hands them to the outputs.
        self.builder = builder()
        self._built = self.builder.out
        self.dropped = 0
        #: Spans the outputs keep that are in no batch yet.
        self._waiting = 0
        #: Spans handed to the sender thread, and those it has sent (each written by one side only): what is
        #: between the two counts against the queue's limit too, as in the SDK's processor.
        self._queued = 0
        self._sent = 0
        self._deadline = 0.0
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="telemetry", daemon=True)
        self._thread.start()

    def take(self, records: Iterable[Any]) -> None:
        """What the tap recorded since the last time (``engine.telemetry.records.recorder``), in order. A few records
        at a time, each chunk's spans encoded before the next is built: a whole handoff's spans alive at once would
        outlive young collections and be promoted, and then full collections run."""
        it, take, admit, export = iter(records), self.builder.take, self._admit, self._export
        while chunk := list(islice(it, _CHUNK)):
            take(chunk)
            admit()
            export(everything=False)  # a full batch leaves now: what waits stays within the queue's limit

    def tick(self) -> None:
        if self._waiting and time.monotonic() >= self._deadline:
            self._export(everything=True)

    def end_all(self, at: float) -> None:
        self.builder.end_all(at)
        self._admit()

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

    def _admit(self) -> None:
        """The spans built since the last time: those beyond the queue's limit are dropped (the newest, as the SDK's
        processor drops what comes to a full queue), the others go to the outputs; a batch's schedule starts with its
        first span."""
        built, limits = self._built, self.limits
        if not built:
            return
        room = limits.max_queue_size - (self._waiting + self._queued - self._sent)
        if (n := len(built) // 2) > room:
            keep = max(room, 0)
            del built[2 * keep :]
            self.dropped += n - keep
            n = keep
        if built:
            if not self._waiting:
                self._deadline = time.monotonic() + limits.schedule_delay_s
            for out in self.outputs:
                try:
                    out.add(built)
                except Exception as e:
                    log.warning("telemetry: %d spans not encoded (%s: %s)", n, type(e).__name__, e)
            self._waiting += n
            built.clear()

    def _export(self, *, everything: bool) -> None:
        batch = self.limits.max_export_batch_size
        while self._waiting and (everything or self._waiting >= batch):
            n = min(batch, self._waiting)
            self._waiting -= n
            self._queued += n
            for out in self.outputs:
                try:
                    self._queue.put((out, n, out.batch(n)))
                except Exception as e:
                    log.warning("telemetry: %d spans not encoded (%s: %s)", n, type(e).__name__, e)
        if self._waiting:
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

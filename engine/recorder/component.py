"""The recorder as an engine component: subscribes to the bus, feeds the writer, enforces retention.

Why a component: it starts and stops with the engine (retention at start, then every ``retention_interval_s``),
follows a reload of the ``recording:`` section (switched on or off, another folder) and gets only what it needs —
its ``Services`` (a settings getter, the bus, metrics, ``spawn``), the redactor and the config's folder, never
the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config.models.recording import RecordingConfig
from engine.events.bus import SkippedEvents
from engine.recorder.codec import Recording, read_recording
from engine.recorder.export import render
from engine.recorder.files import enforce_retention, find_recording, recordings_dir
from engine.recorder.writer import SKIPPED_TYPES, RecordingWriter
from engine.services import Component, Services, restart_if_changed

if TYPE_CHECKING:
    from engine.config.models import Settings
    from engine.events.bus import Subscription
    from engine.redaction.redactor import Redactor

log = logging.getLogger(__name__)

#: How long the pump gathers events before handing a batch to the writer (fewer wake-ups under load).
BATCH_S = 0.2


class RecorderOff(RuntimeError):
    """Recording is switched off, or there is no recording of the call asked for (the message says which)."""


class Recorder(Component):
    name = "recorder"

    def __init__(
        self,
        services: Services,
        redactor: Redactor,
        base_dir: Path,
        trace_id: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__(services)
        #: A call's trace id while tracing is on (``Telemetry.trace_id``), written into its recording's header.
        self._trace_id = trace_id
        self.redactor = redactor
        self.base_dir = base_dir
        self.writer: RecordingWriter | None = None
        self._sub: Subscription | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    @property
    def config(self) -> RecordingConfig:
        return self._settings().recording

    @property
    def directory(self) -> Path:
        return recordings_dir(self.config.dir, self.base_dir)

    @property
    def active(self) -> bool:
        return self.writer is not None

    # ------------------------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        cfg = self.config
        if not cfg.enabled:
            return
        directory = self.directory
        await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
        await self.enforce_retention()
        from importlib.metadata import PackageNotFoundError, version

        try:
            __version__ = version("ava-console")
        except PackageNotFoundError:
            __version__ = ""
        self.writer = RecordingWriter(
            directory,
            self.redactor,
            queue_size=cfg.queue_size,
            audio=cfg.audio,
            version=__version__,
            skipped=SkippedEvents("recorder", self.metrics.count_skipped),
            trace_id=self._trace_id,
        )
        self.writer.start()
        from engine.recorder.codec import event_classes

        self._sub = self.bus.subscribe(maxsize=cfg.queue_size, types=set(event_classes()) - SKIPPED_TYPES)
        self._tasks = [
            self._spawn(self._pump(self._sub, self.writer), name="recorder:events"),
            self._spawn(self._retention_loop(cfg.retention_interval_s), name="recorder:retention"),
        ]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks = []
        writer, sub = self.writer, self._sub
        self.writer, self._sub = None, None
        if sub is not None:
            sub.close()
            if writer is not None:
                rest = sub.drain()  # the calls the engine ended while stopping
                if rest:
                    writer.offer_events(rest)
        if writer is not None:
            await asyncio.to_thread(writer.close)
            if writer.dropped:
                log.warning("recorder dropped %d items (queue full)", writer.dropped)

    async def reload(self, old: Settings, new: Settings) -> None:
        await restart_if_changed(self, old, new, lambda s: s.recording)

    async def _pump(self, sub: Subscription, writer: RecordingWriter) -> None:
        while True:
            try:
                first = await sub.get()
            except StopAsyncIteration:
                return
            writer.offer_events([first, *sub.drain()])
            await asyncio.sleep(BATCH_S)

    async def _retention_loop(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await self.enforce_retention()

    async def enforce_retention(self) -> list[Path]:
        """Apply ``max_age_days`` and ``max_total_mb`` now (live calls' recordings are kept)."""
        cfg = self.config
        keep = self.writer.live_paths if self.writer is not None else frozenset()
        try:
            removed = await asyncio.to_thread(
                enforce_retention, self.directory, cfg.max_age_days, cfg.max_total_mb, keep=keep
            )
        except OSError as e:  # a folder we may not write: recording itself will say so too
            log.warning("recording retention in %s failed: %s", self.directory, e)
            return []
        if removed:
            log.info("recording retention removed %d recording(s) from %s", len(removed), self.directory)
        return removed

    # ------------------------------------------------------------------------------------------- queries

    def audio_sink(self) -> Callable[[str, str, Any, int], None] | None:
        """Where a voice call's audio goes (``offer_audio``), or None when audio is not recorded."""
        w = self.writer
        return w.offer_audio if w is not None and w.audio else None

    async def sync(self) -> bool:
        """Hand the writer every event published so far and wait until it is on disk (False: not recording)."""
        writer, sub = self.writer, self._sub
        if writer is None:
            return False
        if sub is not None:
            rest = sub.drain()
            if rest:
                writer.offer_events(rest)
        return await asyncio.to_thread(writer.flush)

    async def recording_of(self, call_id: str) -> Recording:
        """The recording of ``call_id`` (this run's, else the newest on disk), everything published so far written."""
        writer = self.writer
        path: Path | None = None
        if writer is not None:
            await self.sync()
            path = writer.paths.get(call_id)
        path = path or await asyncio.to_thread(find_recording, self.directory, call_id)
        if path is None:
            off = "" if self.config.enabled else " (recording.enabled is false)"
            raise RecorderOff(f"no recording of call {call_id!r} in {self.directory}{off}")
        return await asyncio.to_thread(read_recording, path)

    async def export(self, call_id: str, fmt: str = "md") -> tuple[Path, str]:
        """The recording's path and its export as ``md`` or ``json``."""
        rec = await self.recording_of(call_id)
        return rec.path, render(rec, fmt)

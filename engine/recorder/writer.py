"""The recorder's writer thread: events to per-call JSON-lines files, audio to per-call WAV files.

Why a thread with a bounded queue: the event loop only hands over references (events are frozen, audio samples
read-only arrays); serialising, masking secrets and writing happen here, so a slow disk never delays a call.
When the queue is full the newest item is dropped and counted (``dropped``), never waited for.

The MCP servers' states go into every live call's file (the ones known when it starts, re-dated to its start, then
each change): a replayed call shows the Servers screen as it was, with no engine to ask.

Crash safety: every line is written whole and the files are flushed after each batch, so a killed engine leaves
JSON lines a reader can use (at worst the last line is torn; ``codec.read_recording`` skips it). Secrets: every line
goes through the engine's redactor on its way to disk, whatever the bus already masked.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from engine.bounds.json_text import require_valid
from engine.events import Event
from engine.events.bus import SkippedEvents
from engine.events.catalog import json_default
from engine.recorder.codec import header_line
from engine.recorder.files import audio_path, open_new_events

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

#: Event types not worth keeping: the softphone's input meter (ten a second, shown live only).
SKIPPED_TYPES = frozenset({"softphone.level"})
#: A gap in one side's audio longer than this is filled with silence, so both WAV files keep the call's timeline.
GAP_S = 0.06
#: Written lines reach the file (the OS) at most this long after they were handed over: a killed engine loses at
#: most this much, and a busy engine makes one write per file per interval instead of one per event batch.
FLUSH_S = 0.25


@dataclass
class _Track:
    wav: wave.Wave_write
    rate: int
    written: int = 0  # samples


@dataclass
class _Call:
    path: Path
    file: IO[str]
    #: Monotonic time of the call's first audio: both tracks are laid out against it.
    t0: float | None = None
    tracks: dict[str, _Track] | None = None


#: Per event class: its fields' names (``dataclasses.fields`` per event would cost more than the rest of a line).
_NAMES: dict[type, tuple[str, ...]] = {}


def _json(ev: Event) -> str:
    """``ev.to_json()``, faster: the same keys in the same order."""
    cls = type(ev)
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(ev))
    d: dict[str, Any] = {"type": ev.type}
    for n in names:
        d[n] = getattr(ev, n)
    return _encode(d)


_encode = json.JSONEncoder(default=json_default, ensure_ascii=False).encode


class RecordingWriter:
    """Owns the files; ``offer_*`` from the event loop (never blocks), ``flush``/``close`` from anywhere."""

    def __init__(
        self,
        directory: Path,
        redact: Callable[[str], str],
        *,
        queue_size: int,
        audio: bool,
        version: str = "",
        skipped: SkippedEvents | None = None,
        trace_id: Callable[[str], str | None] | None = None,
    ) -> None:
        self.directory = directory
        #: The call's trace id for the header (None: not traced); called from this writer's thread.
        self.trace_id = trace_id
        self.redact = redact
        #: Events that could not be written (not valid text): counted and skipped, the rest of the batch goes on.
        self.skipped = skipped or SkippedEvents("recorder")
        self.audio = audio
        self.version = version
        self._q: queue.Queue[tuple[Any, ...] | None] = queue.Queue(maxsize=queue_size)
        self._calls: dict[str, _Call] = {}
        #: Calls with lines not yet flushed to their file.
        self._dirty: set[str] = set()
        #: Recordings of live calls (read from other threads: retention keeps them).
        self.live_paths: frozenset[Path] = frozenset()
        #: Each recorded call's events file, by call id (the newest per id), for export.
        self.paths: dict[str, Path] = {}
        #: Each MCP server's latest ``server.state`` event (written at the start of every new recording).
        self._servers: dict[str, Event] = {}
        self.dropped = 0
        self.written_lines = 0
        self.errors = 0
        self._thread = threading.Thread(target=self._run, name="recorder-writer", daemon=True)

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    # ---------------------------------------------------------------------------------------- from the loop

    def _offer(self, item: tuple[Any, ...]) -> None:
        try:
            self._q.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    def offer_events(self, events: Sequence[Event]) -> None:
        self._offer(("events", events))

    def offer_audio(self, call_id: str, role: str, samples: np.ndarray, rate: int) -> None:
        """A piece of one side's audio (``caller`` or ``agent``), PCM16 mono at ``rate``, as it happened now."""
        if self.audio:
            self._offer(("audio", call_id, role, samples, rate, time.monotonic()))

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything offered so far is on disk (False on timeout or when the thread is gone)."""
        if not self._thread.is_alive():
            return False
        done = threading.Event()
        try:
            self._q.put(("flush", done), timeout=timeout)
        except queue.Full:
            return False
        return done.wait(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, close every file (a call still live stays readable, without its end) and stop."""
        if self._thread.is_alive():
            try:
                self._q.put(None, timeout=timeout)
            except queue.Full:
                log.warning("recorder queue still full at close: %d items are not written", self._q.qsize())
            self._thread.join(timeout)

    # ---------------------------------------------------------------------------------------- the thread

    def _run(self) -> None:
        last_flush = time.monotonic()
        while True:
            try:
                item = self._q.get(timeout=FLUSH_S)
            except queue.Empty:
                item = ("tick",)
            if item is None:
                break
            try:
                self._handle(item)
                if self._dirty and time.monotonic() - last_flush >= FLUSH_S:
                    self._flush_dirty()
                    last_flush = time.monotonic()
            except Exception as e:  # a full disk, a bad path: say so, keep recording the other calls
                self.errors += 1
                log.warning("recorder: %s: %s", type(e).__name__, e)
        for call_id in list(self._calls):
            self._finish(call_id)

    def _handle(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "events":
            for ev in item[1]:
                try:
                    self._event(ev, self._dirty)
                except (TypeError, ValueError, RecursionError) as e:  # this event only: the batch goes on
                    self.skipped.skip(ev, e)
        elif kind == "audio":
            self._audio(*item[1:])
        elif kind == "flush":
            self._flush_dirty()
            item[1].set()

    def _flush_dirty(self) -> None:
        for call_id in self._dirty:
            c = self._calls.get(call_id)
            if c is not None:
                c.file.flush()
        self._dirty.clear()

    def _line(self, ev: Event) -> str:
        """The event's redacted JSON line (``InvalidText``, ``TypeError``, ``ValueError`` when it has none)."""
        return require_valid(self.redact(_json(ev))) + "\n"

    def _event(self, ev: Event, touched: set[str]) -> None:
        if ev.type == "server.state":
            line = self._line(ev)
            self._servers[str(getattr(ev, "server", ""))] = ev
            for live_id, live in self._calls.items():
                live.file.write(line)
                touched.add(live_id)
            return
        call_id = getattr(ev, "call_id", None)
        if not call_id or not isinstance(call_id, str) or ev.type in SKIPPED_TYPES:
            return
        c = self._calls.get(call_id)
        if c is None and ev.type != "call.started":
            return  # a call that began before the recorder: not recorded
        line = self._line(ev)  # before anything is written: an event that cannot be leaves no trace
        if c is None:
            path, f = open_new_events(self.directory, call_id, ev.ts)
            trace_id = self.trace_id(call_id) if self.trace_id is not None else None
            f.write(self.redact(header_line(call_id, ev.ts, self.version, trace_id)) + "\n")
            for known in self._servers.values():  # as they stood when the call began
                f.write(self._line(dataclasses.replace(known, ts=ev.ts)))
            c = self._calls[call_id] = _Call(path, f)
            self.paths[call_id] = path
            self.live_paths = self.live_paths | {path}
        c.file.write(line)
        self.written_lines += 1
        touched.add(call_id)
        if ev.type == "call.ended":
            self._finish(call_id)
            touched.discard(call_id)

    def _finish(self, call_id: str) -> None:
        self._dirty.discard(call_id)
        c = self._calls.pop(call_id)
        c.file.close()
        for t in (c.tracks or {}).values():
            t.wav.close()
        self.live_paths = self.live_paths - {c.path}

    def _audio(self, call_id: str, role: str, samples: np.ndarray, rate: int, at: float) -> None:
        import numpy as np  # only calls with audio need it (0.1 s to import for every text call and CLI command)

        c = self._calls.get(call_id)
        if c is None:
            return  # before the call.started event was written, or after the call ended
        if c.tracks is None:
            c.tracks, c.t0 = {}, at
        track = c.tracks.get(role)
        if track is None:
            w = wave.open(str(audio_path(c.path, role)), "wb")
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(rate)
            track = c.tracks[role] = _Track(w, rate)
        if rate != track.rate:  # a piece at another rate: linear resampling is good enough for a recording
            n = max(1, round(len(samples) * track.rate / rate))
            samples = np.interp(np.linspace(0, len(samples) - 1, n), np.arange(len(samples)), samples).astype("<i2")
        start = (at - (c.t0 or at)) - len(samples) / track.rate  # when this piece began, on the call's timeline
        gap = int((start - track.written / track.rate) * track.rate)
        if gap > GAP_S * track.rate:
            track.wav.writeframes(bytes(2 * gap))
            track.written += gap
        track.wav.writeframes(np.asarray(samples, dtype="<i2").tobytes())
        track.written += len(samples)

"""Plays a realtime session's assistant audio through an audio backend, and knows how much of it was heard.

Why it exists: a speech-to-speech provider streams its answer as pieces of audio in its own format while the
caller may talk over it at any moment. The driver needs three things the TTS ``Speaker`` does not do: decode and
resample the provider's stream to the backend's rate (``AudioConverter``, stateful across pieces) — when a piece
is taken to play, joined with the pieces of the same utterance queued behind it, so a provider that sends faster
than real time in small pieces pays the resampler's per-call cost once per burst, not once per piece —,
play one utterance (provider item) per ``backend.play`` so chunks flow without gaps, and on barge-in drop
everything queued, stop the backend within one chunk and say exactly how many milliseconds of the cut item
reached the caller (the provider truncates its transcript to that). Audio of a cut item that still arrives
afterwards is dropped. On file runs the ``Pacer`` keeps the output on the input's timeline.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from engine.realtime.audio import AudioConverter
from engine.realtime.session import PCMU_8K, AudioSpec
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.pacing import Pacer

#: An utterance whose next piece has not come for this long is closed (the provider went quiet mid-answer).
IDLE_END_S = 2.0


@dataclass
class PlayedItem:
    """One stretch of assistant audio that went to the backend (an utterance, or part of one)."""

    item_id: str | None
    samples: int = 0  # samples written to the backend so far
    start_sample: int | None = None  # output position of the first sample (file backends)
    first_audio: float | None = None  # time.perf_counter() of the first chunk
    interrupted: bool = False


class _End:
    """Queue marker: the response is over (close the utterance and flush the resampler's tail)."""


_END = _End()
_Piece = tuple[str | None, bytes]


class Playout:
    def __init__(self, backend: AudioBackend, pacer: Pacer, source: AudioSpec, *, idle_end_s: float = IDLE_END_S):
        self.backend = backend
        self.pacer = pacer
        self.rate = backend.sample_rate
        self.idle_end_s = idle_end_s
        # On the phone the audio is made μ-law once per piece (a μ-law provider's stays as it came) and the backend
        # sends the frames' own bytes; a μ-law provider's audio on another 8 kHz backend decodes when played.
        self._ulaw = self.rate == PCMU_8K.rate and (source == PCMU_8K or backend.wire_ulaw)
        self._conv = AudioConverter(source, PCMU_8K if self._ulaw else AudioSpec("pcm16", self.rate))
        self._queue: deque[_Piece | _End] = deque()
        self._arrived = asyncio.Event()
        self._held: _Piece | None = None  # the first piece of the next item
        self._cut: set[str] = set()
        self._stopped = False
        self._idle = asyncio.Event()
        self._idle.set()
        self.current: PlayedItem | None = None
        self.log: list[PlayedItem] = []
        self.on_playing: Callable[[bool], None] | None = None

    # -------------------------------------------------------------------------------------------- feeding

    def feed(self, item_id: str | None, data: bytes) -> None:
        """A piece of assistant audio in the session's output format (dropped when its item was cut); converted
        when it is taken to play (``_take``)."""
        if item_id is not None and item_id in self._cut:
            return
        if data:
            self._put((item_id, data))

    def end_response(self) -> None:
        """The provider's response is done: the utterance closes after its queued audio and the resampler's tail."""
        self._put(_END)

    def _take(self, first: _Piece) -> bytes:
        """``first`` and the pieces of the same item queued right behind it, converted in one go (a burst of
        small pieces costs the resampler one call)."""
        item_id, raw = first
        pieces = [raw]
        while self._queue and not isinstance(self._queue[0], _End) and self._queue[0][0] == item_id:
            pieces.append(self._queue.popleft()[1])  # type: ignore[index]
        return self._conv.convert(pieces[0] if len(pieces) == 1 else b"".join(pieces))

    def _tail(self) -> bytes:
        """What the resampler still holds at the end of an utterance (the converter starts afresh after it)."""
        tail = self._conv.flush()
        self._conv.reset()
        return tail

    def _put(self, piece: _Piece | _End) -> None:
        if not isinstance(piece, _End):
            self._idle.clear()
        self._queue.append(piece)
        self._arrived.set()

    async def _next(self) -> _Piece | _End:
        """The next queued piece, once there is one (the end marker when the playing utterance was cut)."""
        while not self._queue:
            if self._stopped:
                return _END
            self._arrived.clear()
            await self._arrived.wait()
        return self._queue.popleft()

    # -------------------------------------------------------------------------------------------- state

    @property
    def playing(self) -> bool:
        return self.current is not None

    @property
    def pending(self) -> bool:
        """Audio is playing or waiting to play."""
        return self.current is not None or self._held is not None or any(not isinstance(p, _End) for p in self._queue)

    def played_ms(self, item_id: str | None) -> float:
        """How much of ``item_id`` went out, over every stretch it was played in."""
        samples = sum(p.samples for p in self.log if p.item_id == item_id)
        return 1000.0 * samples / self.rate

    async def drained(self) -> None:
        """Wait until nothing is playing or queued."""
        while self.pending:
            self._idle.clear()
            await self._idle.wait()

    # -------------------------------------------------------------------------------------------- barge-in

    def interrupt(self, item_id: str | None = None) -> tuple[str | None, float] | None:
        """Drop queued audio, stop the backend within one chunk; returns (item, ms heard) of the utterance that
        was cut (playing, or first in line), None when nothing was playing or queued. ``item_id``: only when
        the playing utterance is that one (the provider says which of its items it cut)."""
        if item_id is not None and self.current is not None and self.current.item_id != item_id:
            return None
        queued = [p for p in self._queue if not isinstance(p, _End)]
        if self.current is not None:
            cut_id = self.current.item_id
        elif self._held is not None:
            cut_id = self._held[0]
        elif queued:
            cut_id = queued[0][0]
        else:
            return None
        dropped = {cut_id, *(p[0] for p in queued)}
        if self._held is not None:
            dropped.add(self._held[0])
        self._held = None
        self._queue.clear()
        self._cut.update(i for i in dropped if i is not None)
        self._conv.reset()
        if self.current is not None:
            # what the device or network still held when cut was never heard
            unheard = round(self.backend.queued_output_s() * self.rate)
            self.current.samples = max(0, self.current.samples - unheard)
            self.current.interrupted = True
            self._stopped = True
            self._arrived.set()  # wake the utterance waiting for its next piece
            self.backend.stop_playback()
        else:
            self._idle.set()
        self.pacer.changed()
        return cut_id, self.played_ms(cut_id)

    # -------------------------------------------------------------------------------------------- playing

    async def run(self) -> None:
        """Play utterances as they come, one ``backend.play`` each (runs until cancelled)."""
        while True:
            if self._held is not None:
                piece, self._held = self._held, None
            else:
                got = await self._next()
                if isinstance(got, _End):
                    self._set_idle_if_done()
                    continue
                piece = got
            item = PlayedItem(piece[0])
            self.current = item
            self.log.append(item)
            self._stopped = False
            self.pacer.add_playing(1)
            self._notify(True)
            try:
                await self.backend.play(self._frames(item, self._take(piece)))
            finally:
                self.current = None
                self._stopped = False
                self.pacer.add_playing(-1)
                self._notify(False)
                self._set_idle_if_done()

    async def _frames(self, item: PlayedItem, first: bytes) -> AsyncIterator[AudioFrame]:
        """The utterance in whole backend chunks (cut from the bytes directly: this runs 50 times a second per
        call), the last one padded; counts a chunk as heard once the backend has taken it."""
        width, pad = (1, b"\xff") if self._ulaw else (2, b"\x00")  # μ-law's silence is 0xFF
        size = width * round(self.rate * self.backend.frame_ms / 1000)
        buf, final = first, False
        while True:
            if final and buf:
                buf += pad * (-len(buf) % size)
            cut = len(buf) - len(buf) % size
            for at in range(0, cut, size):
                if not await self._ready():
                    return
                self._mark(item)
                chunk, t = buf[at : at + size], item.samples / self.rate  # stamped by position: the chunker keeps it
                yield AudioFrame.from_ulaw(chunk, t) if self._ulaw else AudioFrame.from_pcm(chunk, self.rate, t)
                item.samples += size // width  # resumed: the backend has taken the chunk
                self.pacer.changed()
            buf = buf[cut:]
            if final:
                return
            if self._queue:  # the usual case mid-answer: no timer needed
                nxt = self._queue.popleft()
            else:
                try:
                    async with asyncio.timeout(self.idle_end_s):
                        nxt = await self._next()
                except TimeoutError:
                    nxt = _END
            if isinstance(nxt, _End) or nxt[0] != item.item_id:
                if isinstance(nxt, _End):
                    buf += self._tail()  # the response ended (or went quiet): its last milliseconds
                else:
                    self._held = nxt  # the next utterance follows on the same continuous stream
                final = True
            else:
                buf += self._take(nxt)

    async def _ready(self) -> bool:
        if self._stopped:
            return False
        await self.pacer.before_output(lambda: self._stopped)
        return not self._stopped

    def _mark(self, item: PlayedItem) -> None:
        if item.first_audio is not None:
            return
        item.first_audio = time.perf_counter()
        out = self.pacer.output_samples()
        if out is not None and self.pacer.enabled:
            # the timeline backend pads with silence up to the input position before this chunk
            in_pos = round(getattr(self.backend, "input_position", 0.0) * self.rate)
            item.start_sample = max(out, in_pos)
        else:
            item.start_sample = out

    def _notify(self, playing: bool) -> None:
        if self.on_playing is not None:
            self.on_playing(playing)

    def _set_idle_if_done(self) -> None:
        if not self.pending:
            self._idle.set()

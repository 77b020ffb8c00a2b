"""One virtual clock for as-fast-as-possible file runs, so a WAV call's output lines up with its input.

A ``WavBackend`` read without ``realtime`` delivers input as fast as the loop asks for it, and its timeline
output writes each chunk at the current input position. Left alone, where an answer lands in ``out.wav`` would
depend on how fast the machine decodes and synthesises. ``Pacer`` makes it deterministic:

* while the agent is busy (an utterance is being transcribed or answered) and nothing plays, input waits, so
  thinking takes no time on the file's clock (the answer starts where the utterance ended) — except while a
  tool's question waits for the caller's answer (``listening``): the caller's time passes then;
* while audio plays, input and output move in lockstep, one ``frame_ms`` chunk at a time, output first: a chunk
  may be written only when input has reached the output position, and the next input frame is read only once
  output is ahead of it. Barge-in detected on input frame [t, t+20 ms) therefore stops output at t+20 ms.

For every other backend (devices, null, real-time WAV) the pacer is off and every wait returns at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from engine.voice.backend import AudioBackend
from engine.voice.wav_backend import WavBackend


class Pacer:
    def __init__(self, backend: AudioBackend) -> None:
        self.backend = backend
        self.enabled = (
            isinstance(backend, WavBackend)
            and not backend.realtime
            and backend.input_path is not None
            and backend.output_path is not None
        )
        self.busy = 0  # utterances being transcribed or answered
        self.playing = 0  # playbacks in progress
        self.input_done = False
        #: The engine waits for the caller to answer a tool's question (engine.voice.asking): input runs on.
        self.listening = False
        self._changed = asyncio.Event()

    def output_samples(self) -> int | None:
        """Samples the backend's output holds so far (file backends), else None."""
        written = getattr(self.backend, "samples_written", None)
        return written if isinstance(written, int) else None

    def _input_samples(self) -> int:
        assert isinstance(self.backend, WavBackend)
        return round(self.backend.input_position * self.backend.sample_rate)

    def changed(self) -> None:
        """Something moved (input frame, output chunk, busy or playing): wake the waiters to re-check."""
        self._changed.set()

    async def _wait_for(self, ready: Callable[[], bool]) -> None:
        while not ready():
            self._changed.clear()
            if ready():
                return
            await self._changed.wait()

    def _input_may_advance(self) -> bool:
        if self.playing:
            out = self.output_samples() or 0
            return out > self._input_samples()
        return self.busy == 0 or self.listening

    async def before_input(self) -> None:
        """Wait until the next input frame may be read."""
        if self.enabled:
            await self._wait_for(self._input_may_advance)

    async def before_output(self, stopped: Callable[[], bool]) -> None:
        """Wait until the next output chunk may be written (or playback was stopped, or input ended)."""
        if not self.enabled:
            return
        await self._wait_for(
            lambda: stopped() or self.input_done or self._input_samples() >= (self.output_samples() or 0)
        )

    def add_busy(self, delta: int) -> None:
        self.busy += delta
        self.changed()

    def add_playing(self, delta: int) -> None:
        self.playing += delta
        self.changed()

    def end_of_input(self) -> None:
        self.input_done = True
        self.changed()

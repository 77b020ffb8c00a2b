"""The voice driver: puts a microphone and a speaker around any call (STT → the context's provider → TTS).

``VoiceCall(engine, backend, context).run()`` starts a call with ``deliver=speak`` and then, per utterance the
endpointer (VAD, or push-to-talk) closes: transcribe it (pocketsphinx; with a grammar of the expected phrases when
the provider is scripted, directly or as a ``type: pipeline`` provider's brain; the general model otherwise) and
hand the text to ``engine.user_said``. Every assistant utterance (greeting, replies, the farewell) is spoken by the
call's ``Speaker`` and ``deliver`` returns only once it has played, so the engine ends a hung-up call only after
the farewell was heard. Slow-tool announcements come from the bus (``Announcer``).

Barge-in: while the agent talks, a fast onset detector watches the caller's audio; speech stops the playback
(backend ``stop_playback`` + synthesis aborted) and, if the turn is still thinking (an announcement was playing),
cancels it: that answer is abandoned and the new utterance starts a new turn. An answer already being spoken is
cut off and its turn finishes normally (a cut-off farewell still ends the call).

The call ends when the engine ends it (hangup), when ``stop()`` is called, or when the input ends (a file) and
every utterance has been answered. On file runs the ``Pacer`` keeps output aligned with input.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.events import (
    AnnouncementRequested,
    CallEnded,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationWaiting,
)
from engine.sessions.session import CallError, CallSession
from engine.sessions.steering import is_steering
from engine.usage.report import UsageReport
from engine.voice.announcer import Announcer
from engine.voice.asking import CallerQuestions
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.bargein import SpeechOnset
from engine.voice.call_host import CallState, Deliver, TurnStats, VoiceHost, resolve_voice
from engine.voice.options import VoiceOptions
from engine.voice.pacing import Pacer
from engine.voice.speaker import Playback, Speaker
from engine.voice.speaking import SpeakingTap
from engine.voice.stt import Recognizer
from engine.voice.tts import Synthesizer
from engine.voice.vad import PushToTalkSegmenter, Utterance, VadSegmenter

log = logging.getLogger(__name__)

__all__ = ["CallState", "Deliver", "TurnStats", "VoiceCall", "VoiceHost", "resolve_voice"]


class VoiceCall:
    def __init__(
        self,
        engine: VoiceHost,
        backend: AudioBackend,
        context: str,
        *,
        options: VoiceOptions | None = None,
        recognizer: Recognizer | None = None,
        synthesizer: Synthesizer | None = None,
        provider: str | None = None,
        caller_name: str | None = None,
        caller_number: str | None = None,
        close_backend: bool = True,
        on_state: Callable[[CallState], None] | None = None,
        on_level: Callable[[float], None] | None = None,
    ) -> None:
        resolved, phrases = resolve_voice(engine, context, provider)
        self.options = opts = options or resolved
        self.engine, self.backend, self.context, self.provider = engine, backend, context, provider
        self.caller_name, self.caller_number = caller_name, caller_number
        self.close_backend = close_backend
        self.on_state, self.on_level = on_state, on_level
        self.recognizer = recognizer or Recognizer(user_dictionary=opts.dictionary)
        if phrases:
            self.recognizer.set_phrases(phrases)
        else:
            self.recognizer.clear_phrases()
        synth = synthesizer or Synthesizer(opts.voice, opts.rate, opts.pitch, sample_rate=backend.sample_rate)
        self.pacer = Pacer(backend)
        self.speaker = Speaker(backend, synth, self.pacer)
        self._cpu_counted = 0.0  # the synthesiser's CPU seconds already on the call's meter
        self.speaker.on_playing = self._on_playing
        self.segmenter: VadSegmenter | PushToTalkSegmenter = (
            PushToTalkSegmenter(backend.sample_rate)
            if opts.push_to_talk
            else VadSegmenter(backend.sample_rate, silence_ms=opts.vad_silence_ms, frame_ms=opts.frame_ms)
        )
        self.onset = SpeechOnset(backend.sample_rate, opts.barge_in_ms, opts.frame_ms)
        self.announcer = Announcer(engine.bus, self.speaker, self._thinking_turn)
        #: A tool's questions to the caller: answered by the next utterance, not a new turn (engine.elicitation).
        self.questions = CallerQuestions(engine, self.recognizer, self.pacer, lambda: self.call_id, phrases)
        self.timing, self.speaking = engine.timing_book, SpeakingTap(engine.bus)  # the waterfall's and timeline's
        self.session: CallSession | None = None
        self.turns: list[TurnStats] = []
        self.state = CallState.STARTING
        self.muted = False
        self.barge_ins = 0
        self.input_level_dbfs = -120.0
        self.end_reason: str | None = None
        self._utterances: asyncio.Queue[tuple[Utterance, float]] = asyncio.Queue()
        self._phase = "idle"  # "idle" | "thinking" | "delivering"
        self._turn_task: asyncio.Future[Any] | None = None
        self._cancelled_turn: asyncio.Future[Any] | None = None
        self._pending: TurnStats | None = None
        self._greeted = False
        #: Set once the call exists (its id is known), before or while the greeting plays.
        self.started = asyncio.Event()
        self._done = asyncio.Event()
        self._input_ended = asyncio.Event()
        self._closing = False

    # ------------------------------------------------------------------------------------------------ public

    @property
    def call_id(self) -> str | None:
        return self.session.call_id if self.session is not None else None

    @property
    def playbacks(self) -> list[Playback]:
        return self.speaker.log

    def mute(self, muted: bool) -> None:
        """Muted: the caller's audio is replaced by silence (the level meter still shows the real input)."""
        self.muted = muted

    def ptt_press(self) -> None:
        if not isinstance(self.segmenter, PushToTalkSegmenter):
            raise RuntimeError("push-to-talk is off for this call (softphone.push_to_talk / options.push_to_talk)")
        if self.speaker.playing:
            self.barge_in()
        self.segmenter.press()
        self._refresh_state()

    def ptt_release(self) -> None:
        if not isinstance(self.segmenter, PushToTalkSegmenter):
            raise RuntimeError("push-to-talk is off for this call")
        for utt in self.segmenter.release():
            self._enqueue(utt)
        self._refresh_state()

    def stop(self, reason: str = "ended by operator") -> None:
        """End the call from outside (the softphone's hang-up); ``run`` returns soon after."""
        self.end_reason = self.end_reason or reason
        self._done.set()

    def barge_in(self) -> None:
        """The caller talks over the agent: stop playback, and abandon a turn that is still thinking."""
        stopped = self.speaker.interrupt()
        task = self._turn_task
        cancelled = False
        if self._phase == "thinking" and task is not None and not task.done():
            self._cancelled_turn = task
            task.cancel()
            cancelled = True
        if stopped or cancelled:
            self.barge_ins += 1
            self.speaking.barge_in()
            if stopped and self.timing is not None and self.call_id is not None:
                self.timing.cut(self.call_id)
            log.info("barge-in on %s: playback stopped=%s, turn cancelled=%s", self.call_id, stopped, cancelled)

    async def run(self) -> str:
        """Run the call to its end; returns the call id."""
        asking = {ElicitationRequested.type, ElicitationWaiting.type, ElicitationResolved.type}
        sub = self.engine.bus.subscribe(types={AnnouncementRequested.type, CallEnded.type, *asking})
        tasks = [
            asyncio.create_task(self._input_loop(), name=f"voice:{self.context}:input"),
            asyncio.create_task(self._worker(), name=f"voice:{self.context}:turns"),
            asyncio.create_task(self._watch(sub), name=f"voice:{self.context}:events"),
        ]
        try:
            self.pacer.add_busy(1)
            try:
                session = await self._start() or self.session  # the greeting's delivery knows it first
            finally:
                self.pacer.add_busy(-1)
            if session is None:  # stopped before anything was said: the engine ended the call it was opening
                raise CallError(f"the call on {self.context!r} ended before it started ({self.end_reason})")
            self.session = session
            self.started.set()
            self._refresh_state()
            waits = [
                asyncio.create_task(self._drained(), name=f"voice:{self.context}:drained"),
                asyncio.create_task(self._done.wait(), name=f"voice:{self.context}:done"),
            ]
            try:
                await asyncio.wait(waits, return_when="FIRST_COMPLETED")
            finally:
                for w in waits:
                    w.cancel()
        finally:
            await self._shutdown(tasks, sub)
        assert self.session is not None
        return self.session.call_id

    async def _start(self) -> CallSession | None:
        """Start the call, greeting included, unless ``stop`` comes first: a hang-up during the greeting must not
        wait for it to play out. Then the greeting stops, the call ends with the stop's reason and the start is
        abandoned: None (a call stopped before its greeting began is ended by ``start_call`` itself)."""
        starting = asyncio.create_task(
            self.engine.start_call(
                self.context,
                provider=self.provider,
                caller_name=self.caller_name,
                caller_number=self.caller_number,
                deliver=self._deliver,
            ),
            name=f"voice:{self.context}:start",
        )
        stopped = asyncio.create_task(self._done.wait(), name=f"voice:{self.context}:stopped")
        try:
            await asyncio.wait({starting, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            if not starting.done():
                self.speaker.interrupt()
                if self.session is not None:  # the greeting had begun: the call ends with the stop's reason
                    await self.engine.end_call(self.session.call_id, self.end_reason or "ended")
                starting.cancel()
            await asyncio.gather(starting, stopped, return_exceptions=True)
        if starting.cancelled():
            return None
        return starting.result()

    # ------------------------------------------------------------------------------------------------ input side

    async def _input_loop(self) -> None:
        frames = self.backend.frames()
        try:
            while not self._closing:
                await self.pacer.before_input()
                try:
                    frame = await anext(frames)
                except StopAsyncIteration:
                    break
                self.pacer.changed()
                self._on_frame(frame)
            if not self._closing:
                for utt in self.segmenter.flush():
                    self._enqueue(utt)
        finally:
            self.pacer.end_of_input()
            self._input_ended.set()
            self.questions.input_ended()
            closer = getattr(frames, "aclose", None)
            if closer is not None:
                with contextlib.suppress(RuntimeError):
                    await closer()

    def _on_frame(self, frame: AudioFrame) -> None:
        level = frame.rms_dbfs()
        self.input_level_dbfs = level
        if self.on_level is not None:
            self.on_level(level)
        if self.muted:
            frame = AudioFrame(np.zeros(frame.num_samples, dtype=np.int16), frame.sample_rate, frame.timestamp)
        if isinstance(self.segmenter, VadSegmenter):
            # the onset VAD hears every frame (its internal smoothing must follow the real audio), but fires
            # barge-in only while the agent talks, past the echo guard
            onset = self.onset.push(frame)
            if (
                onset
                and self.speaker.playing
                and self.options.barge_in
                and self.speaker.current_played_ms() >= self.options.echo_guard_ms
            ):
                self.barge_in()
        for utt in self.segmenter.push(frame):
            self._enqueue(utt)
        self._refresh_state()

    def _enqueue(self, utt: Utterance) -> None:
        if self.questions.listening:  # the answer to a tool's question, not a new turn
            self.questions.take(utt)
            return
        self.pacer.add_busy(1)
        self._utterances.put_nowait((utt, time.perf_counter()))

    async def _drained(self) -> None:
        await self._input_ended.wait()
        await self._utterances.join()

    # ------------------------------------------------------------------------------------------------ turns

    async def _worker(self) -> None:
        while True:
            utt, ended_at = await self._utterances.get()
            try:
                await self._handle(utt, ended_at)
            except CallError as exc:  # the call ended while this utterance was on its way
                log.debug("utterance dropped: %s", exc)
            finally:
                self.pacer.add_busy(-1)
                self._utterances.task_done()
                self._refresh_state()

    async def _handle(self, utt: Utterance, ended_at: float) -> None:
        t0 = time.perf_counter()
        transcript = await self.recognizer.transcribe(utt.audio)
        stats = TurnStats(transcript.text, transcript.source, utt.audio.duration, time.perf_counter() - t0, ended_at)
        self.turns.append(stats)
        session = self.session
        if not transcript.text or session is None or not session.active:
            return
        if self.timing is not None:  # the caller stopped talking when the endpointer's silence began
            silence = self.options.vad_silence_ms / 1000 if utt.reason == "silence" else 0.0
            self.timing.heard(session.call_id, ended_at - silence, ended_at, t0 + stats.stt_s)
        self._pending = stats
        self._phase = "thinking"
        task = asyncio.create_task(
            self.engine.user_said(session.call_id, transcript.text),
            name=f"voice:{session.call_id}:turn:{session.turn + 1}",
        )
        self._turn_task = task
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task is not self._cancelled_turn or (current is not None and current.cancelling()):
                raise
            log.info("turn %d on %s abandoned by barge-in", session.turn, session.call_id)
        finally:
            self._turn_task = None
            self._phase = "idle"
            self._pending = None
            self._count_cpu(session.call_id, session.turn, transcript.cpu_s)

    def _count_cpu(self, call_id: str, turn: int, stt_s: float) -> None:
        """The turn's CPU seconds (its recognition, and the synthesis since the last turn) on the call's meter."""
        synth = self.speaker.synthesizer
        spent, self._cpu_counted = stt_s + synth.cpu_s - self._cpu_counted, synth.cpu_s
        if (m := self.engine.calls.usage_meter(call_id)) is not None:
            m.add(UsageReport(cpu_s=spent), turn)

    def _thinking_turn(self) -> int | None:
        if self._phase != "thinking" or self.session is None:
            return None
        return self.session.turn

    async def _deliver(self, session: CallSession, text: str) -> None:
        if self.session is None:
            self.session = session
            self.started.set()
        if is_steering():  # the operator's say-now line: spoken after what plays, not the answer of the turn
            await self.speaker.say(text, "steer", session.turn)
            return
        kind = "greeting" if not self._greeted and session.turn == 0 else "reply"
        if session.hangup_requested:
            kind = "farewell"
        self._greeted = True
        stats = self._pending
        if self._phase == "thinking":
            self._phase = "delivering"
        pb = await self.speaker.say(text, kind, session.turn)
        if stats is not None and pb is not None and stats.first_audio is None:
            stats.first_audio = pb.first_audio
            if self.timing is not None and pb.first_audio is not None:
                self.timing.first_audio(session.call_id, pb.first_audio)
                self.timing.played(session.call_id, time.perf_counter())

    # ------------------------------------------------------------------------------------------------ plumbing

    async def _watch(self, sub: Any) -> None:
        async for ev in sub:
            if self.session is None or getattr(ev, "call_id", None) != self.session.call_id:
                continue
            if isinstance(ev, ElicitationRequested | ElicitationWaiting | ElicitationResolved):
                self.questions.on_event(ev)
            elif isinstance(ev, AnnouncementRequested):
                if not self.questions.open:  # "one moment" would talk over a question to the caller
                    self.announcer.request(ev)
            elif isinstance(ev, CallEnded):
                self.end_reason = self.end_reason or ev.reason
                self._done.set()

    def _on_playing(self, pb: Playback | None) -> None:
        if pb is not None:
            self.onset.reset()
        self._refresh_state()

    def _refresh_state(self) -> None:
        if self._closing:
            new = CallState.ENDED
        elif self.speaker.playing:
            new = CallState.SPEAKING
        elif self.pacer.busy:
            new = CallState.THINKING
        elif (isinstance(self.segmenter, VadSegmenter) and self.segmenter.in_speech) or (
            isinstance(self.segmenter, PushToTalkSegmenter) and self.segmenter.pressed
        ):
            new = CallState.HEARING
        else:
            new = CallState.LISTENING
        if new != self.state:
            self.speaking.state(self.call_id, new)
            self.state = new
            if self.on_state is not None:
                self.on_state(new)

    async def _shutdown(self, tasks: Sequence[asyncio.Future[Any]], sub: Any) -> None:
        self._closing = True
        self.speaker.interrupt()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.announcer.aclose()
        await self.questions.aclose()
        session = self.session
        if session is not None and session.active:
            await self.engine.end_call(session.call_id, self.end_reason or "caller finished")
        if session is not None and self.end_reason is None:
            self.end_reason = session.end_reason
        sub.close()
        if self.close_backend:
            await self.backend.close()
        self._refresh_state()

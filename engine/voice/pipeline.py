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

The parts: this class wires the caller's audio (endpointer, barge-in onset, mute) to the ``TurnTaker``
(engine.voice.turn_taker: the turns and what is spoken); how the call starts, ends, follows the bus and reports
its state is ``CallLife`` (engine.voice.call_life), which the realtime driver shares.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from engine.events import Subscription
from engine.sessions.session import CallError, CallSession
from engine.voice.announcer import Announcer
from engine.voice.asking import CallerQuestions
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.bargein import SpeechOnset
from engine.voice.call_host import CallState, Deliver, TurnStats, VoiceHost, resolve_voice
from engine.voice.call_life import CallLife, OfLife, pump_frames, silenced
from engine.voice.options import VoiceOptions
from engine.voice.pacing import Pacer
from engine.voice.speaker import Playback, Speaker
from engine.voice.speaking import SpeakingTap
from engine.voice.stt import Recognizer
from engine.voice.tts import Synthesizer
from engine.voice.turn_taker import TurnTaker
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
        self.on_level = on_level
        self.life = CallLife(engine.bus, lambda: self.call_id, on_state)
        self.speaking: SpeakingTap = self.life.speaking  # the console's speaking timeline
        self.recognizer = recognizer or Recognizer(user_dictionary=opts.dictionary)
        if phrases:
            self.recognizer.set_phrases(phrases)
        else:
            self.recognizer.clear_phrases()
        synth = synthesizer or Synthesizer(opts.voice, opts.rate, opts.pitch, sample_rate=backend.sample_rate)
        self.pacer = Pacer(backend)
        self.speaker = Speaker(backend, synth, self.pacer)
        self.speaker.on_playing = self._on_playing
        self.segmenter: VadSegmenter | PushToTalkSegmenter = (
            PushToTalkSegmenter(backend.sample_rate)
            if opts.push_to_talk
            else VadSegmenter(backend.sample_rate, silence_ms=opts.vad_silence_ms, frame_ms=opts.frame_ms)
        )
        self.onset = SpeechOnset(backend.sample_rate, opts.barge_in_ms, opts.frame_ms)
        self.session: CallSession | None = None
        #: The caller's utterances, one turn at a time (transcribed, said to the engine, the answer spoken).
        self.taker = TurnTaker(
            engine, self.recognizer, self.speaker, self.pacer, opts, lambda: self.session, self._begun, self._refresh
        )
        self.turns: list[TurnStats] = self.taker.turns
        self.announcer = Announcer(engine.bus, self.speaker, self.taker.thinking_turn)
        #: A tool's questions to the caller: answered by the next utterance, not a new turn (engine.elicitation).
        self.questions = CallerQuestions(engine, self.recognizer, self.pacer, lambda: self.call_id, phrases)
        self.timing = engine.timing_book  # the latency waterfall's
        self.muted = False
        self.barge_ins = 0
        self.input_level_dbfs = -120.0
        self._input_ended = asyncio.Event()

    # ------------------------------------------------------------------------------------------------ public

    @property
    def call_id(self) -> str | None:
        return self.session.call_id if self.session is not None else None

    @property
    def playbacks(self) -> list[Playback]:
        return self.speaker.log

    #: The call's state, end reason, state callback and "started" event are its ``CallLife``'s.
    state = OfLife[CallState]()
    end_reason = OfLife[str | None](writable=True)
    on_state = OfLife[Callable[[CallState], None] | None]()
    started = OfLife[asyncio.Event]()

    def mute(self, muted: bool) -> None:
        """Muted: the caller's audio is replaced by silence (the level meter still shows the real input)."""
        self.muted = muted

    def ptt_press(self) -> None:
        if not isinstance(self.segmenter, PushToTalkSegmenter):
            raise RuntimeError("push-to-talk is off for this call (softphone.push_to_talk / options.push_to_talk)")
        if self.speaker.playing:
            self.barge_in()
        self.segmenter.press()
        self._refresh()

    def ptt_release(self) -> None:
        if not isinstance(self.segmenter, PushToTalkSegmenter):
            raise RuntimeError("push-to-talk is off for this call")
        for utt in self.segmenter.release():
            self._enqueue(utt)
        self._refresh()

    def stop(self, reason: str = "ended by operator") -> None:
        """End the call from outside (the softphone's hang-up); ``run`` returns soon after."""
        self.life.end(reason)

    def barge_in(self) -> None:
        """The caller talks over the agent: stop playback, and abandon a turn that is still thinking."""
        stopped = self.speaker.interrupt()
        cancelled = self.taker.cancel_thinking()
        if stopped or cancelled:
            self.barge_ins += 1
            self.speaking.barge_in()
            if stopped and self.timing is not None and self.call_id is not None:
                self.timing.cut(self.call_id)
            log.info("barge-in on %s: playback stopped=%s, turn cancelled=%s", self.call_id, stopped, cancelled)

    async def run(self) -> str:
        """Run the call to its end; returns the call id."""
        sub = self.life.subscribe()
        follow = self.life.follow(sub, self.questions, self.announcer.request)
        tasks = [
            asyncio.create_task(self._input_loop(), name=f"voice:{self.context}:input"),
            asyncio.create_task(self.taker.run(), name=f"voice:{self.context}:turns"),
            asyncio.create_task(follow, name=f"voice:{self.context}:events"),
        ]
        try:
            self.pacer.add_busy(1)
            try:
                session = await self._start() or self.session  # the greeting's delivery knows it first
            finally:
                self.pacer.add_busy(-1)
            if session is None:  # stopped before anything was said: the engine ended the call it was opening
                raise CallError(f"the call on {self.context!r} ended before it started ({self.end_reason})")
            self._begun(session)
            self._refresh()
            await self.life.until_end(self.taker.drained(self._input_ended), f"voice:{self.context}", "drained")
        finally:
            await self._shutdown(tasks, sub)
        assert self.session is not None
        return self.session.call_id

    async def _start(self) -> CallSession | None:
        """Start the call, greeting included, unless ``stop`` comes first: a hang-up during the greeting must not
        wait for it to play out. Then the greeting stops, the call ends with the stop's reason and the start is
        abandoned: None (a call stopped before its greeting began is ended by ``start_call`` itself)."""
        starting = self.engine.start_call(
            self.context,
            provider=self.provider,
            caller_name=self.caller_name,
            caller_number=self.caller_number,
            deliver=self.taker.deliver,
        )
        return await self.life.start(starting, f"voice:{self.context}", "start", self._stop_greeting)

    async def _stop_greeting(self) -> None:
        self.speaker.interrupt()
        if self.session is not None:  # the greeting had begun: the call ends with the stop's reason
            await self.engine.end_call(self.session.call_id, self.end_reason or "ended")

    def _begun(self, session: CallSession) -> None:
        """The call exists (the greeting's delivery may know it before ``start_call`` returns)."""
        self.session = session
        self.started.set()

    # ------------------------------------------------------------------------------------------------ input side

    async def _input_loop(self) -> None:
        await pump_frames(
            self.backend,
            self.pacer,
            self._on_frame,
            ended=self._input_over,
            running=lambda: not self.life.closing,
            last=self._flush_segmenter,
        )

    def _input_over(self) -> None:
        self._input_ended.set()
        self.questions.input_ended()

    def _flush_segmenter(self) -> None:
        for utt in self.segmenter.flush():
            self._enqueue(utt)

    async def _on_frame(self, frame: AudioFrame) -> None:
        level = frame.rms_dbfs()
        self.input_level_dbfs = level
        if self.on_level is not None:
            self.on_level(level)
        if self.muted:
            frame = silenced(frame)
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
        self._refresh()

    def _enqueue(self, utt: Utterance) -> None:
        if self.questions.listening:  # the answer to a tool's question, not a new turn
            self.questions.take(utt)
            return
        self.taker.put(utt)

    # ------------------------------------------------------------------------------------------------ plumbing

    def _on_playing(self, pb: Playback | None) -> None:
        if pb is not None:
            self.onset.reset()
        self._refresh()

    def _refresh(self) -> None:
        if self.life.closing:
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
        self.life.report(new)

    async def _shutdown(self, tasks: Sequence[asyncio.Future[Any]], sub: Subscription) -> None:
        self.life.closing = True
        self.speaker.interrupt()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.announcer.aclose()
        await self.questions.aclose()
        await self.life.close(self.session, self.engine.end_call, sub, self.backend if self.close_backend else None)
        self._refresh()

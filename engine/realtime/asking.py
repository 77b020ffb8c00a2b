"""A tool's question to the caller on a realtime call: said by the provider, heard by the engine.

Why it exists: on a speech-to-speech call the provider hears the caller and answers by itself, so a tool's
mid-call question (MCP elicitation, ``elicitation: caller``) needs two things the pipeline gets for free:

* SAY: the desk's lines (the question, the read-back, a retry, the give-up line) go through the provider's own way
  of talking while a function call waits (``RealtimeSession.say_during_tool``: OpenAI ``response.create``
  word for word, Deepgram ``InjectAgentMessage``, ElevenLabs ``user_message``, Gemini an interim result of a
  NON_BLOCKING call). A provider that has none at that moment (Gemini while a BLOCKING call runs: any other
  content would cut the call off) gets the line said by the engine's own voice (espeak-ng) into the call's
  playout. The provider's transcript of a line it said for the desk is not recorded again (the desk already put
  the line on the transcript, and the model's history is in the middle of a tool call).
* HEAR: from the question's request to its resolution the provider hears silence (else its model would answer
  the caller's "four" itself) and the caller's frames go to a local VAD; each utterance while the desk listens is
  transcribed against the expected answers by ``CallerQuestions`` (the pipeline's, with a recognizer built only
  when a question first opens on the call: pocketsphinx is heavy) and handed to ``engine.caller_answered``. The
  VAD too is made then, at the call's rate (resampled to 16 kHz first when the VAD cannot take that rate).

Slow-tool announcements are held while a question is open (the driver asks ``open``).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import re
from collections import deque
from collections.abc import Callable
from typing import Any

from engine.events import ElicitationRequested, ElicitationResolved, ElicitationWaiting
from engine.providers.base import ProviderError
from engine.realtime.audio import AudioConverter
from engine.realtime.playout import Playout
from engine.realtime.session import AudioSpec, RealtimeSession
from engine.sessions.session import CallSession
from engine.voice.asking import CallerEar, CallerQuestions
from engine.voice.audio import AudioFrame, StreamResampler
from engine.voice.options import VoiceOptions
from engine.voice.pacing import Pacer
from engine.voice.stt import Recognizer
from engine.voice.tts import Synthesizer
from engine.voice.vad import VAD_RATES, VadSegmenter

log = logging.getLogger(__name__)

#: How alike (difflib ratio of the normalised words) a provider's transcript must be to a line it was asked to say
#: to be taken as that line.
ECHO_MATCH = 0.6
#: Lines said through the provider whose transcript is still expected (older ones are forgotten).
ECHOES_KEPT = 8


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


class RealtimeQuestions:
    def __init__(
        self,
        engine: CallerEar,
        pacer: Pacer,
        options: VoiceOptions,
        sample_rate: int,
        call_id: Callable[[], str | None],
        live: Callable[[], RealtimeSession | None],
        playout: Callable[[], Playout | None],
    ) -> None:
        self.options, self._live, self._playout, self.sample_rate = options, live, playout, sample_rate
        self._segmenter: VadSegmenter | None = None
        self._resampler: StreamResampler | None = None
        self.questions = CallerQuestions(engine, self._recognizer, pacer, call_id, None)
        #: Frames the provider got as silence because a question was open (the caller's audio stayed local).
        self.frames_kept = 0
        #: Lines the engine said with its own voice (the provider had no way to say them mid-tool).
        self.said_locally: list[str] = []
        self._echoes: deque[str] = deque(maxlen=ECHOES_KEPT)
        self._synth: Synthesizer | None = None
        self._lines = 0
        self._warming: asyncio.Task[Any] | None = None

    @property
    def segmenter(self) -> VadSegmenter:
        """The local VAD (made on first use: most calls never ask the caller anything)."""
        if self._segmenter is None:
            rate = self.sample_rate if self.sample_rate in VAD_RATES else 16000
            if rate != self.sample_rate:
                self._resampler = StreamResampler(self.sample_rate, rate)
            o = self.options
            self._segmenter = VadSegmenter(rate, silence_ms=o.vad_silence_ms, frame_ms=o.frame_ms)
        return self._segmenter

    def _recognizer(self) -> Recognizer:
        return Recognizer(user_dictionary=self.options.dictionary)

    @property
    def open(self) -> bool:
        """A question to the caller is open on the call (requested, not yet resolved)."""
        return bool(self.questions.open)

    # ------------------------------------------------------------------------------------------------ hearing

    def on_event(self, ev: ElicitationRequested | ElicitationWaiting | ElicitationResolved) -> None:
        was = self.open
        self.questions.on_event(ev)
        if self.open and self._warming is None:  # the first question on the call: load pocketsphinx meanwhile
            self._warming = asyncio.create_task(asyncio.to_thread(lambda: self.questions.recognizer))
        if was and not self.open and self._segmenter is not None:
            self._segmenter.flush()  # what the caller was saying when the question ended answers nothing

    def hear(self, frame: AudioFrame) -> bool:
        """A caller frame: True when a question is open and the frame was kept here (the provider hears silence)."""
        if not self.open:
            return False
        self.frames_kept += 1
        segmenter = self.segmenter
        if self._resampler is not None:
            frame = AudioFrame(self._resampler.process(frame.samples), segmenter.sample_rate, frame.timestamp)
        for utt in segmenter.push(frame):
            self._utterance(utt)
        return True

    def _utterance(self, utt: Any) -> None:
        if self.questions.listening:
            self.questions.take(utt)
        else:  # spoken over the question, before the engine listens: not an answer, and not for the provider
            log.info("caller speech of %.1f s while a question was being asked: not taken", utt.audio.duration)

    def input_ended(self) -> None:
        """The caller's audio ended: a last utterance still counts, then every question hears silence."""
        if self._segmenter is not None:
            for utt in self._segmenter.flush():
                self._utterance(utt)
        self.questions.input_ended()

    async def aclose(self) -> None:
        await self.questions.aclose()
        if self._warming is not None:  # a recognizer that cannot load says so when an answer needs it
            self._warming.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._warming

    # ------------------------------------------------------------------------------------------------ saying

    async def deliver(self, session: CallSession, text: str) -> None:
        """The desk's line on this call (``start_realtime_call(deliver=…)``): through the provider where it can
        talk while a tool runs, else in the engine's own voice."""
        live = self._live()
        via: str | None = None
        if live is not None:
            try:
                via = await live.say_during_tool(text)
            except ProviderError as e:
                log.warning("call %s: the provider could not say a question (%s): said locally", session.call_id, e)
        if via is not None:
            self._echoes.append(_words(text))
            return
        await self._say_locally(text)

    def echo(self, text: str) -> bool:
        """The provider's final transcript ``text`` is a line it said for the desk (then it is not recorded)."""
        heard = _words(text)
        for line in self._echoes:
            if difflib.SequenceMatcher(None, line, heard).ratio() >= ECHO_MATCH:
                self._echoes.remove(line)
                return True
        return False

    async def _say_locally(self, text: str) -> None:
        playout, live = self._playout(), self._live()
        if playout is None or live is None:
            log.warning("a tool's question could not be said: the call has no audio out yet")
            return
        spec = live.output_spec
        if self._synth is None:
            o = self.options
            self._synth = Synthesizer(o.voice, o.rate, o.pitch, sample_rate=spec.rate)
        audio = await self._synth.synthesize(text)
        data = AudioConverter(AudioSpec("pcm16", spec.rate), spec).convert(audio.samples.astype("<i2").tobytes())
        self._lines += 1
        playout.feed(f"engine-question-{self._lines}", data)
        playout.end_response()
        self.said_locally.append(text)

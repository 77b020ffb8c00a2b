"""The voice driver for speech-to-speech providers: an audio backend around a live ``RealtimeSession``.

Why it exists: a realtime provider hears the caller, decides turns and speaks itself; what stays local is the
audio and the call around it, and that must look the same as a cascaded ``VoiceCall`` to the softphone,
``ava-engine call --audio-in`` and telephony (same public surface, same events). ``voice_call``
(engine.realtime.driver) picks the driver.

Caller frames go to the session in its ``input_spec`` (``CallerInput``), assistant audio is played at the
backend's rate (``Playout``); when the provider hears the caller start (or cuts its own answer) the playout is
flushed and ``played(item, ms)`` says what was really heard. A tool's question to the caller is said through
the provider and its answer heard locally (``RealtimeQuestions``; the provider hears silence meanwhile).
Transcripts go to the engine, announcements to ``session.announce`` (held while a question is open), usage to
``call.usage`` and the metrics. A fatal notice, the session ending on its own or a failing part ends the call
with a clear reason; after ``hangup_call`` it ends once the farewell has played. On as-fast-as-possible file runs
the ``Pacer`` keeps output on the input's timeline (input waits while the provider owes an answer, then input
and output move in lockstep).

The parts: ``TurnTracker`` (who owes whom, each turn's stats), ``ProviderSide`` (barge-in cuts, announcements,
notices), ``CallerInput`` and ``Playout`` (the audio both ways); how the call starts, ends, follows the bus and
reports its state is ``CallLife`` (engine.voice.call_life), which the cascaded ``VoiceCall`` shares.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from engine.events import AnnouncementRequested, Subscription
from engine.providers.base import ProviderError
from engine.realtime import session as rt
from engine.realtime.asking import RealtimeQuestions
from engine.realtime.host import RealtimeHost, is_realtime
from engine.realtime.input import CallerInput
from engine.realtime.playout import PlayedItem, Playout
from engine.realtime.provider_side import ProviderSide
from engine.realtime.relay import Farewell, TranscriptRelay
from engine.realtime.turn_tracker import TurnTracker
from engine.sessions.session import CallError, CallSession
from engine.usage.meter import UsageMeter
from engine.voice.backend import AudioBackend
from engine.voice.call_host import CallState, TurnStats
from engine.voice.call_life import CallLife, OfLife
from engine.voice.options import VoiceOptions
from engine.voice.pacing import Pacer
from engine.voice.speaking import SpeakingTap

__all__ = ["RealtimeVoiceCall"]

log = logging.getLogger(__name__)

#: After ``hangup_call``, how long to wait for the provider's farewell audio before hanging up anyway.
FAREWELL_TIMEOUT_S = 8.0
#: How long the provider may owe an answer (caller stopped talking, no audio yet) before the driver stops waiting.
RESPONSE_TIMEOUT_S = 15.0
#: When the input has ended: how long the provider must stay quiet before the call is over.
SETTLE_S = 1.0


class RealtimeVoiceCall:
    def __init__(
        self,
        engine: RealtimeHost,
        backend: AudioBackend,
        context: str,
        *,
        provider: str | None = None,
        caller_name: str | None = None,
        caller_number: str | None = None,
        close_backend: bool = True,
        on_state: Callable[[CallState], None] | None = None,
        on_level: Callable[[float], None] | None = None,
        options: VoiceOptions | None = None,
        farewell_timeout_s: float = FAREWELL_TIMEOUT_S,
        response_timeout_s: float = RESPONSE_TIMEOUT_S,
        settle_s: float = SETTLE_S,
    ) -> None:
        if not is_realtime(engine, context, provider):
            raise CallError(f"context {context!r} does not run on a realtime provider (use VoiceCall)")
        opts = options or VoiceOptions.from_softphone(engine.settings.softphone)
        #: The provider detects speech itself: no push-to-talk on a realtime call.
        self.options = dataclasses.replace(opts, push_to_talk=False)
        self.engine, self.backend, self.context, self.provider = engine, backend, context, provider
        self.caller_name, self.caller_number, self.close_backend = caller_name, caller_number, close_backend
        self.on_level = on_level
        self.life = CallLife(engine.bus, lambda: self.call_id, on_state)
        self.speaking: SpeakingTap = self.life.speaking  # the console's speaking timeline
        self.response_timeout_s, self.settle_s = response_timeout_s, settle_s
        # an 8 kHz backend is the phone: offered as μ-law, which three providers take as is (no resampling)
        self.native = rt.PCMU_8K if backend.sample_rate == 8000 else rt.AudioSpec("pcm16", backend.sample_rate)
        self.pacer = Pacer(backend)
        self.session: CallSession | None = None
        self.live: rt.RealtimeSession | None = None
        self.playout: Playout | None = None
        self.timing = engine.timing_book  # the latency waterfall's
        #: Who owes whom (the caller talking, the provider owing an answer) and each turn's stats.
        self.tracker = TurnTracker(self.pacer, self.timing, lambda: self.call_id, response_timeout_s, self._refresh)
        self.turns: list[TurnStats] = self.tracker.turns
        self.usage: UsageMeter | None = None
        self.muted, self.input_level_dbfs = False, -120.0
        self._activity = asyncio.Event()
        self._said = TranscriptRelay(engine.calls, self._recorded)
        self._farewell = Farewell(farewell_timeout_s)
        self._side: set[asyncio.Task[Any]] = set()
        self._in: CallerInput | None = None
        #: Barge-in cuts, announcements and notices: what the call tells its provider beside the audio.
        self.provider_side = ProviderSide(
            self.life,
            self.timing,
            lambda: self.call_id,
            lambda: self._provider_name,
            lambda: self.live,
            lambda: self.playout,
        )
        #: A tool's questions to the caller: said by the provider, answered to the engine (engine.elicitation).
        self.questions = RealtimeQuestions(
            engine,
            self.pacer,
            self.options,
            backend.sample_rate,
            lambda: self.call_id,
            lambda: self.live,
            lambda: self.playout,
        )

    # ------------------------------------------------------------------------------------------------ public

    @property
    def call_id(self) -> str | None:
        return self.session.call_id if self.session is not None else None

    @property
    def playbacks(self) -> list[PlayedItem]:
        return self.playout.log if self.playout is not None else []

    #: The call's state, end reason, state callback and "started" event are its ``CallLife``'s.
    state = OfLife[CallState]()
    end_reason = OfLife[str | None](writable=True)
    on_state = OfLife[Callable[[CallState], None] | None]()
    started = OfLife[asyncio.Event]()

    @property
    def barge_ins(self) -> int:
        return self.provider_side.barge_ins

    def mute(self, muted: bool) -> None:
        """Muted: the provider hears silence (the level meter still shows the real input)."""
        self.muted = muted
        if self._in is not None:
            self._in.muted = muted

    def ptt_press(self) -> None:
        raise RuntimeError("push-to-talk is not available on a realtime provider (it detects speech itself)")

    ptt_release = ptt_press

    def stop(self, reason: str = "ended by operator") -> None:
        """End the call from outside (the softphone's hang-up); ``run`` returns soon after."""
        self.life.end(reason)

    def barge_in(self) -> bool:
        """Cut the agent off now (as when the caller talks over it); False when nothing was playing."""
        cut = self.provider_side.cut()
        if cut is not None:
            self._spawn(self.provider_side.played(*cut), "played")
        return cut is not None

    async def run(self) -> str:
        """Run the call to its end; returns the call id."""
        sub = self.life.subscribe()
        tasks: list[asyncio.Task[Any]] = []
        try:
            self.pacer.add_busy(1)
            try:
                self.session, self.live = await self._connect()
            finally:
                self.pacer.add_busy(-1)
            self._said.call_id = self.session.call_id
            self.usage = self.engine.calls.usage_meter(self.session.call_id)
            self._in = CallerInput(self.backend, self.pacer, self.live, self._level if self.on_level else None)
            self._in.muted = self.muted
            self.playout = Playout(self.backend, self.pacer, self.live.output_spec)
            self.playout.on_playing = self._on_playing
            if getattr(self.engine.settings.contexts.get(self.context), "greeting", None):
                self.tracker.set_awaiting(True)  # the provider speaks first: the input waits for the greeting
            self.started.set()
            self._refresh()
            name = f"realtime:{self.session.call_id}"
            follow = self.life.follow(sub, self.questions, self._announce, self._asked)
            tasks = [
                asyncio.create_task(self._in.run(), name=f"{name}:input"),
                asyncio.create_task(self._event_loop(self.live), name=f"{name}:events"),
                asyncio.create_task(self.playout.run(), name=f"{name}:playout"),
                asyncio.create_task(self._said.run(), name=f"{name}:transcripts"),
                asyncio.create_task(follow, name=f"{name}:bus"),
            ]
            for t in tasks:
                t.add_done_callback(self._task_ended)
            await self.life.until_end(self._finished(), name, "finished")
        finally:
            await self._shutdown(tasks, sub)
        assert self.session is not None
        return self.session.call_id

    async def _connect(self) -> tuple[CallSession, rt.RealtimeSession]:
        """Start the call on its provider, given up when the call is stopped first (the caller hung up while the
        provider was still connecting): the engine then ends the call with the stop's reason at once."""
        connecting = self.engine.calls.start_realtime_call(
            self.context,
            provider=self.provider,
            caller_name=self.caller_name,
            caller_number=self.caller_number,
            audio=self.native,
            deliver=self.questions.deliver,
        )
        connected = await self.life.start(connecting, f"realtime:{self.context}", "connect")
        if connected is None:
            raise CallError(f"the call on {self.context!r} ended before it started ({self.end_reason})")
        return connected

    def _level(self, dbfs: float) -> None:
        """The input level meter (measured only for a call given ``on_level``: it costs as much as a frame)."""
        self.input_level_dbfs = dbfs
        if self.on_level is not None:
            self.on_level(dbfs)

    # ------------------------------------------------------------------------------------------------ provider side

    async def _event_loop(self, live: rt.RealtimeSession) -> None:
        reason: str | None = None
        try:
            async for ev in live.events():
                self._activity.set()
                self._check_hangup()
                await self._on_event(ev)
                self._refresh()
                if self.life.done.is_set():
                    return
        except ProviderError as e:
            reason = str(e)
        except Exception as e:  # a broken adapter ends this call, never the engine
            log.exception("realtime session of %s failed", self.call_id)
            reason = f"{self._provider_name}: session failed: {type(e).__name__}: {e}"
        if self.life.closing:
            return
        session = self.session
        if session is not None and not session.active:  # ended by the engine (operator, shutdown)
            self.life.end(session.end_reason)
        elif self._farewell.requested:
            await self._farewell.played(self.playout, self._provider_name)
            self.life.end("hangup")
        else:
            self.life.end(reason or f"{self._provider_name}: the provider closed the session")

    async def _on_event(self, ev: rt.RealtimeEvent) -> None:
        assert self.playout is not None
        if isinstance(ev, rt.AssistantAudio):
            self._farewell.on_audio()
            self.tracker.assistant_audio()
            self.playout.feed(ev.item_id, ev.data)
        elif isinstance(ev, rt.AssistantText | rt.CallerText):
            self._transcript(ev)
        elif isinstance(ev, rt.CallerSpeechStarted):
            self.tracker.caller_started(self._sent_s)
            await self.provider_side.flush(None)
        elif isinstance(ev, rt.CallerSpeechStopped):
            self.tracker.caller_stopped(self._sent_s)
        elif isinstance(ev, rt.AssistantInterrupted):
            await self.provider_side.flush(ev.item_id)
        elif isinstance(ev, rt.ResponseDone):
            self.playout.end_response()
            self.tracker.response_done(ev.status)
            self._farewell.on_response_done()
        elif isinstance(ev, rt.UsageReport):
            self._used(ev)
        elif isinstance(ev, rt.ProviderNotice):
            self.provider_side.notice(ev)

    def _transcript(self, ev: rt.AssistantText | rt.CallerText) -> None:
        if isinstance(ev, rt.AssistantText) and ev.final and self.questions.echo(ev.text):
            self._activity.set()  # a line the desk said (already on the transcript; not a turn)
        elif ev.final and ev.text.strip():
            self._said.put("assistant" if isinstance(ev, rt.AssistantText) else "user", ev.text)
            if isinstance(ev, rt.CallerText):
                self.tracker.caller_text(ev.text)

    def _used(self, ev: rt.UsageReport) -> None:
        if self.usage is None:
            return
        self.usage.add(ev, self.session.turn if self.session is not None else 0)
        if self.usage.reached and self.engine.calls.budget_wrap_up(self.call_id or ""):
            self.end_reason = self.end_reason or "budget reached"
            self._check_hangup()  # the farewell the provider was told to say ends the call

    @property
    def _sent_s(self) -> float:
        """Seconds of caller audio sent to the provider so far."""
        return self._in.sent_s if self._in is not None else 0.0

    def _asked(self) -> None:
        """A question to the caller opened or closed: while one is open the caller's frames are heard here."""
        if self._in is not None:  # only while a question is open: the frame's hot path stays as it was
            self._in.listener = self.questions.hear if self.questions.open else None

    def _announce(self, ev: AnnouncementRequested) -> None:
        self._spawn(self.provider_side.announce(ev), "announce")

    def _check_hangup(self) -> None:
        if self._farewell.check(self.session):
            self._spawn(self._hang_up(), "hangup")

    async def _hang_up(self) -> None:
        """``hangup_call`` ran: end the call once the farewell has played out."""
        await self._farewell.played(self.playout, self._provider_name)
        self.life.end("hangup")

    async def _finished(self) -> None:
        """The input has ended and the provider has answered everything (then stayed quiet for ``settle_s``)."""
        assert self.playout is not None and self._in is not None
        await self._in.ended.wait()
        self.questions.input_ended()
        if await self.tracker.settled(self.playout, self._said, self._activity, self.questions, self.settle_s):
            log.warning("%s owed an answer too long; ending %s", self._provider_name, self.call_id)

    async def _shutdown(self, tasks: list[asyncio.Task[Any]], sub: Subscription) -> None:
        self.life.closing = True
        self.tracker.set_awaiting(False)
        if self.playout is not None:
            self.playout.interrupt()
        for t in [*tasks, *self._side]:
            t.cancel()
        await asyncio.gather(*tasks, *self._side, return_exceptions=True)
        await self.questions.aclose()
        await self.life.close(self.session, self.engine.end_call, sub, self.backend if self.close_backend else None)
        self._refresh()

    # ------------------------------------------------------------------------------------------------ plumbing

    @property
    def _provider_name(self) -> str:
        return self.session.provider if self.session is not None else (self.provider or self.context)

    def _recorded(self) -> None:
        """A transcript was recorded (a tool may have run meanwhile): look for a hangup."""
        self._activity.set()
        self._check_hangup()

    def _task_ended(self, task: asyncio.Task[Any]) -> None:
        """A part of the call failed (the sound device, a bug): the call ends, saying which part and why."""
        if not task.cancelled() and (exc := task.exception()) is not None and not self.life.closing:
            self.life.end(f"{task.get_name()} failed: {type(exc).__name__}: {exc}")

    def _on_playing(self, playing: bool) -> None:
        self._activity.set()
        if not playing and self.timing is not None and self.call_id is not None:
            self.timing.played(self.call_id, time.perf_counter())
        self._refresh()

    def _spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        task = asyncio.create_task(coro, name=f"realtime:{self.call_id}:{what}")
        self._side.add(task)
        task.add_done_callback(self._side.discard)

    def _refresh(self) -> None:
        if self.life.closing:
            new = CallState.ENDED
        elif self.playout is not None and self.playout.playing:
            new = CallState.SPEAKING
        elif self.tracker.caller_speaking:
            new = CallState.HEARING
        elif self.tracker.awaiting or self.session is None:
            new = CallState.THINKING if self.session is not None else CallState.STARTING
        else:
            new = CallState.LISTENING
        self.life.report(new)

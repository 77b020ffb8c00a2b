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
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from engine.events import AnnouncementPlayed, AnnouncementRequested, CallEnded, EngineError
from engine.events.elicitation import ElicitationRequested, ElicitationResolved, ElicitationWaiting
from engine.providers.base import ProviderError
from engine.realtime import session as rt
from engine.realtime.asking import RealtimeQuestions
from engine.realtime.host import RealtimeHost, is_realtime
from engine.realtime.input import CallerInput
from engine.realtime.playout import PlayedItem, Playout
from engine.realtime.relay import Farewell, TranscriptRelay
from engine.sessions.session import CallError, CallSession
from engine.usage.meter import UsageMeter
from engine.voice.backend import AudioBackend
from engine.voice.options import VoiceOptions
from engine.voice.pacing import Pacer
from engine.voice.pipeline import CallState, TurnStats
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
        self.on_state, self.on_level = on_state, on_level
        self.response_timeout_s, self.settle_s = response_timeout_s, settle_s
        # an 8 kHz backend is the phone: offered as μ-law, which three providers take as is (no resampling)
        self.native = rt.PCMU_8K if backend.sample_rate == 8000 else rt.AudioSpec("pcm16", backend.sample_rate)
        self.pacer = Pacer(backend)
        self.session: CallSession | None = None
        self.live: rt.RealtimeSession | None = None
        self.playout: Playout | None = None
        self.turns: list[TurnStats] = []
        self.timing, self.speaking = engine.timing_book, SpeakingTap(engine.bus)  # the waterfall's and timeline's
        self.usage: UsageMeter | None = None
        self.state, self.muted, self.barge_ins, self.input_level_dbfs = CallState.STARTING, False, 0, -120.0
        self.end_reason: str | None = None
        #: Set once the call exists (its id is known).
        self.started = asyncio.Event()
        self._done, self._activity = asyncio.Event(), asyncio.Event()
        self._said = TranscriptRelay(engine.calls, self._recorded)
        self._awaiting = False  # the provider owes an answer (the caller stopped talking)
        self._awaiting_timer: asyncio.TimerHandle | None = None
        self._caller_speaking, self._speech_from = False, 0.0  # since when (seconds of caller audio sent)
        self._response_audio = False  # the response in flight has sent audio
        self._farewell = Farewell(farewell_timeout_s)
        self._closing = False
        self._side: set[asyncio.Task[Any]] = set()
        self._in: CallerInput | None = None
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
        self.end_reason = self.end_reason or reason
        self._done.set()

    def barge_in(self) -> bool:
        """Cut the agent off now (as when the caller talks over it); False when nothing was playing."""
        self._cutting()
        cut = self.playout.interrupt() if self.playout is not None else None
        if cut is not None:
            self.barge_ins += 1
            self._spawn(self._report_played(*cut), "played")
        return cut is not None

    async def run(self) -> str:
        """Run the call to its end; returns the call id."""
        asking = {ElicitationRequested.type, ElicitationWaiting.type, ElicitationResolved.type}
        sub = self.engine.bus.subscribe(types={AnnouncementRequested.type, CallEnded.type, *asking})
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
                self._set_awaiting(True)  # the provider speaks first: the input waits for the greeting
            self.started.set()
            self._refresh_state()
            name = f"realtime:{self.session.call_id}"
            tasks = [
                asyncio.create_task(self._in.run(), name=f"{name}:input"),
                asyncio.create_task(self._event_loop(self.live), name=f"{name}:events"),
                asyncio.create_task(self.playout.run(), name=f"{name}:playout"),
                asyncio.create_task(self._said.run(), name=f"{name}:transcripts"),
                asyncio.create_task(self._watch(sub), name=f"{name}:bus"),
            ]
            for t in tasks:
                t.add_done_callback(self._task_ended)
            waits = [
                asyncio.create_task(self._finished(), name=f"{name}:finished"),
                asyncio.create_task(self._done.wait(), name=f"{name}:done"),
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

    async def _connect(self) -> tuple[CallSession, rt.RealtimeSession]:
        """Start the call on its provider, given up when the call is stopped first (the caller hung up while the
        provider was still connecting): the engine then ends the call with the stop's reason at once."""
        connecting = asyncio.create_task(
            self.engine.calls.start_realtime_call(
                self.context,
                provider=self.provider,
                caller_name=self.caller_name,
                caller_number=self.caller_number,
                audio=self.native,
                deliver=self.questions.deliver,
            ),
            name=f"realtime:{self.context}:connect",
        )
        stopped = asyncio.create_task(self._done.wait(), name=f"realtime:{self.context}:stopped")
        try:
            await asyncio.wait((connecting, stopped), return_when="FIRST_COMPLETED")
        finally:
            stopped.cancel()
            if not connecting.done():
                connecting.cancel(self.end_reason)
                with contextlib.suppress(asyncio.CancelledError):
                    await connecting
        if connecting.cancelled():
            raise CallError(f"the call on {self.context!r} ended before it started ({self.end_reason})")
        return connecting.result()

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
                self._refresh_state()
                if self._done.is_set():
                    return
        except ProviderError as e:
            reason = str(e)
        except Exception as e:  # a broken adapter ends this call, never the engine
            log.exception("realtime session of %s failed", self.call_id)
            reason = f"{self._provider_name}: session failed: {type(e).__name__}: {e}"
        if self._closing:
            return
        session = self.session
        if session is not None and not session.active:  # ended by the engine (operator, shutdown)
            self.end_reason = self.end_reason or session.end_reason
        elif self._farewell.requested:
            await self._farewell.played(self.playout, self._provider_name)
            self.end_reason = self.end_reason or "hangup"
        else:
            self.end_reason = self.end_reason or reason or f"{self._provider_name}: the provider closed the session"
        self._done.set()

    async def _on_event(self, ev: rt.RealtimeEvent) -> None:
        assert self.playout is not None
        if isinstance(ev, rt.AssistantAudio):
            self._response_audio = True
            self._farewell.on_audio()
            if self._awaiting:
                self._set_awaiting(False)
                if self.turns and self.turns[-1].first_audio is None:
                    self.turns[-1].first_audio = time.perf_counter()
                    if self.timing is not None and self.call_id is not None:
                        self.timing.first_audio(self.call_id, self.turns[-1].first_audio)
            self.playout.feed(ev.item_id, ev.data)
        elif isinstance(ev, rt.AssistantText | rt.CallerText):
            if isinstance(ev, rt.AssistantText) and ev.final and self.questions.echo(ev.text):
                self._activity.set()  # a line the desk said (already on the transcript; not a turn)
            elif ev.final and ev.text.strip():
                self._said.put("assistant" if isinstance(ev, rt.AssistantText) else "user", ev.text)
                if isinstance(ev, rt.CallerText) and self.turns and not self.turns[-1].text:
                    self.turns[-1].text = ev.text
        elif isinstance(ev, rt.CallerSpeechStarted):
            self._caller_speaking, self._speech_from = True, self._in.sent_s if self._in else 0.0
            self._set_awaiting(False)
            await self._flush(None)
        elif isinstance(ev, rt.CallerSpeechStopped):
            self._caller_speaking, heard = False, (self._in.sent_s if self._in else 0.0) - self._speech_from
            self.turns.append(TurnStats("", "provider", round(max(0.0, heard), 3), 0.0, time.perf_counter()))
            if self.timing is not None and self.call_id is not None:
                self.timing.heard(self.call_id, self.turns[-1].utterance_end, realtime=True)
            self._set_awaiting(True)
        elif isinstance(ev, rt.AssistantInterrupted):
            await self._flush(ev.item_id)
        elif isinstance(ev, rt.ResponseDone):
            self.playout.end_response()
            # a completed response without audio called tools: the provider owes the answer that follows
            self._set_awaiting(ev.status == "completed" and not self._response_audio)
            self._response_audio = False
            self._farewell.on_response_done()
        elif isinstance(ev, rt.UsageReport) and self.usage is not None:
            self.usage.add(ev, self.session.turn if self.session is not None else 0)
            if self.usage.reached and self.engine.calls.budget_wrap_up(self.call_id or ""):
                self.end_reason = self.end_reason or "budget reached"
                self._check_hangup()  # the farewell the provider was told to say ends the call
        elif isinstance(ev, rt.ProviderNotice):
            self._notice(ev)

    async def _flush(self, item_id: str | None) -> None:
        """Barge-in: drop the assistant's queued audio and tell the provider how much of it was heard."""
        assert self.playout is not None
        self._cutting()
        cut = self.playout.interrupt(item_id)
        if cut is not None:
            self.barge_ins += 1
            log.info("barge-in on %s: %s cut after %.0f ms", self.call_id, cut[0], cut[1])
            await self._report_played(*cut)

    async def _report_played(self, item_id: str | None, played_ms: float) -> None:
        assert self.live is not None  # there is audio to cut only once the session is live
        try:
            await self.live.played(item_id, played_ms)
        except ProviderError as e:
            log.warning("barge-in report to %s failed: %s", self._provider_name, e)

    def _notice(self, ev: rt.ProviderNotice) -> None:
        message = (
            ev.message if ev.message.startswith(f"{self._provider_name}:") else f"{self._provider_name}: {ev.message}"
        )
        if ev.fatal:
            self.end_reason = self.end_reason or message
            self._done.set()
            return
        log.warning("call %s: %s", self.call_id, message)
        self.engine.bus.publish(EngineError(message=message, call_id=self.call_id))

    async def _watch(self, sub: Any) -> None:
        async for ev in sub:
            if self.session is None or getattr(ev, "call_id", None) != self.session.call_id:
                continue
            if isinstance(ev, ElicitationRequested | ElicitationWaiting | ElicitationResolved):
                self.questions.on_event(ev)
                if self._in is not None:  # only while a question is open: the frame's hot path stays as it was
                    self._in.listener = self.questions.hear if self.questions.open else None
            elif isinstance(ev, AnnouncementRequested) and not self.questions.open:  # never over a question
                self._spawn(self._announce(ev), "announce")
            elif isinstance(ev, CallEnded):
                self.end_reason = self.end_reason or ev.reason
                self._done.set()

    async def _announce(self, ev: AnnouncementRequested) -> None:
        assert self.live is not None  # announcements are for this call's id, known once the session is live
        try:
            said = await self.live.announce(ev.text)
        except ProviderError as e:
            self.engine.bus.publish(EngineError(message=f"announcement not sent: {e}", call_id=self.call_id))
            return
        if said:  # handed to the provider's own mechanism, which says it without talking over the model
            self.engine.bus.publish(AnnouncementPlayed(call_id=ev.call_id, text=ev.text, reason=ev.reason))
        else:
            log.debug("%s has no announcement mechanism: %r not said", self._provider_name, ev.text)

    def _check_hangup(self) -> None:
        if self._farewell.check(self.session):
            self._spawn(self._hang_up(), "hangup")

    async def _hang_up(self) -> None:
        """``hangup_call`` ran: end the call once the farewell has played out."""
        await self._farewell.played(self.playout, self._provider_name)
        self.end_reason = self.end_reason or "hangup"
        self._done.set()

    async def _finished(self) -> None:
        """The input has ended and the provider has answered everything (then stayed quiet for ``settle_s``)."""
        assert self.playout is not None and self._in is not None
        await self._in.ended.wait()
        self.questions.input_ended()
        while True:
            await self.playout.drained()
            await self._said.join()
            self._activity.clear()
            if self.playout.pending or self._said.pending:
                continue
            busy = self._awaiting or self.questions.open
            try:
                async with asyncio.timeout(self.response_timeout_s if busy else self.settle_s):
                    await self._activity.wait()
            except TimeoutError:
                if busy:
                    log.warning("%s owed an answer too long; ending %s", self._provider_name, self.call_id)
                return

    async def _shutdown(self, tasks: list[asyncio.Task[Any]], sub: Any) -> None:
        self._closing = True
        self._set_awaiting(False)
        if self.playout is not None:
            self.playout.interrupt()
        for t in [*tasks, *self._side]:
            t.cancel()
        await asyncio.gather(*tasks, *self._side, return_exceptions=True)
        await self.questions.aclose()
        session = self.session
        if session is not None:
            if session.active:
                await self.engine.end_call(session.call_id, self.end_reason or "caller finished")
            if self.end_reason is None:
                self.end_reason = session.end_reason
        sub.close()
        if self.close_backend:
            await self.backend.close()
        self._refresh_state()

    # ------------------------------------------------------------------------------------------------ plumbing

    @property
    def _provider_name(self) -> str:
        return self.session.provider if self.session is not None else (self.provider or self.context)

    def _set_awaiting(self, on: bool) -> None:
        """The provider owes an answer: on file runs the input waits (bounded by ``response_timeout_s``)."""
        if on == self._awaiting:
            return
        self._awaiting = on
        self.pacer.add_busy(1 if on else -1)
        if self._awaiting_timer is not None:
            self._awaiting_timer.cancel()
            self._awaiting_timer = None
        if on:
            loop = asyncio.get_running_loop()
            self._awaiting_timer = loop.call_later(self.response_timeout_s, self._set_awaiting, False)
        self._refresh_state()

    def _recorded(self) -> None:
        """A transcript was recorded (a tool may have run meanwhile): look for a hangup."""
        self._activity.set()
        self._check_hangup()

    def _task_ended(self, task: asyncio.Task[Any]) -> None:
        """A part of the call failed (the sound device, a bug): the call ends, saying which part and why."""
        if not task.cancelled() and (exc := task.exception()) is not None and not self._closing:
            self.end_reason = self.end_reason or f"{task.get_name()} failed: {type(exc).__name__}: {exc}"
            self._done.set()

    def _cutting(self) -> None:
        """Barge-in is about to stop the agent's audio: mark it on the timeline and in the turn's playout."""
        if self.playout is not None and self.playout.playing:
            self.speaking.barge_in()
            if self.timing is not None and self.call_id is not None:
                self.timing.cut(self.call_id)

    def _on_playing(self, playing: bool) -> None:
        self._activity.set()
        if not playing and self.timing is not None and self.call_id is not None:
            self.timing.played(self.call_id, time.perf_counter())
        self._refresh_state()

    def _spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        task = asyncio.create_task(coro, name=f"realtime:{self.call_id}:{what}")
        self._side.add(task)
        task.add_done_callback(self._side.discard)

    def _refresh_state(self) -> None:
        if self._closing:
            new = CallState.ENDED
        elif self.playout is not None and self.playout.playing:
            new = CallState.SPEAKING
        elif self._caller_speaking:
            new = CallState.HEARING
        elif self._awaiting or self.session is None:
            new = CallState.THINKING if self.session is not None else CallState.STARTING
        else:
            new = CallState.LISTENING
        if new != self.state:
            self.speaking.state(self.call_id, new)
            self.state = new
            if self.on_state is not None:
                self.on_state(new)

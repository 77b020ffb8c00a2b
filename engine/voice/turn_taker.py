"""The turns of a cascaded voice call: each utterance transcribed, said to the engine, and its answer spoken.

Why it exists: ``VoiceCall`` (engine.voice.pipeline) wires the caller's audio, the speaker and the call's life
together; taking the turns is a job of its own with its own state (the queue of utterances, the turn thinking
now, the one a barge-in abandoned, the CPU seconds already counted). ``TurnTaker`` holds it: ``put`` queues an
utterance, ``run`` answers them in order, ``deliver`` speaks what the engine says (the greeting, replies, the
farewell, the operator's say-now lines), ``cancel_thinking`` abandons a turn that is still thinking.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from engine.sessions.session import CallError, CallSession
from engine.sessions.steering import is_steering
from engine.usage.report import UsageReport
from engine.voice.call_host import TurnStats, VoiceHost
from engine.voice.options import VoiceOptions
from engine.voice.pacing import Pacer
from engine.voice.speaker import Speaker
from engine.voice.stt import Recognizer
from engine.voice.vad import Utterance

log = logging.getLogger(__name__)


class TurnTaker:
    def __init__(
        self,
        engine: VoiceHost,
        recognizer: Recognizer,
        speaker: Speaker,
        pacer: Pacer,
        options: VoiceOptions,
        session: Callable[[], CallSession | None],
        on_session: Callable[[CallSession], None],
        refresh: Callable[[], None],
    ) -> None:
        self.engine, self.recognizer, self.speaker, self.pacer, self.options = (
            engine,
            recognizer,
            speaker,
            pacer,
            options,
        )
        #: The call's session as the driver knows it; ``on_session`` tells the driver the one the greeting came on.
        self.session, self.on_session = session, on_session
        self.refresh = refresh  # the driver's state may have changed
        self.timing = engine.timing_book
        self.turns: list[TurnStats] = []
        self.phase = "idle"  # "idle" | "thinking" | "delivering"
        self._utterances: asyncio.Queue[tuple[Utterance, float]] = asyncio.Queue()
        self._turn_task: asyncio.Future[Any] | None = None
        self._cancelled_turn: asyncio.Future[Any] | None = None
        self._pending: TurnStats | None = None
        self._greeted = False
        self._cpu_counted = 0.0  # the synthesiser's CPU seconds already on the call's meter

    def put(self, utt: Utterance) -> None:
        """An utterance the endpointer closed now: a turn to take."""
        self.pacer.add_busy(1)
        self._utterances.put_nowait((utt, time.perf_counter()))

    async def drained(self, input_ended: asyncio.Event) -> None:
        """The input has ended and every utterance has been answered."""
        await input_ended.wait()
        await self._utterances.join()

    def cancel_thinking(self) -> bool:
        """Abandon the turn when it is still thinking (its answer not begun); True when one was."""
        task = self._turn_task
        if self.phase != "thinking" or task is None or task.done():
            return False
        self._cancelled_turn = task
        task.cancel()
        return True

    def thinking_turn(self) -> int | None:
        """The turn that is thinking now (an announcement belongs to it), else None."""
        session = self.session()
        if self.phase != "thinking" or session is None:
            return None
        return session.turn

    async def run(self) -> None:
        while True:
            utt, ended_at = await self._utterances.get()
            try:
                await self._handle(utt, ended_at)
            except CallError as exc:  # the call ended while this utterance was on its way
                log.debug("utterance dropped: %s", exc)
            finally:
                self.pacer.add_busy(-1)
                self._utterances.task_done()
                self.refresh()

    async def _handle(self, utt: Utterance, ended_at: float) -> None:
        t0 = time.perf_counter()
        transcript = await self.recognizer.transcribe(utt.audio)
        stats = TurnStats(transcript.text, transcript.source, utt.audio.duration, time.perf_counter() - t0, ended_at)
        self.turns.append(stats)
        session = self.session()
        if not transcript.text or session is None or not session.active:
            return
        if self.timing is not None:  # the caller stopped talking when the endpointer's silence began
            silence = self.options.vad_silence_ms / 1000 if utt.reason == "silence" else 0.0
            self.timing.heard(session.call_id, ended_at - silence, ended_at, t0 + stats.stt_s)
        self._pending = stats
        self.phase = "thinking"
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
            self.phase = "idle"
            self._pending = None
            self._count_cpu(session.call_id, session.turn, transcript.cpu_s)

    def _count_cpu(self, call_id: str, turn: int, stt_s: float) -> None:
        """The turn's CPU seconds (its recognition, and the synthesis since the last turn) on the call's meter."""
        synth = self.speaker.synthesizer
        spent, self._cpu_counted = stt_s + synth.cpu_s - self._cpu_counted, synth.cpu_s
        if (m := self.engine.calls.usage_meter(call_id)) is not None:
            m.add(UsageReport(cpu_s=spent), turn)

    async def deliver(self, session: CallSession, text: str) -> None:
        """The engine says ``text`` on the call: spoken, and returns once it has played."""
        if self.session() is None:
            self.on_session(session)
        if is_steering():  # the operator's say-now line: spoken after what plays, not the answer of the turn
            await self.speaker.say(text, "steer", session.turn)
            return
        kind = "greeting" if not self._greeted and session.turn == 0 else "reply"
        if session.hangup_requested:
            kind = "farewell"
        self._greeted = True
        stats = self._pending
        if self.phase == "thinking":
            self.phase = "delivering"
        pb = await self.speaker.say(text, kind, session.turn)
        if stats is not None and pb is not None and stats.first_audio is None:
            stats.first_audio = pb.first_audio
            if self.timing is not None and pb.first_audio is not None:
                self.timing.first_audio(session.call_id, pb.first_audio)
                self.timing.played(session.call_id, time.perf_counter())

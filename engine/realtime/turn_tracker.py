"""Who owes whom on a realtime call: the caller talking, the provider owing an answer, and each turn's stats.

Why it exists: a speech-to-speech provider takes the turns itself; the driver (``RealtimeVoiceCall``) only sees
its events. From them this tracker keeps what the driver's state, the ``Pacer`` and the latency waterfall need:
whether the caller is talking, whether the provider owes an answer (then file runs hold their input, bounded by
``response_timeout_s``), and one ``TurnStats`` per caller utterance with the answer's first audio; ``settled``
says when a call whose input has ended is over because nobody owes anything any more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from engine.calls.turn_timing import TurnTimingBook
from engine.realtime.playout import Playout
from engine.realtime.relay import TranscriptRelay
from engine.voice.call_host import TurnStats
from engine.voice.call_life import Questions
from engine.voice.pacing import Pacer


class TurnTracker:
    def __init__(
        self,
        pacer: Pacer,
        timing: TurnTimingBook | None,
        call_id: Callable[[], str | None],
        response_timeout_s: float,
        refresh: Callable[[], None],
    ) -> None:
        self.pacer, self.timing, self.call_id = pacer, timing, call_id
        self.response_timeout_s = response_timeout_s
        self.refresh = refresh  # the driver's state may have changed
        self.turns: list[TurnStats] = []
        #: The provider owes an answer (the caller stopped talking, or tools ran).
        self.awaiting = False
        self.caller_speaking = False
        self._speech_from = 0.0  # since when the caller talks (seconds of caller audio sent)
        self._response_audio = False  # the response in flight has sent audio
        self._timer: asyncio.TimerHandle | None = None

    def set_awaiting(self, on: bool) -> None:
        """The provider owes an answer: on file runs the input waits (bounded by ``response_timeout_s``)."""
        if on == self.awaiting:
            return
        self.awaiting = on
        self.pacer.add_busy(1 if on else -1)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if on:
            self._timer = asyncio.get_running_loop().call_later(self.response_timeout_s, self.set_awaiting, False)
        self.refresh()

    def assistant_audio(self) -> None:
        """The provider sent answer audio: the answer it owed has begun (its first audio goes on the turn)."""
        self._response_audio = True
        if not self.awaiting:
            return
        self.set_awaiting(False)
        if self.turns and self.turns[-1].first_audio is None:
            self.turns[-1].first_audio = time.perf_counter()
            if self.timing is not None and (call_id := self.call_id()) is not None:
                self.timing.first_audio(call_id, self.turns[-1].first_audio)

    def caller_text(self, text: str) -> None:
        """The provider's transcript of what the caller said: the text of the last turn that has none."""
        if self.turns and not self.turns[-1].text:
            self.turns[-1].text = text

    def caller_started(self, sent_s: float) -> None:
        """The provider hears the caller start talking (``sent_s``: seconds of caller audio sent so far)."""
        self.caller_speaking, self._speech_from = True, sent_s
        self.set_awaiting(False)

    def caller_stopped(self, sent_s: float) -> None:
        """The caller stopped: a turn, and the provider owes its answer."""
        self.caller_speaking = False
        heard = round(max(0.0, sent_s - self._speech_from), 3)
        self.turns.append(TurnStats("", "provider", heard, 0.0, time.perf_counter()))
        if self.timing is not None and (call_id := self.call_id()) is not None:
            self.timing.heard(call_id, self.turns[-1].utterance_end, realtime=True)
        self.set_awaiting(True)

    def response_done(self, status: str) -> None:
        """A response is complete: one without audio that completed called tools, so the answer is still owed."""
        self.set_awaiting(status == "completed" and not self._response_audio)
        self._response_audio = False

    async def settled(
        self, playout: Playout, said: TranscriptRelay, activity: asyncio.Event, questions: Questions, quiet_s: float
    ) -> bool:
        """Wait until every answer has played and been recorded and then the provider stayed quiet (no ``activity``)
        for ``quiet_s``, or for ``response_timeout_s`` while it owes an answer or a question is open: True then
        (the provider owed an answer too long)."""
        while True:
            await playout.drained()
            await said.join()
            activity.clear()
            if playout.pending or said.pending:
                continue
            busy = self.awaiting or bool(questions.open)
            try:
                async with asyncio.timeout(self.response_timeout_s if busy else quiet_s):
                    await activity.wait()
            except TimeoutError:
                return busy

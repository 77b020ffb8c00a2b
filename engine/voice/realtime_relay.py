"""What a realtime call tells the engine as it goes: final transcripts in order, and when the farewell is over.

Why it exists: the provider's events must keep flowing (audio every 20 ms) while the engine records a transcript,
because recording one runs the turn hooks and may push a new tool view to the provider (an ``update_tools`` that
can take a round trip, or a reconnect). ``TranscriptRelay`` hands transcripts to the engine from its own task, in
order. ``Farewell``: after ``hangup_call`` ran, the call ends once the provider's next answer with audio (the
farewell) is complete and has played out — or after ``timeout_s`` when no farewell comes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from engine.sessions.session import CallError, CallSession
from engine.voice.realtime_host import RealtimeCallControl
from engine.voice.realtime_playout import Playout

log = logging.getLogger(__name__)


class TranscriptRelay:
    def __init__(self, calls: RealtimeCallControl, recorded: Callable[[], None]) -> None:
        self.calls = calls
        self.call_id: str | None = None
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        #: Called after each transcript was recorded (the driver re-checks hangup and idleness then).
        self.recorded = recorded

    def put(self, role: str, text: str) -> None:
        self._queue.put_nowait((role, text))

    @property
    def pending(self) -> bool:
        return self._queue.qsize() > 0

    async def join(self) -> None:
        await self._queue.join()

    async def run(self) -> None:
        while True:
            role, text = await self._queue.get()
            try:
                if self.call_id is not None:
                    if role == "user":
                        await self.calls.realtime_caller_said(self.call_id, text)
                    else:
                        await self.calls.realtime_agent_said(self.call_id, text)
            except CallError as e:  # the call ended meanwhile
                log.debug("transcript dropped: %s", e)
            finally:
                self._queue.task_done()
                self.recorded()


class Farewell:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.requested = False
        self._audio = False
        self._heard = asyncio.Event()

    def check(self, session: CallSession | None) -> bool:
        """True the first time the call's ``hangup_call`` is seen (from then on, audio counts as farewell)."""
        if self.requested or session is None or not session.hangup_requested:
            return False
        self.requested = True
        return True

    def on_audio(self) -> None:
        if self.requested:
            self._audio = True

    def on_response_done(self) -> None:
        if self.requested and self._audio:
            self._heard.set()

    async def played(self, playout: Playout | None, who: str) -> None:
        """Wait for the farewell to arrive (bounded) and then to play out."""
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._heard.wait()
        except TimeoutError:
            log.info("no farewell from %s within %.0f s: hanging up", who, self.timeout_s)
        if playout is not None:
            await playout.drained()

"""What a realtime call tells the engine as it goes: final transcripts in order, and when the farewell is over.

Why it exists: a transcript must be recorded the moment it arrives (so the caller's words come before the tool
calls of their turn, in history and on the bus), but the tool view that turn computes may have to reach the
provider (an ``update_tools`` that can take a round trip, or a reconnect) while the provider's events keep
flowing (audio every 20 ms). ``TranscriptRelay`` records at once and pushes views from its own task, in order.
``Farewell``: after ``hangup_call`` ran, the call ends once the provider's next answer with audio (the farewell)
is complete and has played out — or after ``timeout_s`` when no farewell comes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Literal

from engine.realtime.host import RealtimeCallControl
from engine.realtime.playout import Playout
from engine.sessions.session import CallError, CallSession

log = logging.getLogger(__name__)


class TranscriptRelay:
    def __init__(self, calls: RealtimeCallControl, recorded: Callable[[], None]) -> None:
        self.calls = calls
        self.call_id: str | None = None
        self._pushes: asyncio.Queue[None] = asyncio.Queue()
        #: Called after each view push (the driver re-checks hangup and idleness then).
        self.recorded = recorded

    def put(self, role: Literal["user", "assistant"], text: str) -> None:
        """Record a final transcript now (history, ``transcript.added``, turn hooks); push the view after it."""
        if self.call_id is None:
            return
        try:
            self.calls.realtime_record(self.call_id, role, text)
        except CallError as e:  # the call ended meanwhile
            log.debug("transcript dropped: %s", e)
            return
        self._pushes.put_nowait(None)

    @property
    def pending(self) -> bool:
        return self._pushes.qsize() > 0

    async def join(self) -> None:
        await self._pushes.join()

    async def run(self) -> None:
        while True:
            await self._pushes.get()
            try:
                if self.call_id is not None:
                    await self.calls.realtime_push_view(self.call_id)
            finally:
                self._pushes.task_done()
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

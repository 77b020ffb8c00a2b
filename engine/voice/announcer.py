"""Slow-tool announcements on a voice call: speak "one moment…" while a tool runs, never over the answer.

The budget layer decides *when* a tool is slow (its expected p50 is over its ``slow_response_threshold_ms``, or it
is still running once that threshold passed) and publishes ``AnnouncementRequested`` with the tool's
``slow_response_message``, at most once per turn. The ``Announcer`` decides whether it can still be *spoken*:

* only while this call's turn is still thinking (the answer has not started), and at most once per turn;
* it goes through the call's ``Speaker``, so it never overlaps anything; when the answer becomes ready while the
  announcement plays, the answer waits until the announcement has finished (finish first, never cut);
* when the answer is ready before the announcement gets the speaker, the announcement is skipped;
* when it finished playing, ``AnnouncementPlayed`` is published (a cut-off or skipped one is not "played").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from engine.events import AnnouncementPlayed, AnnouncementRequested, EventBus
from engine.voice.speaker import Speaker

log = logging.getLogger(__name__)


class Announcer:
    def __init__(self, bus: EventBus, speaker: Speaker, thinking_turn: Callable[[], int | None]) -> None:
        """``thinking_turn()`` is the number of the turn still thinking on this call, or None."""
        self.bus = bus
        self.speaker = speaker
        self.thinking_turn = thinking_turn
        self.played: list[str] = []
        self.skipped: list[str] = []
        self._announced_turns: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def request(self, event: AnnouncementRequested) -> bool:
        """Handle one request for this call; True when it was queued for the speaker."""
        turn = self.thinking_turn()
        if turn is None or turn in self._announced_turns:
            self.skipped.append(event.text)
            log.debug("announcement %r skipped: no turn thinking, or already announced", event.text)
            return False
        self._announced_turns.add(turn)
        task = asyncio.create_task(self._speak(event, turn), name=f"voice:announce:{event.call_id}:{turn}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _speak(self, event: AnnouncementRequested, turn: int) -> None:
        pb = await self.speaker.say(event.text, "announcement", turn, only_if=lambda: self.thinking_turn() == turn)
        if pb is None:
            self.skipped.append(event.text)
            log.debug("announcement %r skipped: the answer was ready first", event.text)
            return
        if pb.completed:
            self.played.append(event.text)
            self.bus.publish(AnnouncementPlayed(call_id=event.call_id, text=event.text, reason=event.reason))

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

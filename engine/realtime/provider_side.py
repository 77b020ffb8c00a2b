"""What a realtime call tells its provider beside the caller's audio, and what it says of the provider on the bus.

Why it exists: besides streaming audio both ways, ``RealtimeVoiceCall`` (engine.realtime.call) cuts the agent off
(a barge-in: the playout flushed, the timeline marked, the provider told how much of its answer was heard), hands
slow-tool announcements to the provider's own mechanism, and turns the provider's notices into bus errors or the
call's end. ``ProviderSide`` is that job; the session and the playout exist only once the provider is connected,
so it asks for them when it needs them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from engine.calls.turn_timing import TurnTimingBook
from engine.events import AnnouncementPlayed, AnnouncementRequested, EngineError
from engine.providers.base import ProviderError
from engine.realtime.playout import Playout
from engine.realtime.session import ProviderNotice, RealtimeSession
from engine.voice.call_life import CallLife

log = logging.getLogger(__name__)


class ProviderSide:
    def __init__(
        self,
        life: CallLife,
        timing: TurnTimingBook | None,
        call_id: Callable[[], str | None],
        provider_name: Callable[[], str],
        live: Callable[[], RealtimeSession | None],
        playout: Callable[[], Playout | None],
    ) -> None:
        self.life, self.bus, self.speaking, self.timing = life, life.bus, life.speaking, timing
        self.call_id, self.provider_name, self.live, self.playout = call_id, provider_name, live, playout
        #: Times the agent was cut off while it talked.
        self.barge_ins = 0

    def cut(self, item_id: str | None = None) -> tuple[str | None, float] | None:
        """Cut the agent's audio now (``item_id``: only when that item plays); the item cut and the ms of it
        heard, None when nothing was playing or queued."""
        playout = self.playout()
        if playout is None:
            return None
        if playout.playing:  # mark the barge-in on the timeline and in the turn's waterfall
            self.speaking.barge_in()
            if self.timing is not None and (call_id := self.call_id()) is not None:
                self.timing.cut(call_id)
        cut = playout.interrupt(item_id)
        if cut is not None:
            self.barge_ins += 1
        return cut

    async def flush(self, item_id: str | None) -> None:
        """The provider heard the caller start (or cut its answer): drop the queued audio, report what was heard."""
        cut = self.cut(item_id)
        if cut is not None:
            log.info("barge-in on %s: %s cut after %.0f ms", self.call_id(), cut[0], cut[1])
            await self.played(*cut)

    async def played(self, item_id: str | None, played_ms: float) -> None:
        """Tell the provider how much of a cut answer the caller heard."""
        live = self.live()
        assert live is not None  # there is audio to cut only once the session is live
        try:
            await live.played(item_id, played_ms)
        except ProviderError as e:
            log.warning("barge-in report to %s failed: %s", self.provider_name(), e)

    async def announce(self, ev: AnnouncementRequested) -> None:
        """A slow-tool announcement, handed to the provider's own mechanism (said without talking over the model)."""
        live = self.live()
        assert live is not None  # announcements are for this call's id, known once the session is live
        try:
            said = await live.announce(ev.text)
        except ProviderError as e:
            self.bus.publish(EngineError(message=f"announcement not sent: {e}", call_id=self.call_id()))
            return
        if said:
            self.bus.publish(AnnouncementPlayed(call_id=ev.call_id, text=ev.text, reason=ev.reason))
        else:
            log.debug("%s has no announcement mechanism: %r not said", self.provider_name(), ev.text)

    def notice(self, ev: ProviderNotice) -> None:
        """A provider's notice: a fatal one ends the call with it as the reason, others go on the bus."""
        name = self.provider_name()
        message = ev.message if ev.message.startswith(f"{name}:") else f"{name}: {ev.message}"
        if ev.fatal:
            self.life.end(message)
            return
        log.warning("call %s: %s", self.call_id(), message)
        self.bus.publish(EngineError(message=message, call_id=self.call_id()))

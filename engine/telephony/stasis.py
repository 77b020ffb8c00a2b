"""The Stasis application: a phone call enters, gets a bridge and a media channel, talks to its context, and leaves
nothing behind.

Why it exists: this is the call lifecycle AVA promises on Asterisk. For each caller's ``StasisStart`` the app
answers, creates a mixing bridge, opens an RTP stream on its own port, asks for an ``externalMedia`` channel that
sends the caller's audio there (and learns where to send the answer from ``UNICASTRTP_LOCAL_ADDRESS``/``PORT``),
bridges caller and media, and runs the context's voice driver (pipeline or realtime) over a ``PhoneBackend``, with
the caller's name and number filling the prompt. The context comes from the channel variable ``AI_CONTEXT``, else
the Stasis arguments (``context=NAME`` or a context's name), else ``asterisk.default_context``. The call ends when
the caller hangs up (``StasisEnd``/``ChannelHangupRequest``), when the agent hangs up (after the farewell played),
or when the engine stops; every path releases the same things: media channel, bridge, RTP port, provider session,
and the caller's channel if it is still up. When the engine stops, the AI falls silent, the caller hears a farewell
if it fits the stop's budget, and the release runs inside that budget (``engine.telephony.farewell``); a call a
human has is left to them. Once the events socket is first up, and before any call is taken, what an earlier run
of this engine left in Asterisk is released (``engine.telephony.owned``). After the events socket reconnects,
calls whose channels are gone are ended. With ``asterisk.media: websocket`` the media channel is chan_websocket
instead (``engine.telephony.connect``), and the voice driver runs over a ``PhoneBackend`` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from engine.calls.capacity import CallRefused, continuing, on_leg
from engine.config.models import AsteriskConfig
from engine.core.tasks import Spawn
from engine.realtime.call import RealtimeVoiceCall
from engine.realtime.driver import voice_call
from engine.realtime.host import RealtimeHost
from engine.sessions.session import CallError
from engine.telephony.ari import CONNECTED, RECONNECTED, AriClient, AriError
from engine.telephony.connect import connect_media
from engine.telephony.farewell import AI_STOP_WAIT_S, StopBudget, bounded, hush, say_farewell
from engine.telephony.handback import brief_ai
from engine.telephony.link import AsteriskLink
from engine.telephony.media import backend_for
from engine.telephony.monitor import CallMonitor
from engine.telephony.owned import ResourceIds, parse, release_leftovers
from engine.telephony.phone_call import PhoneCall, media_label, pick_context
from engine.telephony.rtp import PortPool
from engine.telephony.takeover import switch_monitor
from engine.telephony.transfer import PhoneTransfers
from engine.tools.builtin.transfer import PhoneLines
from engine.voice.backend import AudioBackend
from engine.voice.pipeline import VoiceCall

log = logging.getLogger(__name__)

CALLER_GONE = ("StasisEnd", "ChannelHangupRequest", "ChannelDestroyed")


class CallFactory(Protocol):
    def __call__(self, backend: AudioBackend, context: str, **kw: Any) -> VoiceCall | RealtimeVoiceCall: ...


class StasisApp:
    def __init__(
        self,
        ari: AriClient,
        config: AsteriskConfig,
        host: RealtimeHost,
        spawn: Spawn,
        contexts: Callable[[], Sequence[str]],
        pool: PortPool | None = None,
        make_call: CallFactory | None = None,
        lines: PhoneLines | None = None,
        admit: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
        ids: ResourceIds | None = None,
    ) -> None:
        self.ari = ari
        #: The ids this engine gives what it creates in Asterisk (``engine.telephony.owned``).
        self.ids = ids or ResourceIds.for_engine(None, config.app_name)
        #: Holds a new caller's place while the call is set up, or raises CallRefused (engine.calls.capacity.reserve).
        self.admit = admit
        self.config = config
        self.host = host
        self.contexts = contexts
        self.pool = pool or PortPool(config.rtp_port_start, config.rtp_port_end)
        self._make_call = make_call or (lambda backend, context, **kw: voice_call(host, backend, context, **kw))
        self.lines = lines or PhoneLines()
        self.calls: dict[str, PhoneCall] = {}
        self.transfers: dict[str, PhoneTransfers] = {}  # caller channel id -> its transfers
        #: Channels the engine created itself (media, snoop, originated): their events are not new callers.
        self.own_channels: set[str] = set()
        self.link = AsteriskLink(ari, config, self.ids, self.own_channels, spawn)
        self._stopping = False
        #: Set with the stop's budget: every wait of a call's task gives way to it.
        self._budget: StopBudget | None = None
        self._stopped = asyncio.Event()
        self.monitor = CallMonitor(self.link, self.pool)

    def reconfigure(self, config: AsteriskConfig) -> None:
        """Settings that keep the connection: new calls and the operator's line take them, live calls go on."""
        self.config = config
        self.link = dataclasses.replace(self.link, config=config)
        self.monitor.link = self.link
        self.pool.start, self.pool.end = config.rtp_port_start, config.rtp_port_end

    # ---------------------------------------------------------------------------------------------- events

    async def run(self) -> None:
        """Handle events until ``stop``; the client reconnects on its own."""
        async for event in self.ari.events():
            if self._stopping:
                return
            try:
                await self.on_event(event)
            except Exception:  # one bad event must not end telephony
                log.exception("telephony: handling %s failed", event.get("type"))

    async def on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        raw = event.get("channel")
        channel: dict[str, Any] = raw if isinstance(raw, dict) else {}
        cid = str(channel.get("id", ""))
        args = [str(a) for a in event.get("args") or []]
        if kind == "StasisStart" and cid and (cid in self.own_channels or parse(cid) is not None):
            self._stray(cid)  # an awaited one went to its waiter (AriClient.entering): nobody waits for this one
        elif kind == "StasisStart" and cid and cid not in self.calls:
            call = PhoneCall(
                cid,
                str(channel.get("caller", {}).get("name", "")),
                str(channel.get("caller", {}).get("number", "")),
                bus=self.host.bus,
            )
            self.calls[cid] = call
            self.link.spawn(self._take_call(call, channel, args), name=f"phone:{cid}")
        elif kind in CALLER_GONE and cid in self.calls:
            self.calls[cid].caller_left(kind)
        elif kind in CALLER_GONE and cid in self.own_channels:
            self._own_channel_gone(cid, int(event.get("cause", 16) or 16))
        elif kind == CONNECTED:  # awaited: no call is taken before what an earlier run left is released
            try:
                await release_leftovers(self.ari, self.ids, self.config.request_timeout_s)
            except AriError as e:
                log.warning("telephony: cannot look for what an earlier run left in Asterisk: %s", e)
        elif kind == RECONNECTED:
            self.link.spawn(self._recover(), name="phone:recover")

    def _stray(self, cid: str) -> None:
        """A ``StasisStart`` nobody waits for of a channel an engine made: never a caller. This engine's (its request
        or wait gave up, its transfer ended) is hung up; another running engine's is left alone."""
        owned = parse(cid)
        if cid in self.own_channels or (owned is not None and self.ids.left_over(owned)):
            log.warning("telephony: channel %s entered Stasis too late (nothing waits for it); hanging it up", cid)
            self.own_channels.discard(cid)
            self.link.spawn(self._hang_up_quietly(cid), name=f"phone:stray:{cid}")

    async def _hang_up_quietly(self, cid: str) -> None:
        with contextlib.suppress(AriError):
            await self.ari.hangup(cid)

    def _own_channel_gone(self, cid: str, cause: int) -> None:
        """A channel the engine made is gone: a call's media channel, a transfer target that failed, or the agent."""
        if (call := next((c for c in self.calls.values() if c.media_channel_id == cid), None)) is not None:
            call.media_lost()
            return
        for caller, transfers in self.transfers.items():
            call = self.calls.get(caller)
            current = transfers.current
            if current is not None and current.channel_id == cid and current.state == "answered":
                if call is not None:
                    call.end_reason = "agent hung up"
                    call.bridge_done.set()
                return
            if transfers.on_gone(cid, cause):
                return

    async def _recover(self) -> None:
        """After the events socket came back: calls whose channel is gone while we were deaf are ended."""
        try:
            alive = {c["id"] for c in await self.ari.channels()}
        except AriError as e:
            log.warning("telephony: cannot list channels after reconnecting: %s", e)
            return
        for call in list(self.calls.values()):
            if call.channel_id not in alive:
                call.caller_left("gone after reconnect")

    # ---------------------------------------------------------------------------------------------- one call

    async def _take_call(self, call: PhoneCall, channel: dict[str, Any], args: list[str]) -> None:
        place = contextlib.ExitStack()  # the caller's place from the decision on, before its session exists
        try:
            if self.admit is not None:  # refused: a busy, not an answered call that hangs (Asterisk routes it on)
                place.enter_context(self.admit())
            variables = dict(channel.get("channelvars") or {})
            if "AI_CONTEXT" not in variables:
                value = await self.ari.variable(call.channel_id, "AI_CONTEXT")
                if value:
                    variables["AI_CONTEXT"] = value
            context, source = pick_context(variables, args, list(self.contexts()), self.config.default_context)
            if context is None:
                log.warning("telephony: refusing call %s: %s", call.channel_id, source)
                call.end_reason = f"no context ({source})"
                return
            call.context = context
            log.info(
                "telephony: call %s from %s <%s> → context %s (%s)",
                call.channel_id,
                call.caller_name,
                call.caller_number,
                context,
                source,
            )
            await connect_media(self.link, self.pool, call)
            if call.caller_gone or self._stopping:
                return
            transfers = PhoneTransfers(self.link, call)
            self.transfers[call.channel_id] = transfers
            while not call.caller_gone and not self._stopping:
                await self._run_ai(call, context, transfers)
                if not call.caller_gone:
                    await self._unless_stopping(transfers.settled())  # a hand-off or a blind transfer decides
                if call.taken_over is not None:  # the operator has the caller: the AI waits for the hand-back
                    await self._unless_stopping(call.taken_over.wait())
                    call.taken_over = None
                    if call.caller_gone or self._stopping:
                        break
                    call.resume_note = call.resume_note or "I'm back. The operator handed the call back to me."
                if transfers.transferred:
                    call.agent_channel_id = transfers.current.channel_id if transfers.current else None
                    call.end_reason = "transferred"
                    await self._unless_stopping(call.bridge_done.wait())  # caller and agent talk until one leaves
                    break
                if call.resume_note is None or call.caller_gone or self._stopping:
                    break
                assert call.bridge_id is not None and call.media_channel_id is not None
                await self.ari.add_to_bridge(call.bridge_id, [call.media_channel_id])  # the AI comes back
        except CallRefused as e:  # full or draining; or a drain came while the call was being connected
            await self._busy(call, str(e))
        except (AriError, CallError) as e:  # CallError: the caller left before the AI's call had begun
            log.warning("telephony: call %s failed: %s", call.channel_id, e)
            call.end_reason = str(e)
        finally:
            with place:
                await (self._end_on_stop(call, self._budget) if self._budget is not None else self._release(call))

    async def _busy(self, call: PhoneCall, why: str) -> None:
        log.warning("telephony: refusing call %s with busy: %s", call.channel_id, why)
        call.end_reason = f"busy: {why}"
        with contextlib.suppress(AriError):
            await self.ari.hangup(call.channel_id, "busy")
        call.caller_gone = True

    async def _run_ai(self, call: PhoneCall, context: str, transfers: PhoneTransfers) -> None:
        """One AI conversation on the call, registered for the transfer tools while it runs."""
        assert call.stream is not None
        note, call.resume_note = call.resume_note, None
        briefing, call.handback_note = call.handback_note, None
        earlier = call.voice.session.history.items() if briefing and call.voice and call.voice.session else ()
        again = call.voice is not None  # back from a transfer or the operator: not a new call (a drain lets it in)
        call.backend = backend_for(call.stream)
        call.voice = self._make_call(
            call.backend,
            context,
            caller_name=call.caller_name or None,
            caller_number=call.caller_number or None,
            close_backend=False,
        )
        voice = call.voice
        registered: str | None = None

        async def register() -> None:
            nonlocal registered
            await voice.started.wait()
            if voice.call_id is not None:
                registered = voice.call_id
                self.lines.register(voice.call_id, transfers)
                if voice.session is not None:  # the console shows phone calls with their channel and media
                    voice.session.channel_id = call.channel_id
                    voice.session.media = media_label(call.stream)
                if briefing:  # before anything is said: the AI's next answer knows what it missed
                    await brief_ai(voice, self.host.bus, briefing, earlier)
                if note:
                    call.tell(note)

        waiter = self.link.spawn(register(), name=f"phone:{call.channel_id}:lines")
        call.ai_done.clear()
        try:
            with continuing() if again else contextlib.nullcontext(), on_leg(call.leg):
                await voice.run()
        finally:
            call.ai_done.set()
            waiter.cancel()
            if registered is not None:
                self.lines.unregister(registered)
        call.end_reason = call.end_reason or voice.end_reason or "ended"

    async def _release(self, call: PhoneCall, budget: StopBudget | None = None) -> None:
        """Free everything the call holds in Asterisk and here; every step is tried even when one fails. Under a
        stop's ``budget`` the steps run together and none outlasts it; a ``detached`` call (a human has it)
        keeps its bridge, caller and agent."""
        with contextlib.suppress(AriError, TimeoutError):
            async with asyncio.timeout(budget.left() if budget is not None else None):
                await self.monitor.close_for(call.channel_id)
        steps: list[tuple[str, Awaitable[None]]] = []
        ringing = self.transfers.get(call.channel_id)
        if ringing is not None and ringing.current is not None and ringing.current.state == "ringing":
            steps.append(("ringing transfer", self.ari.hangup(ringing.current.channel_id)))
        if call.agent_channel_id and not call.detached:
            steps.append(("agent", self.ari.hangup(call.agent_channel_id)))
        if call.media_channel_id:
            steps.append(("media channel", self.ari.hangup(call.media_channel_id)))
        if call.bridge_id and not call.detached:
            steps.append(("bridge", self.ari.destroy_bridge(call.bridge_id)))
        if not call.caller_gone and not call.detached:
            steps.append(("caller", self.ari.hangup(call.channel_id)))
        for what, e in await bounded(steps, budget):
            if not isinstance(e, AriError) or e.status != 404:  # already gone is fine
                log.warning("telephony: releasing the %s of %s failed: %s", what, call.channel_id, e)
        if call.detached:
            log.info("telephony: left call %s with the human who has it (bridge %s)", call.channel_id, call.bridge_id)
        if call.leg.hold and call.leg.call_id:  # the call ended while the operator had it
            call.leg.hold = False
            await self.host.end_call(call.leg.call_id, call.end_reason or "ended while the operator had it")
        if call.stream is not None:
            await call.stream.aclose()
        await call.aclose()
        self.transfers.pop(call.channel_id, None)
        if call.agent_channel_id:
            self.own_channels.discard(call.agent_channel_id)
        if call.media_channel_id:
            self.own_channels.discard(call.media_channel_id)
        self.calls.pop(call.channel_id, None)
        call.released.set()

    async def set_monitor(self, channel_id: str, mode: str, backend: Callable[[], AudioBackend]) -> str:
        """Put the operator on a phone call in ``mode`` (off, listen, whisper_agent, whisper_caller, takeover);
        leaving ``takeover`` hands the caller back to the AI. ``backend`` opens the operator's sound devices."""
        return await switch_monitor(self, channel_id, mode, backend)

    async def _unless_stopping(self, wait: Awaitable[Any]) -> None:
        """Wait for ``wait``, or until the engine stops."""
        waiting = asyncio.ensure_future(wait)
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({waiting, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (waiting, stopped):
                t.cancel()
            await asyncio.gather(waiting, stopped, return_exceptions=True)

    async def _end_on_stop(self, call: PhoneCall, budget: StopBudget) -> None:
        """The engine stops: the AI ends (a moment to end its turn, no more), the farewell plays when the AI's
        media is in the bridge, and the call is released. Done once, by whichever comes first: the stop or the
        call's own task; the other waits for it."""
        if call.ending:
            await call.released.wait()
            return
        call.ending = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(AI_STOP_WAIT_S):
                await call.ai_done.wait()
        transfers = self.transfers.get(call.channel_id)
        ringing = transfers is not None and transfers.current is not None and transfers.current.state == "ringing"
        blind = (
            ringing and transfers is not None and transfers.current is not None and transfers.current.mode == "blind"
        )
        if call.backend is not None and call.ai_on_the_line and not blind:
            await say_farewell(self.host, call.context, call.backend, budget, call.channel_id)
        await self._release(call, budget)

    async def stop(self) -> None:
        """End every phone call and stop handling events, inside ``STOP_BUDGET_S``: the AI stops talking, the
        caller hears the farewell (when it fits), then caller, media channel and bridge are released. A call a
        human has (an answered transfer) is left to them: only the engine's own media goes."""
        if self._budget is None:
            self._budget = StopBudget()
            self._stopping = True
            # A human who answered while the stop came is let in first (ms of ARI requests): deciding before,
            # the engine took their call for its own and destroyed the bridge the agent had just entered.
            joining = [asyncio.ensure_future(t.settled()) for t in self.transfers.values() if t.joining]
            if joining:
                _done, late = await asyncio.wait(joining, timeout=self._budget.left() / 2)
                for waiter in late:  # a hand-off that outlasted its share: its waiter must not outlive the stop
                    waiter.cancel()
            for call in list(self.calls.values()):
                transfers = self.transfers.get(call.channel_id)
                if call.agent_channel_id is None and (transfers is None or not transfers.transferred):
                    hush(call.voice, "engine stopping")
                else:  # a human has the call: the engine leaves it to them
                    call.detached = not call.bridge_done.is_set()
            self._stopped.set()
            if self.calls:
                log.info("telephony: stopping: ending %d phone call(s)", len(self.calls))
        budget = self._budget
        ending = [asyncio.ensure_future(self._end_on_stop(c, budget)) for c in list(self.calls.values())]
        if ending:
            _done, pending = await asyncio.wait(ending, timeout=budget.left() + 0.1)
            for t in pending:
                t.cancel()
            if pending:
                log.warning("telephony: %d call(s) were not released within the stop budget", len(pending))

"""One Gemini Live call: a socket per connection, resumed across tool changes, ``goAway`` and drops.

Why it exists: Gemini Live fixes its setup for the whole connection — tools cannot change in place — and the
server ends connections on its own schedule (``goAway``). Both are met the same way: the session keeps the
latest ``sessionResumptionUpdate.newHandle`` and reconnects with it (``setup.sessionResumption.handle``), so the
call survives a tool change (next turn: once the model is idle and a handle covering the turn has come; apply
now: at once, then the model is asked to go on with the new tools), a ``goAway`` and a dropped socket (with
``Backoff``). A planned reconnect waits until no call waits on a result, so none is lost. Without a handle it
reconnects fresh, replays the call's transcript as context and says so in a notice. Reconnects the provider
causes are bounded and a 1007 close ends the call with the rule it broke (``gemini_resume``).

Every text for the model (greeting, announcement, steering, the apply-now "continue", the replayed transcript)
goes by the route of the model's family (``gemini_families``: ``clientContent`` turns, or ``realtimeInput.text``
on Gemini 3.1 Live, whose replayed transcript is initial history announced in ``setup.historyConfig``).

Announcements and steering are ``gemini_steer``'s (a part the session holds); malformed server messages are
logged and ignored, unknown kinds counted (``gemini_events``); tool calls run through the gateway (``gemini_calls``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from websockets.exceptions import ConnectionClosed

from engine.core.backoff import Backoff
from engine.core.queues import until_closed
from engine.providers.rendering import RenderedTools
from engine.realtime.audio import negotiate
from engine.realtime.gemini_audio_in import CallerAudio
from engine.realtime.gemini_calls import GeminiCalls
from engine.realtime.gemini_connect import LiveAccount, Messages, open_live, scrub
from engine.realtime.gemini_events import EventReader
from engine.realtime.gemini_resume import (
    INVALID_PAYLOAD,
    ResumeBudget,
    invalid_payload,
    reconnected,
    reopen,
)
from engine.realtime.gemini_steer import GeminiSteering
from engine.realtime.gemini_wire import setup_message, transcript_replay
from engine.realtime.reporting import EngineReports
from engine.realtime.session import (
    PCM16_16K,
    PCM16_24K,
    ProviderNotice,
    RealtimeEvent,
    RealtimeSession,
    RealtimeSetup,
)
from engine.realtime.socket import BadFrame, RealtimeSocket
from engine.sessions.session import CallSession
from engine.sessions.steering import SteerKind
from engine.tools.view import ToolView

log = logging.getLogger(__name__)
#: Spoken turns replayed as context after a reconnect without a resumption handle.
_REPLAY_TURNS = 20


class GeminiLiveSession(RealtimeSession):
    input_spec = PCM16_16K
    output_spec = PCM16_24K

    def __init__(self, provider: LiveAccount, call: CallSession) -> None:
        self.p = provider
        self.call = call
        self.opts = provider.options
        self.family = provider.family
        self.name = provider.name
        self._queue: asyncio.Queue[RealtimeEvent | None] = asyncio.Queue()
        self._sock: RealtimeSocket | None = None
        self._msgs: Messages | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiter: asyncio.Task[None] | None = None
        self._setup: RealtimeSetup | None = None
        self._view: ToolView | None = None
        self._behaviour: dict[str, bool] = {}
        #: The tools as the model was given them: their names and parameter names, to read its calls back.
        self._rendered: RenderedTools | None = None
        self._calls: GeminiCalls | None = None
        self.reports = EngineReports(provider.name, log)
        self.events_in = EventReader(provider.name, self._emit, self.reports.unhandled)
        self.handle: str | None = None
        self._fresh_handle = asyncio.Event()
        self._pending_view: ToolView | None = None
        self._apply_now = False
        self._go_away = False
        self._planned: str | None = None
        self._closed = False
        self.connections = 0
        self.audio_in = CallerAudio(self.input_spec, self.opts.input_batch_ms)
        self.resumes = ResumeBudget(
            self.opts.max_resumes_per_minute, Backoff(self.opts.reconnect_backoff_ms / 1000, 10.0)
        )
        #: How the last text reached the model (route and purpose), named when the service refuses a message.
        self.last_text: str | None = None
        self.steering = GeminiSteering(
            self.name,
            self.family.text_route,
            self.events_in,
            connected=lambda: self._sock is not None,
            calls=lambda: self._calls,
            send_text=self._send_text,
        )

    # -------------------------------------------------------------------------------------------- lifecycle

    async def start(self, setup: RealtimeSetup) -> None:
        self._setup = setup
        self._view = setup.view
        self.reports.bind(setup.tools, self.call.call_id)
        self.input_spec = negotiate(setup.audio, self.p.supported_formats())  # PCM16 at the driver's rate
        self.audio_in.use(self.input_spec)
        self._calls = GeminiCalls(
            self.name, setup.tools, self.opts, self._send_responses, self._settled, self.call.history
        )
        await self._connect(setup.view, self.handle)
        self.call.shown_tools = setup.view.names
        self._reader = asyncio.create_task(self._run(), name=f"{self.name}:reader:{self.call.call_id}")
        if setup.greeting:
            await self._send_text(f"Greet the caller now by saying: {setup.greeting}", "greeting")

    async def _connect(self, view: ToolView, handle: str | None, replay: bool = False) -> None:
        """Open a connection with this call's setup; ``ProviderError`` (``SetupRefused``) otherwise. ``replay``
        without a handle: the call's transcript goes first, as the family takes initial history."""
        assert self._setup is not None
        seed = None
        if replay and handle is None:
            seed = transcript_replay(self.call.history.items(), _REPLAY_TURNS, self.family)
        tools, behaviour, rendered = self.p.tools_for(view)
        msg = setup_message(
            model=str(self.p.config.model),
            voice=self.p.config.voice,
            instructions=self._setup.instructions,
            tools=tools,
            opts=self.opts,
            handle=handle,
            temperature=self.p.config.temperature,
            max_tokens=self.p.config.max_tokens,
            history_config=seed is not None and self.family.history_needs_config,
        )
        sock, msgs = await open_live(self.p, msg, self.events_in.unexpected)
        if seed is not None:  # before the socket is the session's: no caller audio goes ahead of the history
            self.last_text = "clientContent (transcript replay)"
            try:
                await sock.send_json(seed)
            except ConnectionClosed:
                pass  # the reader sees the close
        self._sock, self._msgs = sock, msgs
        self._behaviour, self._rendered = behaviour, rendered
        self.connections += 1

    def _scrub(self, text: str) -> str:
        return scrub(self.p, text)

    async def _run(self) -> None:
        """Read until the call ends; reconnect (resume) after planned closes, goAway and drops."""
        try:
            while True:
                assert self._msgs is not None
                async for msg in self._msgs:
                    await self._dispatch(msg)
                if self._closed:
                    return
                if not await self._reconnect():
                    return
        except Exception as e:  # a bug here must end the call with a reason, never the engine
            log.exception("%s: the session reader failed", self.name)
            self._emit(ProviderNotice(f"{self.name}: session failed: {type(e).__name__}", fatal=True))
        finally:
            self._queue.put_nowait(None)

    async def _reconnect(self) -> bool:
        """The connection ended: open a new one (resuming when a handle is known); False ends the call."""
        assert self._calls is not None and self._sock is not None
        closed_reason = self._scrub(self._sock.close_reason)
        if self._sock.close_code == INVALID_PAYLOAD:  # resuming would send the refused rule-breaker again
            model = str(self.p.config.model)
            self._emit(invalid_payload(self.name, model, self.family, closed_reason, self.last_text))
            return False
        planned, self._planned = self._planned, None
        provider_caused = planned is None or self._go_away
        if planned is None and self._go_away:
            planned = "the provider ended the connection after goAway"
        self._go_away = False
        why = planned or f"the socket dropped ({closed_reason})"
        if provider_caused and not self.resumes.take():
            self._emit(self.resumes.exhausted(self.name, why))
            return False
        lost = self._calls.orphan_all()
        self._sock = None
        interrupted = self.events_in.connection_lost()
        view = self._pending_view or self._view
        assert view is not None
        handle, last = await reopen(
            lambda h: self._connect(view, h, replay=True),
            self._handle,
            self.resumes,
            self.opts.reconnect_attempts,
            at_once=planned is not None,
            closed=lambda: self._closed,
            name=self.name,
        )
        if self._closed:
            return False
        if self._sock is None:
            self._emit(ProviderNotice(f"{self.name}: reconnect failed after the socket closed: {last}", fatal=True))
            return False
        for notice in reconnected(self.name, why, handle is not None, lost):
            self._emit(notice)
        self._view = view
        self.call.shown_tools = view.names
        if self._pending_view is view:
            self._pending_view = None
        await self.audio_in.release(self._send_audio)
        if self._apply_now and interrupted:
            await self._send_text("(The tools available to you changed. Continue where you left off.)", "apply-now")
        if self._pending_view is None:
            self._apply_now = False
        else:  # the view changed again while reconnecting
            await self._maybe_reconnect()
        return True

    def _handle(self, drop: bool = False) -> str | None:
        """The resumption handle to try (``drop``: the server refused it, the next attempt starts fresh)."""
        if drop:
            self.handle = None
        return self.handle

    # -------------------------------------------------------------------------------------------- incoming

    async def _dispatch(self, msg: dict[str, Any] | bytes | BadFrame) -> None:
        if not isinstance(msg, dict):
            self.events_in.unexpected(msg, "")
            return
        assert self._calls is not None
        try:
            for call in self.events_in.read(msg, self._behaviour):
                rendered, args = self._rendered, call.args
                exposed = rendered.names.exposed_name(call.name) if rendered is not None else call.name
                if rendered is not None:  # parameter names fitted to Gemini's rule get the tool's own back
                    args = rendered.restore_arguments(call.name, args)
                self._calls.start(call.id, call.name, exposed, args, call.non_blocking)
            if self.events_in.cancelled:
                self._calls.cancel(self.events_in.cancelled)
            if self.events_in.turn_done:
                self._fresh_handle.clear()  # a handle from now on covers the finished turn
            self._resumption(msg.get("sessionResumptionUpdate"))
            if "goAway" in msg:
                left = msg["goAway"].get("timeLeft") if isinstance(msg["goAway"], dict) else None
                log.info("%s: goAway (time left %s): reconnecting with the resumption handle", self.name, left)
                self._go_away = True
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            log.warning("%s: ignored a malformed message (%s: %s)", self.name, type(e).__name__, e)
            return
        if self.events_in.turn_done:
            await self.steering.turn_done()
        if self.events_in.turn_done or self._go_away:
            await self._maybe_reconnect()

    def _resumption(self, update: Any) -> None:
        if not isinstance(update, dict) or not update.get("resumable"):
            return
        handle = update.get("newHandle")
        if isinstance(handle, str) and handle:
            self.handle = handle
            self._fresh_handle.set()

    def _emit(self, event: RealtimeEvent) -> None:
        self._queue.put_nowait(event)

    def events(self) -> AsyncIterator[RealtimeEvent]:
        return until_closed(self._queue)

    # -------------------------------------------------------------------------------------------- outgoing

    async def _send(self, msg: dict[str, Any] | str) -> bool:
        """Send ``msg`` (an object, or JSON text built by a hot path); False when there is no open connection."""
        sock = self._sock
        if sock is None:
            return False
        try:
            await (sock.send_text(msg) if isinstance(msg, str) else sock.send_json(msg))
        except ConnectionClosed:
            return False
        return True

    async def _send_text(self, text: str, why: str, *, respond: bool = True) -> bool:
        """``text`` for the model by its family's mid-call route (``respond=False``: a note, where the route can)."""
        if not await self._send(self.family.text_message(text, respond=respond)):
            return False
        self.last_text = f"{self.family.text_route} ({why})"
        return True

    async def _send_responses(self, responses: list[dict[str, Any]]) -> bool:
        self._fresh_handle.clear()
        return await self._send({"toolResponse": {"functionResponses": responses}})

    async def send_audio(self, audio: bytes) -> None:
        if not audio or self._closed:
            return
        piece = self.audio_in.join(audio)
        if piece is None:
            return  # joined with the next frame (``input_batch_ms``)
        if self._sock is None or self._planned is not None or self.audio_in.holding:
            self.audio_in.hold(piece)  # a connection is being replaced: the caller is heard once the new one is up
        elif not await self._send_audio(piece):
            self.audio_in.hold(piece)

    async def _send_audio(self, audio: bytes) -> bool:
        if not await self._send(self.audio_in.message(audio)):
            return False
        self.events_in.audio_in_ms += self.input_spec.duration_ms(len(audio))
        return True

    async def steer(self, kind: SteerKind, text: str) -> str:
        return await self.steering.steer(kind, text)

    async def announce(self, text: str) -> bool:
        return await self.steering.announce(text)

    async def say_during_tool(self, text: str) -> str | None:
        return await self.steering.say_during_tool(text)

    # -------------------------------------------------------------------------------------------- tool changes

    async def update_tools(self, view: ToolView, *, apply_now: bool = False) -> None:
        current = self._pending_view or self._view
        if current is not None and self.p.render_tools(view) == self.p.render_tools(current):
            if self._pending_view is None:
                self._view = view
                self.call.shown_tools = view.names
            return
        self._pending_view = view
        self._apply_now = self._apply_now or apply_now
        await self._maybe_reconnect()

    async def _settled(self) -> None:
        await self._maybe_reconnect()

    async def _maybe_reconnect(self) -> None:
        """Close the connection for a planned reconnect once nothing is lost by it (no call waits on a result)."""
        if self._closed or self._sock is None or self._planned is not None or self._calls is None:
            return
        if self._calls.waiting:
            return
        if self._go_away:
            await self._close_for("the provider asked to reconnect (goAway)")
        elif self._pending_view is not None and self._apply_now:
            await self._close_for("tool change applied now")
        elif self._pending_view is not None and self._idle():
            if self._waiter is None or self._waiter.done():
                self._waiter = asyncio.create_task(self._when_handle_fresh(), name=f"{self.name}:handle-wait")

    async def _when_handle_fresh(self) -> None:
        """A next-turn change waits (briefly) for a handle that covers the finished turn, then reconnects."""
        try:
            async with asyncio.timeout(self.opts.handle_wait_ms / 1000):
                await self._fresh_handle.wait()
        except TimeoutError:
            pass
        if self._pending_view is not None and self._idle() and self._calls and not self._calls.waiting:
            await self._close_for("tool change for the next turn")

    def _idle(self) -> bool:
        """Neither side is talking: a next-turn reconnect loses nothing said (else it waits for a later turn)."""
        return not self.events_in.responding and not self.events_in.caller_speaking

    async def _close_for(self, reason: str) -> None:
        if self._sock is None or self._planned is not None:
            return
        self._planned = reason
        await self._sock.close()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.cancel()
        if self._calls is not None:
            await self._calls.aclose()
        if self._sock is not None:
            await self._sock.close()
        if self._reader is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._reader), 5)
            except (TimeoutError, asyncio.CancelledError):
                self._reader.cancel()
        self._queue.put_nowait(None)

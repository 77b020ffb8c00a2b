"""One phone call as the telephony layer holds it: Asterisk resources, the voice driver, and what transfers need.

Why it exists apart from the Stasis app: the app routes events to calls; a ``PhoneCall`` is what one call owns
(bridge, media channel, RTP stream, the voice driver, a transfer's agent channel) and the ``Line`` a transfer
works through: stop the AI, wait until it stopped talking, tell the caller something, bring the AI back, publish
the call's transfer events. Also where a call's context comes from and how its media is shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.calls.capacity import CallLeg
from engine.events import (
    CallTransferAnswered,
    CallTransferCancelled,
    CallTransferFailed,
    CallTransferStarted,
    Event,
    EventBus,
    TranscriptAdded,
)
from engine.realtime.call import RealtimeVoiceCall
from engine.telephony.farewell import hush
from engine.telephony.media import MediaStream
from engine.telephony.rtp import RtpStream
from engine.voice.backend import AudioBackend
from engine.voice.pipeline import VoiceCall

log = logging.getLogger(__name__)

_EVENTS: dict[str, type[Event]] = {
    e.type: e for e in (CallTransferStarted, CallTransferAnswered, CallTransferFailed, CallTransferCancelled)
}
#: After a transfer tool returns, how long the model has to start its "please hold" before the music starts.
SPEECH_START_S = 0.8


async def tell_caller(voice: VoiceCall | RealtimeVoiceCall, bus: EventBus, text: str) -> None:
    """Say ``text`` to the caller outside a turn, and keep it in the conversation so the model knows."""
    session = voice.session
    if isinstance(voice, RealtimeVoiceCall):
        if voice.live is not None and await voice.live.announce(text):
            return
        log.info("telephony: the provider cannot announce; the caller was not told %r", text)
        return
    if session is not None:
        session.history.add_message("assistant", text)
        bus.publish(TranscriptAdded(call_id=session.call_id, role="assistant", text=text))
    await voice.speaker.say(text, "reply", session.turn if session is not None else 0)


def media_label(stream: object) -> str | None:
    """How a phone call's audio flows, for the operator: ``rtp :18004 ↔ 10.0.0.2:17342`` or ``websocket``."""
    if isinstance(stream, RtpStream):
        remote = f"{stream.remote[0]}:{stream.remote[1]}" if stream.remote else "?"
        return f"rtp :{stream.port} ↔ {remote}"
    return None if stream is None else "websocket"


def pick_context(
    variables: dict[str, Any], args: Sequence[str], known: Sequence[str], default: str | None
) -> tuple[str | None, str]:
    """The context for a call and where it came from (for the log), or (None, why not)."""
    wanted = variables.get("AI_CONTEXT")
    if wanted:
        return (wanted, "AI_CONTEXT") if wanted in known else (None, f"AI_CONTEXT={wanted!r} is not a context")
    for arg in args:
        name = arg.split("=", 1)[1] if arg.startswith("context=") else arg
        if name in known:
            return name, "Stasis arguments"
    if default:
        return default, "asterisk.default_context"
    return None, "no AI_CONTEXT, no context in the Stasis arguments and no asterisk.default_context"


def _set(event: asyncio.Event) -> asyncio.Event:
    event.set()
    return event


@dataclass
class PhoneCall:
    channel_id: str
    caller_name: str
    caller_number: str
    bus: EventBus | None = None
    context: str | None = None
    bridge_id: str | None = None
    media_channel_id: str | None = None
    stream: MediaStream | None = None
    voice: VoiceCall | RealtimeVoiceCall | None = None
    #: The audio backend the AI runs over (the engine's farewell plays on it when the engine stops).
    backend: AudioBackend | None = None
    #: The agent's channel once a transfer was answered (the call then lives on without the AI).
    agent_channel_id: str | None = None
    caller_gone: bool = False
    #: The engine stopped while a human had the call: the engine leaves, the caller and the agent stay.
    detached: bool = False
    end_reason: str | None = None
    #: Set when a failed blind transfer brings the AI back, with what it should tell the caller first.
    resume_note: str | None = None
    #: Set while the operator has taken the call over; set (and then cleared) when they hand it back.
    taken_over: asyncio.Event | None = None
    #: On hand-back: what the caller and the operator said meanwhile, for the AI's new conversation.
    handback_note: str | None = None
    #: The AI's conversations on this call: a take-over holds the call live, the hand-back continues its id.
    leg: CallLeg = field(default_factory=CallLeg)
    released: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set while no voice driver runs on the call.
    ai_done: asyncio.Event = field(default_factory=lambda: _set(asyncio.Event()))
    #: The engine's stop has taken the call in hand (farewell, release).
    ending: bool = False
    bridge_done: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def call_id(self) -> str | None:
        return self.voice.call_id if self.voice is not None else None

    # ------------------------------------------------------------------------------------------ Line

    @property
    def ai_on_the_line(self) -> bool:
        """The AI's voice still reaches the caller: its audio and driver are up, no operator took the call over,
        and the caller is there and not handed on (detached)."""
        return (
            self.backend is not None
            and self.voice is not None
            and self.taken_over is None
            and not (self.caller_gone or self.detached)
        )

    def stop_ai(self, reason: str) -> None:
        if self.voice is not None:
            self.voice.stop(reason)

    def caller_left(self, why: str) -> None:
        """The caller hung up (``why``: the ARI event that said so): the AI stops at once, even mid-greeting."""
        if self.caller_gone:
            return
        self.caller_gone = True
        self.end_reason = self.end_reason or "caller hung up"
        log.info("telephony: caller %s left (%s)", self.channel_id, why)
        self._end_now("caller hung up")

    def media_lost(self) -> None:
        """Asterisk hung up the call's media channel (chan_websocket does when its socket dies): the AI can neither
        hear nor be heard, so the call ends now, not when what it was saying would have ended."""
        if self.ending or self.caller_gone or self.detached:
            return
        self.end_reason = self.end_reason or "media channel hung up"
        self._end_now("media channel hung up")

    def _end_now(self, reason: str) -> None:
        self.bridge_done.set()
        if self.taken_over is not None:
            self.taken_over.set()
        hush(self.voice, reason)  # what the AI says (a greeting included) stops within one packet

    async def ai_idle(self, within_s: float) -> None:
        async with asyncio.timeout(within_s):
            await asyncio.sleep(SPEECH_START_S)
            if self.stream is not None:
                await self.stream.drained()

    async def resume_ai(self, note: str) -> None:
        self.resume_note = note

    def tell(self, text: str) -> None:
        if self.voice is None or self.bus is None:
            return
        task = asyncio.get_running_loop().create_task(tell_caller(self.voice, self.bus, text))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def publish(self, kind: str, **fields: object) -> None:
        cls = _EVENTS.get(kind)
        if cls is None or self.bus is None or self.call_id is None:
            return
        session = self.voice.session if self.voice is not None else None
        if session is not None:  # the operator sees the transfer state on the call
            target = fields.get("target", "")
            session.transfer = {
                "call.transfer_started": f"ringing {target}",
                "call.transfer_answered": f"transferred to {target}",
                "call.transfer_failed": f"{target} {fields.get('reason', 'failed')}",
                "call.transfer_cancelled": f"cancelled ({target})",
            }.get(kind, session.transfer)
        self.bus.publish(cls(call_id=self.call_id, **fields))  # type: ignore[call-arg,arg-type]

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

"""Switching the operator's line on a phone call: listen, whisper, take over, and hand back to the AI.

Apart from ``engine.telephony.stasis`` (``StasisApp.set_monitor`` calls it) because taking a caller from the AI
and giving them back is its own sequence — the transcript kept across the operator's line, the media channel
taken out of the bridge — and not the Stasis call lifecycle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from engine.events import CallMonitorChanged
from engine.telephony.handback import TakeoverTranscript, handback_note
from engine.telephony.monitor import MonitorError
from engine.voice.backend import AudioBackend

if TYPE_CHECKING:
    from engine.realtime.host import RealtimeHost
    from engine.telephony.ari import AriClient
    from engine.telephony.monitor import CallMonitor
    from engine.telephony.phone_call import PhoneCall


class Switchboard(Protocol):
    """What switching the operator's line uses of the Stasis app (``StasisApp`` is one)."""

    calls: dict[str, PhoneCall]
    monitor: CallMonitor
    ari: AriClient
    host: RealtimeHost


async def switch_monitor(app: Switchboard, channel_id: str, mode: str, backend: Callable[[], AudioBackend]) -> str:
    """``StasisApp.set_monitor``: put the operator on ``channel_id``'s call in ``mode``; the mode it is now in."""
    call = app.calls.get(channel_id)
    if call is None:
        raise MonitorError(f"no live phone call on channel {channel_id!r}")
    current = app.monitor.mode(channel_id)
    if mode == current:
        return mode
    line = app.monitor.lines.get(channel_id)
    heard = line.transcript if line is not None else None
    if line is not None:
        line.transcript = None  # kept past the line's teardown, for the AI coming back
    await app.monitor.close_for(channel_id)
    if current == "takeover" and call.taken_over is not None:
        call.handback_note = handback_note(await heard.finish() if heard is not None else [])
        call.taken_over.set()  # hand back: the call's loop brings the AI back
    transcript: TakeoverTranscript | None = None
    if mode == "takeover":
        if call.bridge_id is None or call.media_channel_id is None or call.context is None:
            raise MonitorError("this call has no bridge to take over")
        transcript = TakeoverTranscript.start(app.host, call.context, app.host.bus, call.call_id)
        call.taken_over = asyncio.Event()
        call.leg.call_id, call.leg.hold = call.call_id, True  # the call stays live while the operator has it
        await app.ari.remove_from_bridge(call.bridge_id, [call.media_channel_id])
        call.stop_ai("operator took over")
    if mode != "off":
        await app.monitor.open(channel_id, call.bridge_id, mode, backend(), transcript)
    app.host.bus.publish(CallMonitorChanged(call_id=call.call_id or channel_id, mode=mode))
    return mode

"""A caller who hangs up while the agent speaks ends the call at once, on both media paths (RTP and chan_websocket).

The greeting is long (over 10 s) and the caller hangs up a second into it. Nothing is timed by the wall clock:
what the hung-up phone still received is counted in 20 ms packets, and a second call's greeting, paced by the
emulator, is the clock for how long the engine took to release the first call's media channel. Both must stay
within 200 ms (10 packets), and ``call.ended`` comes before the media channel goes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from emulator import AriEmulator

from tests.engine.telephony.phone import desk_engine

#: About 13 s of speech at the desk's voice.
LONG_GREETING = (
    "Welcome to the help desk of the city library. Our opening hours are nine to five on weekdays and ten to two "
    "on Saturdays. You can renew your loans, reserve a book, ask about your account, or report a lost card. "
    "Please tell me in a few words what you would like to do today, and I will do my best to help you."
)
#: 200 ms of 20 ms packets.
WITHIN = 10


def media_of(emu: AriEmulator, caller: str) -> str:
    bridge = emu.world.bridges[str(emu.world.channels[caller].bridge)]
    return next(c for c in bridge.channels if c != caller)


@pytest.mark.parametrize("media", ["rtp", "websocket"])
async def test_hanging_up_during_a_long_greeting_ends_the_call_within_200_ms(
    tmp_path: Path, media: Literal["rtp", "websocket"]
) -> None:
    async with AriEmulator() as emu:
        ports = 42800 if media == "rtp" else 42900
        async with desk_engine(emu, tmp_path, ports, media=media) as engine:
            engine.settings.contexts["desk"].greeting = LONG_GREETING
            sub = engine.bus.subscribe(maxsize=10_000)
            clock_caller = await emu.incoming_call("ava", "Clock", "1002")  # its greeting paces the clock
            await emu.wait_event("ChannelEnteredBridge", clock_caller.id)
            clock = emu.media_for(clock_caller.id)
            await clock.wait_audio(10, within_s=20)

            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            media_channel = media_of(emu, caller.id)
            await phone.wait_audio(60, within_s=20)  # 1.2 s into the greeting
            heard, ticks = len(phone.capture), len(clock.capture)
            await emu.caller_hangs_up(caller.id)
            await emu.wait_event("ChannelDestroyed", media_channel, within_s=30)
            after, took = len(phone.capture) - heard, len(clock.capture) - ticks
            events = sub.drain()
            await emu.caller_hangs_up(clock_caller.id)

        assert after <= WITHIN, f"the phone received {after} packets after the caller hung up"
        assert took <= WITHIN, f"the media channel went {took} packets (x 20 ms) after the hang-up"
        started = {e.caller_name: e.call_id for e in events if e.type == "call.started"}  # type: ignore[attr-defined]
        ended = [e for e in events if e.type == "call.ended"]
        assert [e.reason for e in ended if e.call_id == started["Robin"]] == ["caller hung up"]  # type: ignore[attr-defined]
        deleted = [p for m, p, _ in emu.world.requests if m == "DELETE"]
        assert f"/channels/{media_channel}" in deleted
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


@pytest.mark.parametrize("media", ["rtp", "websocket"])
async def test_asterisk_hanging_up_the_media_channel_during_the_greeting_ends_the_call(
    tmp_path: Path, media: Literal["rtp", "websocket"]
) -> None:
    """chan_websocket hangs its channel up when the socket dies; Asterisk may hang up any channel: the AI cannot be
    heard any more, so the caller is not left in a silent bridge until the greeting would have ended."""
    async with AriEmulator() as emu:
        ports = 43400 if media == "rtp" else 43500
        async with desk_engine(emu, tmp_path, ports, media=media) as engine:
            engine.settings.contexts["desk"].greeting = LONG_GREETING
            sub = engine.bus.subscribe(maxsize=10_000)
            clock_caller = await emu.incoming_call("ava", "Clock", "1002")
            await emu.wait_event("ChannelEnteredBridge", clock_caller.id)
            clock = emu.media_for(clock_caller.id)
            await clock.wait_audio(10, within_s=20)

            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            media_channel = media_of(emu, caller.id)
            await phone.wait_audio(60, within_s=20)
            ticks = len(clock.capture)
            await emu.caller_hangs_up(media_channel)  # Asterisk's side: the media channel goes
            await emu.wait_event("ChannelDestroyed", caller.id, within_s=30)
            took = len(clock.capture) - ticks
            events = sub.drain()
            await emu.caller_hangs_up(clock_caller.id)

        assert took <= WITHIN, f"the caller was hung up {took} packets (x 20 ms) after the media channel went"
        started = {e.caller_name: e.call_id for e in events if e.type == "call.started"}  # type: ignore[attr-defined]
        ended = [e.reason for e in events if e.type == "call.ended" and e.call_id == started["Robin"]]  # type: ignore[attr-defined]
        assert ended == ["media channel hung up"]
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []

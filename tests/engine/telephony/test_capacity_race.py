"""Capacity while a call connects: a caller admitted holds its place from the decision on, before its session
exists. Real Asterisk delivers two callers' ``StasisStart`` within milliseconds; with ``engine.max_calls: 1`` the
second must get a busy (cause 17, never answered) while the first is still being answered and bridged, and the
first goes on. A drain that comes while a call connects refuses that call too (it is not live yet)."""

from __future__ import annotations

from pathlib import Path

from emulator import AriEmulator

from tests.engine.telephony.phone import desk_engine
from tests.waiting import wait_until

#: The id prefix of the external media channels the engine asks for (engine.telephony.owned, kind "em").
MEDIA = "ava-em-"


def answered(emu: AriEmulator, channel_id: str) -> bool:
    return ("POST", f"/channels/{channel_id}/answer") in [(m, p) for m, p, _ in emu.world.requests]


def asked_for_media(emu: AriEmulator, channel_id: str) -> bool:
    """Whether the engine asked for the media channel of ``channel_id``'s call (its call is connecting)."""
    return any(
        m == "POST" and p == "/channels/externalMedia" and channel_id in str(params.get("channelId"))
        for m, p, params in emu.world.requests
    )


async def test_a_second_caller_while_the_first_connects_gets_busy_and_the_first_goes_on(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43700) as engine:
            engine.settings.engine.max_calls = 1
            emu.hold_stasis(MEDIA)  # the first call's media channel is slow to come up: its session is not there yet
            first = await emu.incoming_call("ava", caller_number="1001")
            await wait_until(lambda: asked_for_media(emu, first.id), what="the first call connecting its media")
            assert engine.live_calls() == []
            second = await emu.incoming_call("ava", caller_number="1002")
            await wait_until(
                lambda: second.hung_up or answered(emu, second.id), what="the engine deciding on the second caller"
            )
            emu.release_stasis(MEDIA)
            gone = await emu.wait_event("ChannelDestroyed", second.id)
            assert gone["cause"] == 17  # User busy: Asterisk can route the caller elsewhere
            assert not answered(emu, second.id)
            await emu.wait_event("ChannelEnteredBridge", first.id)
            await emu.media_for(first.id).wait_audio(10)  # the first call talks
            assert [c.caller_number for c in engine.live_calls()] == ["1001"]
            assert engine.capacity()["refused"] == {"draining": 0, "max_calls": 1}
            await emu.caller_hangs_up(first.id)
            await wait_until(lambda: engine.capacity()["live_calls"] == 0, what="the first call's place freed")
            third = await emu.incoming_call("ava", caller_number="1003")  # the place is free again
            await emu.wait_event("ChannelEnteredBridge", third.id)
            await emu.media_for(third.id).wait_audio(10)
            assert [c.caller_number for c in engine.live_calls()] == ["1003"]
            await emu.caller_hangs_up(third.id)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


async def test_a_drain_while_a_call_connects_refuses_it(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43800) as engine:
            emu.hold_stasis(MEDIA)
            caller = await emu.incoming_call("ava", caller_number="1001")
            await wait_until(lambda: asked_for_media(emu, caller.id), what="the call connecting its media")
            engine.drain()
            emu.release_stasis(MEDIA)
            assert (await emu.wait_event("ChannelDestroyed", caller.id))["cause"] == 17
            assert engine.live_calls() == []
            assert engine.capacity()["refused"] == {"draining": 1, "max_calls": 0}
            engine.resume()
            again = await emu.incoming_call("ava", caller_number="1002")  # a resumed engine takes calls again
            await emu.wait_event("ChannelEnteredBridge", again.id)
            await emu.caller_hangs_up(again.id)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []

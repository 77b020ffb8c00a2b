"""Capacity on the phone: past ``engine.max_calls``, or while draining, Asterisk gets a busy (cause 17), not an
answered call that hangs; the live call goes on."""

from __future__ import annotations

from pathlib import Path

from emulator import AriEmulator

from tests.engine.telephony.phone import desk_engine, until_quiet


async def test_a_call_past_max_calls_gets_busy_and_a_drained_engine_too(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43600) as engine:
            engine.settings.engine.max_calls = 1
            first = await emu.incoming_call("ava", caller_number="1001")
            await emu.wait_event("ChannelEnteredBridge", first.id)
            second = await emu.incoming_call("ava", caller_number="1002")
            gone = await emu.wait_event("ChannelDestroyed", second.id)
            assert gone["cause"] == 17  # User busy: Asterisk can route the caller elsewhere
            assert [c.caller_number for c in engine.live_calls()] == ["1001"]
            await until_quiet(emu, first.id)  # the live call still talks
            engine.settings.engine.max_calls = None
            engine.drain()
            third = await emu.incoming_call("ava", caller_number="1003")
            assert (await emu.wait_event("ChannelDestroyed", third.id))["cause"] == 17
            assert engine.capacity()["refused"] == {"draining": 1, "max_calls": 1}
            await emu.caller_hangs_up(first.id)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []

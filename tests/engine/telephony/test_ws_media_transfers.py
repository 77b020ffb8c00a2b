"""Transfers on phone calls whose media is Asterisk's WebSocket channel: the warm hand-off takes the WebSocket
channel out of the bridge (caller + agent remain), a busy target leaves the AI talking over the same socket, and
a goodbye after that still waits for the farewell to leave Asterisk's queue."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from emulator import AriEmulator
from ws_peer import WsPeer

from engine.events import Event, Subscription
from tests.engine.telephony.phone import desk_engine, speech, until_quiet


def bridge_of(emu: AriEmulator, channel: str) -> list[str]:
    ch = emu.world.channels[channel]
    return sorted(emu.world.bridges[ch.bridge].channels) if ch.bridge else []


async def next_event(sub: Subscription, kind: str, within_s: float = 20.0) -> Any:
    async with asyncio.timeout(within_s):
        async for e in sub:
            if e.type == kind:
                return e
    raise AssertionError(f"no {kind}")


async def test_warm_transfer_over_websocket_media_leaves_caller_and_agent(tmp_path: Path) -> None:
    say = speech("transfer me to support")
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 44000, media="websocket") as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            assert isinstance(phone, WsPeer)
            await until_quiet(emu, caller.id)
            await phone.speak(say)
            await phone.silence(1.0)
            answered = await emu.wait_event("StasisStart", within_s=20, name_prefix="PJSIP/6000")
            agent = answered["channel"]["id"]
            await emu.wait_event("ChannelEnteredBridge", agent)
            assert bridge_of(emu, caller.id) == sorted([caller.id, agent])  # the WebSocket channel left
            await next_event(sub, "call.transfer_answered")
            await emu.caller_hangs_up(agent)
            await emu.wait_event("ChannelDestroyed", caller.id)
        assert phone.stream_issues() == []
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


async def test_busy_target_then_goodbye_over_websocket_media(tmp_path: Path) -> None:
    to_sales, bye = speech("transfer me to sales"), speech("goodbye")
    async with AriEmulator() as emu:
        emu.endpoints = {"PJSIP/6001": "busy"}
        async with desk_engine(emu, tmp_path, 44200, media="websocket") as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            assert isinstance(phone, WsPeer)
            await until_quiet(emu, caller.id)
            await phone.speak(to_sales)
            await phone.silence(1.0)
            failed: Event = await next_event(sub, "call.transfer_failed")
            assert failed.reason == "busy"  # type: ignore[attr-defined]
            await until_quiet(emu, caller.id)  # the AI told the caller, over the same socket
            await phone.speak(bye)
            await phone.silence(1.5)
            await emu.wait_event("ChannelDestroyed", caller.id, within_s=20)
        assert phone.unplayed_at_close == 0  # the farewell had left Asterisk's queue before the hangup
        assert phone.stream_issues() == []
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []

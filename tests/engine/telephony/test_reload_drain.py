"""A telephony reload and a drain leave calls a human has alone, and calls with the AI as they should be.

A reload that keeps the Asterisk connection (``asterisk:`` changed elsewhere: default context, ports, caller id)
drops no call; one that changes it (URL, credentials, Stasis app) ends the AI's calls with the farewell and
detaches from transferred ones (caller, agent and their bridge stay). A drain refuses new callers only: a call
coming back to the AI from a failed transfer is not a new call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator import AriEmulator
from state import Channel

from engine.events import Event, Subscription
from tests.engine.telephony.phone import desk_engine, speech, until_quiet


async def transferred_call(emu: AriEmulator, say: bytes) -> tuple[Channel, str, str]:
    """A caller the AI handed to support: (caller, agent channel, the AI's media channel, now out of the bridge)."""
    caller = await emu.incoming_call("ava", "Robin", "1001")
    await emu.wait_event("ChannelEnteredBridge", caller.id)
    media = next(c for c in emu.world.bridges[str(emu.world.channels[caller.id].bridge)].channels if c != caller.id)
    await until_quiet(emu, caller.id)
    phone = emu.media_for(caller.id)
    await phone.speak(say)
    await phone.silence(1.0)
    answered = await emu.wait_event("StasisStart", within_s=20, name_prefix="PJSIP/6000")
    agent = str(answered["channel"]["id"])
    await emu.wait_event("ChannelLeftBridge", media, within_s=20)
    await emu.wait_event("ChannelEnteredBridge", agent, within_s=20)
    return caller, agent, media


async def next_event(sub: Subscription, kind: str, pred: Callable[[Any], bool], seen: list[Event]) -> Any:
    """The next event of ``kind`` matching ``pred``; every event read on the way goes to ``seen``."""
    async with asyncio.timeout(30):
        async for e in sub:
            seen.append(e)
            if e.type == kind and pred(e):
                return e
    raise AssertionError(f"no {kind}")


async def test_a_reload_that_keeps_the_asterisk_connection_drops_no_call(tmp_path: Path) -> None:
    goodbye, to_support = speech("goodbye"), speech("transfer me to support")
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43100) as engine:
            caller, agent, _media = await transferred_call(emu, to_support)
            sam = await emu.incoming_call("ava", "Sam", "1003")
            await emu.wait_event("ChannelEnteredBridge", sam.id)
            await until_quiet(emu, sam.id)
            sub = engine.bus.subscribe(maxsize=10_000)
            new = engine.settings.model_copy(deep=True)
            new.asterisk = new.asterisk.model_copy(update={"caller_id": '"Desk" <7001>', "rtp_port_end": 43150})
            await engine.reload(new)
            assert sam.id in emu.world.channels, "the reload ended the AI's call"
            phone = emu.media_for(sam.id)
            await phone.silence(0.3)
            await phone.speak(goodbye)
            await phone.silence(1.5)
            await emu.wait_event("ChannelDestroyed", sam.id, within_s=20)  # the AI heard the goodbye
            events = sub.drain()
            assert [e.reason for e in events if e.type == "call.ended"] == ["hangup"]  # type: ignore[attr-defined]
            assert sorted(emu.world.bridges[str(emu.world.channels[caller.id].bridge)].channels) == sorted(
                [caller.id, agent]
            )
            deleted = [p for m, p, _ in emu.world.requests if m == "DELETE"]
            assert f"/channels/{caller.id}" not in deleted and f"/channels/{agent}" not in deleted
        assert emu.violations == []


async def test_a_reload_that_changes_the_connection_says_goodbye_to_ai_calls_and_leaves_transferred_ones(
    tmp_path: Path,
) -> None:
    to_support = speech("transfer me to support")
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43200) as engine:
            caller, agent, media = await transferred_call(emu, to_support)
            sam = await emu.incoming_call("ava", "Sam", "1003")
            await emu.wait_event("ChannelEnteredBridge", sam.id)
            await until_quiet(emu, sam.id)
            phone = emu.media_for(sam.id)
            heard = len(phone.capture)
            sub = engine.bus.subscribe(maxsize=10_000)
            new = engine.settings.model_copy(deep=True)
            new.asterisk = new.asterisk.model_copy(update={"app_name": "ivr"})
            await engine.reload(new)
            await emu.wait_event("ChannelDestroyed", sam.id, within_s=20)
            events = sub.drain()
            assert [e.reason for e in events if e.type == "call.ended"] == ["engine stopping"]  # type: ignore[attr-defined]
            assert len(phone.capture) - heard >= 50  # the farewell (a second and more of it)
            await emu.wait_subscribers()
            assert sorted(emu.world.bridges[str(emu.world.channels[caller.id].bridge)].channels) == sorted(
                [caller.id, agent]
            )
            assert media not in emu.world.channels
            deleted = [p for m, p, _ in emu.world.requests if m == "DELETE"]
            assert f"/channels/{caller.id}" not in deleted and f"/channels/{agent}" not in deleted
        assert emu.violations == []


async def test_a_drain_refuses_new_callers_but_not_a_call_coming_back_from_a_failed_transfer(tmp_path: Path) -> None:
    to_sales, to_support = speech("put me through to sales"), speech("transfer me to support")
    async with AriEmulator() as emu:
        emu.endpoints = {"PJSIP/6001": "busy"}
        emu.ring_s = 1.0
        async with desk_engine(emu, tmp_path, 43300) as engine:
            caller, agent, _media = await transferred_call(emu, to_support)
            sam = await emu.incoming_call("ava", "Sam", "1003")
            await emu.wait_event("ChannelEnteredBridge", sam.id)
            await until_quiet(emu, sam.id)
            sub = engine.bus.subscribe(maxsize=10_000)
            engine.admission.drain()
            phone = emu.media_for(sam.id)
            await phone.speak(to_sales)
            await phone.silence(1.0)
            seen: list[Event] = []
            await next_event(sub, "transcript.added", lambda e: "sales is busy" in e.text, seen)  # the AI is back
            assert [e.reason for e in seen if e.type == "call.ended"] == ["transferred"]  # type: ignore[attr-defined]
            late = await emu.incoming_call("ava", "Kim", "1004")
            await emu.wait_event("ChannelDestroyed", late.id)
            assert ("DELETE", f"/channels/{late.id}") in [(m, p) for m, p, _ in emu.world.requests]
            assert emu.world.channels[sam.id].bridge is not None
            assert sorted(emu.world.bridges[str(emu.world.channels[caller.id].bridge)].channels) == sorted(
                [caller.id, agent]
            )
        assert emu.violations == []

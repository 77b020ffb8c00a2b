"""The ARI client against the emulator: spec-valid requests, clear errors, events that survive a dropped socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from emulator import AriEmulator

from engine.backoff import Backoff
from engine.telephony.ari import RECONNECTED, AriClient, AriError, events_url


async def next_of(events: AsyncIterator[dict[str, Any]], kind: str) -> dict[str, Any]:
    async with asyncio.timeout(5):
        async for e in events:
            if e["type"] == kind:
                return e
    raise AssertionError(f"events ended before {kind}")


def test_events_url() -> None:
    assert events_url("http://pbx:8088/ari/", "ava") == "ws://pbx:8088/ari/events?app=ava&subscribeAll=false"
    assert events_url("https://pbx/ari", "a") == "wss://pbx/ari/events?app=a&subscribeAll=false"


async def test_requests_are_spec_valid_and_errors_say_what_failed() -> None:
    async with AriEmulator() as emu, AriClient(emu.url, "ava", "ari-secret", "ava") as ari:
        info = await ari.info()
        assert info["system"]["version"].startswith("22.")
        caller = await emu.incoming_call("ava")
        await ari.answer(caller.id)
        bridge = await ari.create_bridge(kind="mixing", name="call-1")
        media = await ari.external_media("127.0.0.1:40999", channel_id="em-1")
        assert media["channelvars"]["UNICASTRTP_LOCAL_PORT"].isdigit()
        await ari.add_to_bridge(bridge["id"], [caller.id, media["id"]])
        assert set((await ari.bridges())[0]["channels"]) == {caller.id, "em-1"}
        assert await ari.variable(caller.id, "AI_CONTEXT") is None
        snoop = await ari.snoop(caller.id, spy="both", app_args=["listen", "op-1"])
        assert snoop["name"].startswith("Snoop/")
        await ari.moh(caller.id, True)
        await ari.moh(caller.id, False)
        with pytest.raises(AriError, match=r"ARI POST /channels/nope/answer: 404 Channel not found") as e:
            await ari.answer("nope")
        assert e.value.status == 404
        for cid in (snoop["id"], "em-1", caller.id):
            await ari.hangup(cid)
        await ari.destroy_bridge(bridge["id"])
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


async def test_wrong_password_and_unreachable() -> None:
    async with AriEmulator() as emu, AriClient(emu.url, "ava", "wrong", "ava") as ari:
        with pytest.raises(AriError, match="401 wrong ARI username or password"):
            await ari.info()
    async with AriClient("http://127.0.0.1:9/ari", "ava", "x", "ava", timeout_s=2) as ari:
        with pytest.raises(AriError, match=r"cannot reach Asterisk at http://127\.0\.0\.1:9/ari"):
            await ari.info()


async def test_events_reconnect_after_the_socket_drops() -> None:
    async with AriEmulator() as emu, AriClient(emu.url, "ava", "ari-secret", "ava", backoff=Backoff(0.01, 0.05)) as ari:
        events = ari.events()
        first = asyncio.ensure_future(next_of(events, "StasisStart"))
        await emu.wait_subscribers()
        caller = await emu.incoming_call("ava")
        assert (await first)["channel"]["id"] == caller.id
        await emu.drop_events()
        await next_of(events, RECONNECTED)
        assert ari.connected and ari.reconnects == 1
        await emu.caller_hangs_up(caller.id)
        assert (await next_of(events, "StasisEnd"))["channel"]["id"] == caller.id
        await events.aclose()  # type: ignore[attr-defined]

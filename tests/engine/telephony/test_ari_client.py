"""The ARI client against the emulator: spec-valid requests, clear errors, events that survive a dropped socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from emulator import AriEmulator

from engine.core.backoff import Backoff
from engine.telephony.ari import RECONNECTED, AriClient, AriError, events_url


async def next_of(events: AsyncIterator[dict[str, Any]], kind: str) -> dict[str, Any]:
    async with asyncio.timeout(5):
        async for e in events:
            if e["type"] == kind:
                return e
    raise AssertionError(f"events ended before {kind}")


class Seen:
    """Every event the client's ``events()`` gives out, read as the engine reads them."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._new = asyncio.Event()

    async def read(self, ari: AriClient) -> None:
        async for e in ari.events():
            self.events.append(e)
            self._new.set()

    async def until(self, condition: Callable[[list[dict[str, Any]]], bool], within_s: float = 5.0) -> None:
        async with asyncio.timeout(within_s):
            while not condition(self.events):
                self._new.clear()
                await self._new.wait()


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
        seen = Seen()
        reader = asyncio.ensure_future(seen.read(ari))  # a waiter is resolved where the events are read
        await emu.wait_subscribers()
        async with ari.entering("em-1", "POST /channels/externalMedia") as entered:
            media = await ari.external_media("127.0.0.1:40999", channel_id="em-1")
            assert media["channelvars"]["UNICASTRTP_LOCAL_PORT"].isdigit()
            assert (await entered.wait(5))["channel"]["id"] == "em-1"
        await ari.add_to_bridge(bridge["id"], [caller.id, media["id"]])
        await seen.until(
            lambda es: any(e["type"] == "ChannelEnteredBridge" and e["channel"]["id"] == "em-1" for e in es)
        )
        assert not [
            e for e in seen.events if e["type"] == "StasisStart"
        ]  # an awaited StasisStart goes to its waiter only
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
        reader.cancel()


async def test_waiting_for_a_channel_to_enter_stasis_is_bounded_and_says_what() -> None:
    async with AriEmulator() as emu, AriClient(emu.url, "ava", "ari-secret", "ava") as ari:
        seen = Seen()
        reader = asyncio.ensure_future(seen.read(ari))
        await emu.wait_subscribers()
        emu.hold_stasis("em-")
        async with ari.entering("em-2", "POST /channels/externalMedia") as entered:
            await ari.external_media("127.0.0.1:40999", channel_id="em-2")
            with pytest.raises(AriError) as e:
                await entered.wait(0.2)
        assert (
            str(e.value)
            == "ARI POST /channels/externalMedia: channel em-2 did not enter Stasis within 0.2 s of the request"
        )
        emu.release_stasis("em-")
        # nobody waits for it any more: the event goes out to the owner (who hangs it up)
        await seen.until(lambda es: any(e["type"] == "StasisStart" and e["channel"]["id"] == "em-2" for e in es))
        async with ari.entering("em-3", "POST /channels/externalMedia") as entered:
            emu.hold_stasis("em-")
            await ari.external_media("127.0.0.1:40999", channel_id="em-3")
            await ari.hangup("em-3")
            with pytest.raises(AriError, match="channel em-3 was hung up before it entered Stasis"):
                await entered.wait(5)
        with pytest.raises(ValueError, match="already waiting for channel em-4"):
            ari.entering("em-4", "a")
            ari.entering("em-4", "b")
        reader.cancel()


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

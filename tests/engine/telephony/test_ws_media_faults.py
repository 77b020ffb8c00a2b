"""The emulator's chan_websocket behaves as Asterisk's (refusals, answer on connect, one socket per channel, hangup
when the app closes), and a phone call whose media socket dies mid-call ends and releases everything."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from emulator import AriEmulator
from pydantic import SecretStr

from engine.app import Engine
from engine.config.models import AsteriskConfig
from engine.events import CallEnded
from engine.telephony.ws_media import WsMedia, media_url
from tests.engine.voice.helpers import DEMO_CONFIG, demo_settings
from tests.waiting import wait_until

AUTH = {"Authorization": aiohttp.encode_basic_auth("ava", "ari-secret")}
WS = "app=ava&format=ulaw&transport=websocket&encapsulation=none"


async def next_event(ws: aiohttp.ClientWebSocketResponse, kind: str, channel: str) -> dict[str, Any]:
    async with asyncio.timeout(5):
        while True:
            event = json.loads((await ws.receive()).data)
            if event["type"] == kind and event["channel"]["id"] == channel:
                return event


async def test_emulated_chan_websocket_answers_on_connect_and_hangs_up_on_close() -> None:
    async with AriEmulator() as emu, aiohttp.ClientSession(headers=AUTH) as http:
        events = await http.ws_connect(emu.url.replace("http", "ws") + "/events?app=ava")
        await emu.wait_subscribers()
        refused = [
            (f"{WS.replace('none', 'rtp')}&connection_type=server", "encapsulation must be 'none'"),
            (WS, "external_host must be a valid websocket_client connection id"),  # client mode: no such id here
            ("app=ava&format=ulaw&external_host=127.0.0.1:5000&connection_type=server", "'server' connection_type"),
        ]
        for query, why in refused:
            async with http.post(f"{emu.url}/channels/externalMedia?{query}") as r:
                assert r.status == 400 and why in (await r.json())["message"]
        async with http.post(f"{emu.url}/channels/externalMedia?{WS}&connection_type=server&channelId=em-1") as r:
            assert r.status == 200
            channel = await r.json()
        assert channel["name"].startswith("WebSocket/INCOMING/") and channel["state"] == "Down"
        connection = channel["channelvars"]["MEDIA_WEBSOCKET_CONNECTION_ID"]
        assert channel["channelvars"]["MEDIA_WEBSOCKET_OPTIMAL_FRAME_SIZE"] == "160"
        async with http.post(f"{emu.url}/bridges/b1?type=mixing") as r:
            assert r.status == 200
        async with http.post(f"{emu.url}/bridges/b1/addChannel?channel=em-1") as r:
            assert r.status == 422  # not answered, not in Stasis until the app connects

        with pytest.raises(aiohttp.WSServerHandshakeError) as unknown:
            await http.ws_connect(media_url(emu.url, "no-such-id"), protocols=("media",))
        assert unknown.value.status == 404
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await http.ws_connect(media_url(emu.url, connection))  # no "media" sub-protocol
        assert emu.violations == [f"/media/{connection}: the WebSocket did not ask for the 'media' sub-protocol"]
        emu.violations.clear()

        media = await WsMedia.connect(media_url(emu.url, connection))
        assert (media.connection_id, media.channel_id, media.format) == (connection, "em-1", "ulaw")
        start = await next_event(events, "StasisStart", "em-1")
        assert start["channel"]["state"] == "Up"
        async with http.post(f"{emu.url}/bridges/b1/addChannel?channel=em-1") as r:
            assert r.status == 204
        with pytest.raises(aiohttp.WSServerHandshakeError) as twice:
            await http.ws_connect(media_url(emu.url, connection), protocols=("media",))
        assert twice.value.status == 409

        await media.aclose()  # the app goes away: Asterisk hangs the channel up
        await next_event(events, "ChannelDestroyed", "em-1")
        assert emu.world.leftovers() == {"channels": [], "bridges": ["b1"]}
        await events.close()
        assert emu.violations == []


async def test_media_socket_lost_mid_call_ends_the_call_and_releases_everything(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        settings = demo_settings(tmp_path)
        settings.asterisk = AsteriskConfig(
            enabled=True,
            ari_url=emu.url,
            password=SecretStr("ari-secret"),
            default_context="demo",
            media="websocket",
        )
        async with Engine(settings, config_path=DEMO_CONFIG) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            await emu.wait_subscribers()
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            await phone.wait_audio(25, within_s=15)  # the greeting is playing
            media_channel = next(c for c in emu.world.channels.values() if c.kind == "websocket")
            await emu.caller_hangs_up(media_channel.id)  # Asterisk drops the WebSocket channel
            await emu.wait_event("ChannelDestroyed", caller.id, within_s=10)  # the engine hangs up the caller
            async with asyncio.timeout(5):
                async for e in sub:
                    if isinstance(e, CallEnded):
                        break
            await wait_until(lambda: engine.live_calls() == [], what="the ended call to leave the live calls")
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []

"""The ARI emulator refuses what the spec refuses, emits only spec-valid events, and carries real RTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from emulator import AriEmulator
from rtp_peer import RtpPeer
from spec import AriSpec, SpecError

AUTH = {"Authorization": aiohttp.encode_basic_auth("ava", "ari-secret")}


async def next_event(ws: aiohttp.ClientWebSocketResponse, kind: str) -> dict[str, Any]:
    async with asyncio.timeout(5):
        while True:
            msg = await ws.receive()
            assert msg.type == aiohttp.WSMsgType.TEXT, msg
            event = json.loads(msg.data)
            if event["type"] == kind:
                return event


def test_spec_rules() -> None:
    spec = AriSpec()
    op, params = spec.match("POST", "/channels/c1/snoop")
    assert op.nickname == "snoopChannel" and params == {"channelId": "c1"}
    with pytest.raises(SpecError, match="missing required parameter 'app'"):
        spec.check_request(op, {"spy": "both"}, None)
    with pytest.raises(SpecError, match="spy='sideways' is not one of"):
        spec.check_request(op, {"app": "ava", "spy": "sideways"}, None)
    with pytest.raises(SpecError, match="unknown parameter 'colour'"):
        spec.check_request(op, {"app": "ava", "colour": "red"}, None)
    op, _ = spec.match("POST", "/bridges/b1/addChannel")
    assert spec.check_request(op, {"channel": "a,b"}, None)["channel"] == ["a", "b"]
    with pytest.raises(SpecError) as e405:
        spec.match("PUT", "/channels/c1/answer")
    assert e405.value.status == 405
    assert spec.check_event({"type": "StasisStart", "application": "a", "timestamp": "t"}) == [
        "StasisStart: missing required 'args'",
        "StasisStart: missing required 'channel'",
    ]


async def test_auth_violations_and_a_call_with_rtp() -> None:
    async with AriEmulator() as emu, aiohttp.ClientSession() as http:
        async with http.get(emu.url + "/channels") as r:
            assert r.status == 401
        async with http.post(emu.url + "/bridges?type=mixing&colour=red", headers=AUTH) as r:
            assert r.status == 400
        assert emu.violations and "unknown parameter 'colour'" in emu.violations[0]
        emu.violations.clear()

        ws = await http.ws_connect(emu.url.replace("http", "ws") + "/events?app=ava&api_key=ava:ari-secret")
        caller = await emu.incoming_call("ava", "Alice", "1001", variables={"AI_CONTEXT": "desk"})
        start = await next_event(ws, "StasisStart")
        assert start["channel"]["caller"] == {"name": "Alice", "number": "1001"}
        assert start["channel"]["channelvars"]["AI_CONTEXT"] == "desk"

        async with http.post(f"{emu.url}/channels/{caller.id}/answer", headers=AUTH) as r:
            assert r.status == 204
        async with http.post(emu.url + "/bridges", params={"type": "mixing"}, headers=AUTH) as r:
            bridge = await r.json()
        engine_rtp = await RtpPeer.open()
        async with http.post(
            emu.url + "/channels/externalMedia",
            params={"app": "ava", "external_host": f"127.0.0.1:{engine_rtp.port}", "format": "ulaw"},
            headers=AUTH,
        ) as r:
            media = await r.json()
        engine_rtp.target = ("127.0.0.1", int(media["channelvars"]["UNICASTRTP_LOCAL_PORT"]))
        await next_event(ws, "StasisStart")  # the media channel enters Stasis after the reply: bridged only then
        async with http.post(
            f"{emu.url}/bridges/{bridge['id']}/addChannel",
            params={"channel": f"{caller.id},{media['id']}"},
            headers=AUTH,
        ) as r:
            assert r.status == 204
        phone = emu.media_for(caller.id)
        await phone.speak(b"\x11" * 800, pace=0)
        await engine_rtp.wait_audio(5)
        await engine_rtp.speak(b"\x22" * 480, pace=0)
        await phone.wait_audio(3)
        assert engine_rtp.audio() == b"\x11" * 800 and phone.audio() == b"\x22" * 480
        assert phone.stream_issues() == [] and engine_rtp.stream_issues() == []

        await emu.caller_hangs_up(caller.id)
        await next_event(ws, "StasisEnd")
        for path in (f"/channels/{media['id']}", f"/bridges/{bridge['id']}"):
            async with http.delete(emu.url + path, headers=AUTH) as r:
                assert r.status == 204
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []
        engine_rtp.close()
        await ws.close()


async def test_originate_outcomes() -> None:
    async with AriEmulator() as emu, aiohttp.ClientSession() as http:
        emu.endpoints = {"PJSIP/6001": "busy"}
        ws = await http.ws_connect(emu.url.replace("http", "ws") + "/events?app=ava", headers=AUTH)
        async with http.post(
            emu.url + "/channels",
            params={"endpoint": "PJSIP/6000", "app": "ava", "appArgs": "transfer", "callerId": '"AVA" <7000>'},
            headers=AUTH,
        ) as r:
            agent = await r.json()
        answered = await next_event(ws, "StasisStart")
        assert answered["channel"]["id"] == agent["id"] and answered["args"] == ["transfer"]
        async with http.post(emu.url + "/channels", params={"endpoint": "PJSIP/6001", "app": "ava"}, headers=AUTH) as r:
            busy = await r.json()
        destroyed = await next_event(ws, "ChannelDestroyed")
        assert destroyed["channel"]["id"] == busy["id"] and destroyed["cause"] == 17
        assert not any(n.startswith("Local/") for n in emu.world.created_names)
        assert emu.violations == []
        await ws.close()

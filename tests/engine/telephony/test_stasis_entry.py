"""Created channels enter Stasis after the REST reply: the emulator is as unkind as Asterisk, and the engine waits for
each one's StasisStart by the id it chose before bridging, never taking it for a new caller."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from emulator import AriEmulator
from pydantic import SecretStr
from rtp_peer import RtpPeer

from engine.app import Engine
from engine.config.models import AsteriskConfig, ContextConfig, ProviderConfig
from engine.config.models.tools import TransferTarget
from engine.sessions.session import CallSession
from engine.telephony.component import Telephony
from engine.telephony.rtp import PortPool, RtpStream
from tests.engine.telephony.phone import SCRIPT
from tests.engine.voice.helpers import DEMO_CONFIG, demo_settings
from tests.waiting import wait_until

AUTH = {"Authorization": aiohttp.encode_basic_auth("ava", "ari-secret")}


async def next_event(ws: aiohttp.ClientWebSocketResponse, kind: str, channel_id: str) -> dict[str, Any]:
    async with asyncio.timeout(5):
        while True:
            msg = await ws.receive()
            assert msg.type == aiohttp.WSMsgType.TEXT, msg
            event = json.loads(msg.data)
            if event["type"] == kind and event["channel"]["id"] == channel_id:
                return event


def stasis_starts(emu: AriEmulator, channel_id: str) -> int:
    return sum(1 for e in emu.events if e["type"] == "StasisStart" and e["channel"]["id"] == channel_id)


async def test_emulator_created_channels_enter_stasis_after_the_reply() -> None:
    async with AriEmulator() as emu, aiohttp.ClientSession(headers=AUTH) as http:
        ws = await http.ws_connect(emu.url.replace("http", "ws") + "/events?app=ava")
        caller = await emu.incoming_call("ava")
        async with http.post(emu.url + "/bridges/b1", params={"type": "mixing"}) as r:
            assert r.status == 200
        for kind, prefix, path, params in (
            (
                "unicastrtp",
                "em-",
                "/channels/externalMedia",
                {"app": "ava", "external_host": "127.0.0.1:9", "format": "ulaw", "channelId": "em-1"},
            ),
            ("snoop", "snoop-", f"/channels/{caller.id}/snoop/snoop-1", {"app": "ava", "spy": "both"}),
        ):
            emu.hold_stasis(prefix)
            async with http.post(emu.url + path, params=params) as r:
                created = await r.json()
                assert r.status == 200 and created["id"] == f"{prefix}1"
            assert emu.world.channels[created["id"]].kind == kind
            assert stasis_starts(emu, created["id"]) == 0  # answered, not yet in Stasis
            async with http.post(emu.url + "/bridges/b1/addChannel", params={"channel": f"{caller.id},{prefix}1"}) as r:
                assert r.status == 422 and (await r.json())["message"] == "Channel not in Stasis application"
            assert emu.world.channels[caller.id].bridge is None  # every channel is checked first: none was added
            emu.release_stasis(prefix)
            await next_event(ws, "StasisStart", created["id"])
            async with http.post(emu.url + "/bridges/b1/addChannel", params={"channel": created["id"]}) as r:
                assert r.status == 204
        assert emu.refusals == ["POST /bridges/b1/addChannel: 422 Channel not in Stasis application"] * 2

        # an originated leg names its originator: Asterisk links it (linkedid) to the caller
        async with http.post(
            emu.url + "/channels/x-1", params={"endpoint": "PJSIP/6000", "app": "ava", "originator": caller.id}
        ) as r:
            assert r.status == 200
        await next_event(ws, "StasisStart", "x-1")
        assert (emu.world.channels["x-1"].originator, emu.world.channels["x-1"].linkedid) == (caller.id, caller.id)
        async with http.post(emu.url + "/channels", params={"endpoint": "PJSIP/6000", "originator": "nobody"}) as r:
            assert r.status == 400 and "originator" in (await r.json())["message"]
        assert emu.violations == []
        await ws.close()


@pytest.mark.parametrize(
    ("host", "status"),
    [("0.0.0.0:4000", 400), ("::1:4000", 400), ("[::]:4000", 400), ("127.0.0.1", 400), ("[::1]:4000", 200)],
)
async def test_emulator_external_host_as_asterisk_reads_it(host: str, status: int) -> None:
    async with AriEmulator() as emu, aiohttp.ClientSession(headers=AUTH) as http:
        params = {"app": "ava", "external_host": host, "format": "ulaw"}
        async with http.post(emu.url + "/channels/externalMedia", params=params) as r:
            assert r.status == status, await r.text()
            if status == 200:
                assert (await r.json())["channelvars"]["UNICASTRTP_LOCAL_ADDRESS"] == "::1"
            elif host.startswith("::1"):
                assert (await r.json())["message"] == f"Port missing in {host}"
        assert emu.violations == []


async def test_rtp_timestamps_jump_across_silence_and_the_engine_hears_every_spurt() -> None:
    stream = await RtpStream.bind("127.0.0.1", PortPool(46600, 46699))
    peer = await RtpPeer.open()
    peer.target = ("127.0.0.1", stream.port)
    peer.spurt_gap = (800, 800)
    try:
        await peer.speak(b"\x11" * 480, pace=0)
        peer.capture = []
        await peer.silence(3.0, send=False)
        await peer.speak(b"\x22" * 480, pace=0)
        heard = b""
        async with asyncio.timeout(5):
            async for frame in stream.frames():
                heard += frame
                if len(heard) >= 960:
                    break
        assert heard == b"\x11" * 480 + b"\x22" * 480  # nothing lost, no silence invented for the jump
    finally:
        await stream.aclose()
        peer.close()
    # what Asterisk sent: the second spurt's timestamp jumped 3 s + the spurt gap past the first spurt's end
    echo = await RtpPeer.open()
    echo.target = ("127.0.0.1", echo.port)
    try:
        await echo.speak(b"\x11" * 320, pace=0)
        await echo.silence(1.0, send=False)
        await echo.speak(b"\x22" * 320, pace=0)
        await echo.wait_audio(4)
        steps = [(b.ts - a.ts) & 0xFFFFFFFF for a, b in zip(echo.capture, echo.capture[1:], strict=False)]
        assert steps[0] == 160 and steps[1] >= 160 + 8000 + echo.spurt_gap[0] and steps[2] == 160
        assert echo.stream_issues() == []
    finally:
        echo.close()


# -------------------------------------------------------------------------------------------------- the engine


@asynccontextmanager
async def engine_on(emu: AriEmulator, tmp_path: Path, ports: int, **asterisk: Any) -> AsyncIterator[Engine]:
    settings = demo_settings(tmp_path)
    settings.providers["desk"] = ProviderConfig(type="scripted", script=str(SCRIPT))
    settings.contexts["desk"] = ContextConfig(provider="desk", prompt="A help desk.", tools=["transfer"])
    settings.tools.extensions = {"support": TransferTarget(destination="PJSIP/6000")}
    settings.asterisk = AsteriskConfig(
        enabled=True,
        ari_url=emu.url,
        password=SecretStr("ari-secret"),
        default_context="desk",
        rtp_port_start=ports,
        rtp_port_end=ports + 99,
        **asterisk,
    )
    async with Engine(settings, config_path=DEMO_CONFIG) as engine:
        await emu.wait_subscribers()
        yield engine


def telephony_of(engine: Engine) -> Telephony:
    return next(c for c in engine.components if isinstance(c, Telephony))


async def live_session(engine: Engine, channel_id: str) -> CallSession:
    app = telephony_of(engine).app
    assert app is not None
    found: list[CallSession] = []

    async def live() -> bool:
        call = app.calls.get(channel_id)
        if call is None or call.voice is None or call.voice.session is None:
            return False
        await call.voice.started.wait()
        if app.lines.get(call.voice.session.call_id) is None:
            return False
        found.append(call.voice.session)
        return True

    await wait_until(live, within=20, what=f"channel {channel_id}'s call session on its line")
    return found[0]


async def test_the_engine_bridges_created_channels_on_their_stasis_start(tmp_path: Path) -> None:
    """Media and transfer leg each enter Stasis 5–50 ms after Asterisk's reply: bridged only then, none a caller."""
    async with AriEmulator() as emu:
        emu.ring_s = 0.0
        async with engine_on(emu, tmp_path, 46700) as engine:
            app = telephony_of(engine).app
            assert app is not None
            caller = await emu.incoming_call("ava", "Robin", "1001")
            entered = await emu.wait_event("ChannelEnteredBridge", caller.id)
            bridged = emu.world.bridges[entered["bridge"]["id"]].channels  # both join in one addChannel
            assert bridged[0] == caller.id and bridged[1] == app.ids.make("em", caller.id) and len(bridged) == 2
            session = await live_session(engine, caller.id)
            session.shown_tools = frozenset({"transfer"})
            result = await engine.execute_tool(session, "transfer", {"destination": "support"})
            assert result.status == "success", result.message
            answered = await emu.wait_event("StasisStart", name_prefix="PJSIP/6000")
            agent = answered["channel"]["id"]
            await emu.wait_event("ChannelEnteredBridge", agent)
            originate = next(q for m, p, q in emu.world.requests if (m, p) == ("POST", "/channels"))
            assert originate["originator"] == caller.id and emu.world.channels[agent].linkedid == caller.id
            assert [r for r in emu.refusals if " 422 " in r] == []  # no addChannel before a StasisStart
            assert list(app.calls) == [caller.id]  # neither the media channel nor the agent became a call
            answers = [p for m, p, q in emu.world.requests if p.endswith("/answer")]
            assert answers == [f"/channels/{caller.id}/answer"]
            await emu.caller_hangs_up(agent)
            await emu.wait_event("ChannelDestroyed", caller.id)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


async def test_a_created_channel_that_enters_stasis_too_late(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The wait is bounded with an error naming channel and request; a StasisStart of the engine's own that nobody
    waits for (its request timed out) is hung up and logged, never taken for a call."""
    caplog.set_level(logging.INFO, logger="engine.telephony")
    async with AriEmulator() as emu, aiohttp.ClientSession(headers=AUTH) as http:
        emu.hold_stasis("ava-em-")
        async with engine_on(emu, tmp_path, 46800, request_timeout_s=1.0) as engine:
            app = telephony_of(engine).app
            assert app is not None
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelDestroyed", caller.id)  # the call failed and was released
            media_id = app.ids.make("em", caller.id)
            failed = [r.getMessage() for r in caplog.records if f"call {caller.id} failed" in r.getMessage()]
            assert len(failed) == 1 and "POST /channels/externalMedia" in failed[0], failed
            assert f"{media_id} did not enter Stasis within 1 s" in failed[0]
            assert media_id not in emu.world.channels  # hung up with the call
            emu.release_stasis("ava-em-")

            # Asterisk made a channel under the engine's id whose request the engine gave up on; it enters late
            stray = app.ids.make("em", "1234.5")
            params = {"app": "ava", "external_host": "127.0.0.1:9", "format": "ulaw", "channelId": stray}
            async with http.post(emu.url + "/channels/externalMedia", params=params) as r:
                assert r.status == 200
            await emu.wait_event("StasisStart", stray)
            await emu.wait_event("ChannelDestroyed", stray)  # the engine hung it up
            assert any(stray in r.getMessage() and "too late" in r.getMessage() for r in caplog.records)
            assert app.calls == {}  # never a call for the engine's own channel
            answered = [p for m, p, q in emu.world.requests if p.endswith("/answer")]
            assert answered == [f"/channels/{caller.id}/answer"]
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []

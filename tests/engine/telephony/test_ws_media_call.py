"""A phone call end to end over Asterisk's WebSocket channel (``asterisk.media: websocket``): the emulator's
chan_websocket plays the caller's side, the caller hears the greeting, says goodbye, hears the whole farewell
before the hangup (the engine waits for Asterisk's mark), and nothing is left in Asterisk."""

from __future__ import annotations

from pathlib import Path

import pytest
from emulator import AriEmulator
from pydantic import SecretStr
from ws_peer import WsPeer

from engine.app import Engine
from engine.config.models import AsteriskConfig
from tests.engine.telephony.phone import loud_seconds, speech
from tests.engine.voice.helpers import DEMO_CONFIG, demo_settings


@pytest.mark.parametrize("json_format", [False, True], ids=["plain-text", "json"])
async def test_websocket_call_greeting_goodbye_farewell_and_nothing_left(tmp_path: Path, json_format: bool) -> None:
    goodbye = speech("goodbye")
    expected = loud_seconds(speech("Thank you for calling. Goodbye!"))
    async with AriEmulator() as emu:
        emu.ws_json = json_format
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
            assert isinstance(phone, WsPeer)
            await phone.wait_audio(50, within_s=15)  # a second of the greeting
            while loud_seconds(phone.audio()[-800:]) > 0:  # until the greeting is over
                await phone.wait_audio(len(phone.capture) + 5, within_s=15)
            heard_before = len(phone.capture)
            await phone.silence(0.3)
            await phone.speak(goodbye)
            await phone.silence(1.5)
            await emu.wait_event("ChannelDestroyed", caller.id, within_s=20)
            events = sub.drain()

        farewell = phone.audio()[heard_before * 160 :]
        assert loud_seconds(farewell) >= 0.8 * expected
        assert phone.unplayed_at_close == 0  # the whole farewell was played before the hangup, none left queued
        assert phone.stream_issues() == []  # whole frames only, nothing refused
        assert "MARK_MEDIA" in phone.commands  # the hangup waited for Asterisk's mark, not a guess
        started = next(e for e in events if e.type == "call.started")
        assert started.caller_name == "Robin" and started.context == "demo"  # type: ignore[attr-defined]
        ended = next(e for e in events if e.type == "call.ended")
        assert ended.reason == "hangup"  # type: ignore[attr-defined]
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert any(name.startswith("WebSocket/INCOMING/") for name in emu.world.created_names)
        assert not any(name.startswith(("UnicastRTP/", "Local/")) for name in emu.world.created_names)
        assert emu.violations == []

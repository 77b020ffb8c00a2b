"""A phone call end to end: Asterisk (the ARI emulator) hands a channel to the engine's Stasis app, the caller
hears the greeting over real RTP, says goodbye, hears the whole farewell, and nothing is left in Asterisk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from emulator import AriEmulator
from pydantic import SecretStr

from engine.app import Engine
from engine.config.models import AsteriskConfig
from engine.voice.g711 import ulaw_decode, ulaw_encode
from engine.voice.tts import Synthesizer
from tests.engine.voice.helpers import DEMO_CONFIG, demo_settings


def speech(text: str) -> bytes:
    return ulaw_encode(Synthesizer(voice="en-us", rate=170, sample_rate=8000).synthesize_blocking(text).samples)


def loud_seconds(ulaw: bytes) -> float:
    """Seconds of audio above a quiet threshold, in 20 ms windows."""
    pcm = ulaw_decode(ulaw).astype(np.int32)
    windows = pcm[: pcm.size // 160 * 160].reshape(-1, 160)
    return float((np.abs(windows).max(axis=1) > 300).sum() * 0.02)


async def test_greeting_goodbye_farewell_and_nothing_left(tmp_path: Path) -> None:
    # synthesised before the engine runs: espeak is one engine per process, and the agent's TTS will be using it
    goodbye = speech("goodbye")
    expected = loud_seconds(speech("Thank you for calling. Goodbye!"))
    async with AriEmulator() as emu:
        settings = demo_settings(tmp_path)
        settings.asterisk = AsteriskConfig(
            enabled=True,
            ari_url=emu.url,
            password=SecretStr("ari-secret"),
            default_context="demo",
            rtp_port_start=41000,
            rtp_port_end=41099,
        )
        async with Engine(settings, config_path=DEMO_CONFIG) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            await emu.wait_subscribers()
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            await phone.wait_audio(50, within_s=15)  # a second of the greeting
            await phone.wait_audio(len(phone.capture) + 150, within_s=15)  # the call is registered by now
            info = engine.calls_info()[0]
            assert info.channel_id == caller.id and info.caller_name == "Robin"
            assert info.media is not None and info.media.startswith("rtp :41")
            while loud_seconds(phone.audio()[-800:]) > 0:  # until the greeting is over
                await phone.wait_audio(len(phone.capture) + 5, within_s=15)
            heard_before = len(phone.capture)
            await phone.silence(0.3)
            await phone.speak(goodbye)
            await phone.silence(1.5)
            await emu.wait_event("ChannelDestroyed", caller.id, within_s=20)
            events = sub.drain()

        farewell = phone.audio()[heard_before * 160 :]
        assert loud_seconds(farewell) >= 0.8 * expected  # the whole farewell reached the phone before the hangup
        assert phone.stream_issues() == []
        started = next(e for e in events if e.type == "call.started")
        assert started.caller_name == "Robin" and started.context == "demo"  # type: ignore[attr-defined]
        ended = next(e for e in events if e.type == "call.ended")
        assert ended.reason == "hangup"  # type: ignore[attr-defined]
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert not any(name.startswith("Local/") for name in emu.world.created_names)
        assert emu.violations == []

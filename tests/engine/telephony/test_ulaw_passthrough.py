"""μ-law straight through: on a phone call to a realtime provider that speaks μ-law, the caller's bytes reach the
provider exactly as they came off the wire, and the provider's bytes reach the caller exactly as it sent them.

G.711 decode/encode round-trips every code but one (0x7F, "negative zero", comes back as 0xFF), so the audio
below carries 0x7F bytes: a path that decodes and encodes again changes them, the pass-through does not.
Against the ARI emulator over loopback RTP and the OpenAI Realtime fake (``audio/pcmu`` both ways).
"""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest
from emulator import AriEmulator
from realtime_openai_fake import OpenAIRealtimeFake, Say
from realtime_openai_harness import provider_config as realtime_provider

from engine.voice.g711 import ulaw_encode
from tests.engine.telephony.phone import desk_engine
from tests.waiting import wait_until

pytestmark = pytest.mark.timeout(120)


def marked_tone(ms: int, hz: float) -> bytes:
    """A loud tone as μ-law with every 8th byte replaced by 0x7F (negative zero), which no encoder produces."""
    t = np.arange(8 * ms) / 8000
    codes = bytearray(ulaw_encode((9000 * np.sin(2 * np.pi * hz * t)).astype(np.int16)))
    codes[::8] = b"\x7f" * len(codes[::8])
    return bytes(codes)


class MarkedFake(OpenAIRealtimeFake):
    """The agent's audio is the marked tone (the fake's own tone has no 0x7F)."""

    def _tone(self, ms: int) -> bytes:
        assert self._out_format() == {"type": "audio/pcmu"}
        return marked_tone(ms, 660)


async def test_phone_mulaw_goes_straight_through_both_ways(tmp_path: Path) -> None:
    fake = MarkedFake([Say("Hello there.")])
    said = marked_tone(400, 440)
    async with fake, AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 45800, provider=realtime_provider(fake.url)) as engine:
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            await phone.wait_audio(400 // 20)  # the greeting (400 ms) played out
            await phone.speak(said)

            def heard() -> bytes:
                appended = [m for m in fake.received if isinstance(m, dict)]
                return b"".join(
                    base64.b64decode(m["audio"]) for m in appended if m.get("type") == "input_audio_buffer.append"
                )

            await wait_until(lambda: said in heard(), within=20, what="the caller's bytes at the provider, unchanged")
            (live,) = engine.live_calls()
            await emu.caller_hangs_up(caller.id)
            await emu.wait_event("ChannelDestroyed", caller.id)
    assert fake.errors == [] and emu.violations == []
    session = next(m for m in fake.received if isinstance(m, dict) and m.get("type") == "session.update")
    assert session["session"]["audio"]["input"]["format"] == {"type": "audio/pcmu"}
    assert said in heard()  # the caller's 0x7F bytes arrived as 0x7F: not decoded and encoded again
    greeting = marked_tone(100, 660) * 4  # the fake sends 100 ms deltas
    assert greeting in phone.audio()  # and the agent's came back to the phone byte for byte
    assert live.call_id

"""The realtime adapters' shared parts: the bounded socket, handshake errors without secrets, format conversion."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from realtime_ws import RealtimeFake, Received

from engine.providers.base import ProviderError
from engine.realtime.audio import AudioConverter, negotiate
from engine.realtime.input import CallerInput
from engine.realtime.session import PCM16_8K, PCM16_16K, PCM16_24K, PCMA_8K, PCMU_8K, AudioSpec
from engine.realtime.socket import BadFrame, RealtimeSocket, safe_url
from engine.voice.audio import AudioFrame
from engine.voice.g711 import ulaw_decode, ulaw_encode, ulaw_to_pcm16


class EchoFake(RealtimeFake):
    path = "/v1/echo"

    async def on_message(self, msg: Received) -> None:
        if isinstance(msg, dict):
            await self.send({"type": "echo", "got": msg})


async def test_socket_round_trip_and_bad_frames() -> None:
    async with EchoFake() as fake:
        sock = await RealtimeSocket.open("fake", fake.url + "?key=SECRET-KEY", {"Authorization": "Bearer SECRET"})
        await sock.send_json({"type": "hello"})
        await fake.wait_for(lambda m: m == {"type": "hello"})
        got: list[object] = []
        async for m in sock.messages():
            got.append(m)
            if len(got) == 1:
                for raw in ("[" * 100 + "]" * 100, "not json", "[1, 2]", b"\x00\x01"):
                    await fake.send_raw(raw)
            if len(got) == 5:
                break
        await sock.close()
    assert got[0] == {"type": "echo", "got": {"type": "hello"}}
    assert isinstance(got[1], BadFrame) and "deeper than 64" in got[1].reason
    assert isinstance(got[2], BadFrame) and got[2].reason.startswith("not JSON")
    assert isinstance(got[3], BadFrame) and "list" in got[3].reason
    assert got[4] == b"\x00\x01"
    assert fake.request_headers[0]["Authorization"] == "Bearer SECRET"


@pytest.mark.parametrize(("status", "words"), [(401, "authentication failed"), (404, "not found"), (429, "quota")])
async def test_refused_handshake_is_one_clear_message_without_the_key(status: int, words: str) -> None:
    async with EchoFake() as fake:
        fake.refuse_status = status
        with pytest.raises(ProviderError) as ei:
            await RealtimeSocket.open("gem", fake.url + "?key=SECRET-KEY")
    text = str(ei.value)
    assert words in text and f"HTTP {status}" in text and "SECRET" not in text
    assert ei.value.status == status


async def test_unreachable_endpoint() -> None:
    with pytest.raises(ProviderError, match=r"cannot connect to ws://127\.0\.0\.1:9/x"):
        await RealtimeSocket.open("p", "ws://127.0.0.1:9/x?key=K", timeout_s=2)


def test_safe_url_drops_query_and_credentials() -> None:
    assert safe_url("wss://u:p@host.example:443/ws?key=abc") == "wss://host.example:443/ws"


def test_negotiation_passes_ulaw_through_where_accepted() -> None:
    assert negotiate(PCMU_8K, [PCM16_24K, PCMU_8K, PCMA_8K]) == PCMU_8K
    assert negotiate(PCMU_8K, [PCM16_16K]) == PCM16_16K  # Gemini: decode and resample
    assert negotiate(PCM16_16K, [PCM16_24K, PCMU_8K]) == PCM16_24K
    assert negotiate(PCM16_24K, [PCM16_8K, PCM16_16K]) == PCM16_16K


def test_converter_passthrough_is_identity_and_resampling_keeps_duration() -> None:
    frame = ulaw_encode(np.zeros(160, dtype=np.int16))
    same = AudioConverter(PCMU_8K, PCMU_8K)
    assert same.passthrough and same.convert(frame) is frame
    up = AudioConverter(PCMU_8K, PCM16_16K)
    t = np.arange(8000) / 8000
    tone = ulaw_encode((8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16))
    out = b"".join(up.convert(tone[i : i + 160]) for i in range(0, len(tone), 160)) + up.flush()
    assert abs(len(out) - 32000) <= 64  # one second of 16 kHz PCM16
    down = AudioConverter(PCM16_24K, PCMU_8K)
    pcm = (np.zeros(480, dtype=np.int16)).tobytes()
    assert len(down.convert(pcm[:7]) + down.convert(pcm[7:])) <= 160  # odd byte carried over, never lost


def test_live_streams_hold_little_audio_back() -> None:
    """A caller hears the resampler's buffering as latency: upsampling holds nothing, downsampling ≤ 60 ms."""
    up = AudioConverter(PCMU_8K, PCM16_16K)
    assert len(up.convert(b"\xff" * 160)) > 0  # the first 20 ms frame comes out at once
    down = AudioConverter(PCM16_24K, PCMU_8K)
    first = next(i for i in range(20) if down.convert(b"\x00" * 960))
    assert (first + 1) * 20 <= 60


def test_gemini_answer_to_the_phone_keeps_the_voice_and_only_g711_targets_dither() -> None:
    """24 kHz PCM16 → 8 kHz μ-law in 20 ms pieces (soxr's cheaper int16 mode): the tone survives at full level and
    digital silence stays μ-law silence; towards PCM16 the resampler does not dither (the VAD sees true zeros)."""
    t = np.arange(24000) / 24000
    tone = (8000 * np.sin(2 * np.pi * 330 * t)).astype("<i2").tobytes()
    down = AudioConverter(PCM16_24K, PCMU_8K)
    out = b"".join(down.convert(tone[i : i + 960]) for i in range(0, len(tone), 960)) + down.flush()
    heard = ulaw_decode(out).astype(np.float64)
    assert abs(len(heard) - 8000) <= 16
    mid = heard[800:7200]  # past the filter's start-up, before its tail
    ref = 8000 * np.sin(2 * np.pi * 330 * (np.arange(len(heard)) / 8000))
    lag = max(range(0, 40), key=lambda k: float(np.dot(mid, ref[800 - k : 7200 - k])))
    error = mid - ref[800 - lag : 7200 - lag]
    assert 10 * np.log10(np.mean(ref**2) / np.mean(error**2)) > 25  # μ-law and the filter, no more
    silence = AudioConverter(PCM16_24K, PCMU_8K)
    quiet = ulaw_decode(b"".join(silence.convert(b"\x00" * 960) for _ in range(20)))
    assert np.abs(quiet).max() <= 8  # soxr's ±1 LSB of dither: at most μ-law's smallest step (-72 dBFS)
    pcm = AudioConverter(PCM16_24K, PCM16_8K)
    assert set(b"".join(pcm.convert(b"\x00" * 960) for _ in range(20))) <= {0}


def test_mulaw_to_pcm_at_the_same_rate_is_one_exact_lookup() -> None:
    """Every μ-law code decodes to the same PCM16 bytes through the one-lookup path as through the samples."""
    codes = bytes(range(256)) * 2
    dec = AudioConverter(PCMU_8K, PCM16_8K)
    assert not dec.resamples
    assert dec.convert(codes) == ulaw_decode(codes).astype("<i2").tobytes() == ulaw_to_pcm16(codes)
    assert AudioConverter(PCMU_8K, PCM16_16K).resamples


def test_phone_frames_reach_the_session_from_their_codes_unless_a_resampler_needs_the_whole_stream() -> None:
    """μ-law in, μ-law session: the wire's bytes. PCM16 8 kHz session: decoded from the codes. 16 kHz session: the
    PCM path, so the resampler's state sees muted (PCM) frames and phone frames as one stream."""
    codes = bytes(range(0, 256, 2)) + bytes(32)  # 160 codes
    frame = AudioFrame.from_ulaw(codes)
    backend = cast(Any, SimpleNamespace(sample_rate=8000))

    def caller(spec: AudioSpec) -> CallerInput:
        return CallerInput(backend, cast(Any, None), cast(Any, SimpleNamespace(input_spec=spec)), None)

    assert caller(PCMU_8K).payload(frame) is codes
    assert caller(PCM16_8K).payload(frame) == ulaw_to_pcm16(codes)
    up = caller(PCM16_16K)
    assert up._from_ulaw is None and len(up.payload(frame)) > 0

"""Audio frames, G.711 codecs, resampling and chunking."""

from __future__ import annotations

import hashlib
import importlib
import warnings

import numpy as np
import pytest

from engine.voice import g711
from engine.voice.audio import AudioFrame, Chunker, StreamResampler, chunk, concat, resample, rms_dbfs

ALL_PCM = np.arange(-32768, 32768, dtype=np.int16)


def test_ulaw_known_values() -> None:
    assert g711.ulaw_encode(np.array([0, -1, 32767, -32768, 1000, -1000], dtype=np.int16)) == bytes(
        [0xFF, 0x7E, 0x80, 0x00, 0xCE, 0x4E]
    )
    assert g711.ulaw_decode(bytes([0x00, 0x80, 0xFF, 0x7F])).tolist() == [-32124, 32124, 0, 0]


def test_alaw_known_values() -> None:
    assert g711.alaw_encode(np.array([0, -1, 32767, -32768, 1000, -1000], dtype=np.int16)) == bytes(
        [0xD5, 0x55, 0xAA, 0x2A, 0xFA, 0x7A]
    )
    assert g711.alaw_decode(bytes([0xD5, 0x55, 0xAA, 0x2A])).tolist() == [8, -8, 32256, -32256]


@pytest.mark.parametrize(
    ("codec", "enc_sha", "dec_sha"),
    [
        (
            "ulaw",
            "81d633c9e6972a18c74a58720b96cb8ca0bdd096d4060b646dd708c3b846019a",
            "3dab54339e520bb2c924826e3b72a917a2b612e9fd12fc867500f1d983a75827",
        ),
        (
            "alaw",
            "38488f6fd710f4686360edc4d38639f96c491595ef93f8eb8d62d5e07ca6ce7b",
            "e04788d110e58ff8c70c93b8480190d973e3b67876b6119abbaec766cc75c174",
        ),
    ],
)
def test_full_tables_match_reference(codec: str, enc_sha: str, dec_sha: str) -> None:
    # the digests were taken from tables that agree bit for bit with CPython's audioop (G.711 reference coder)
    enc, dec = g711.CODECS[codec]
    assert hashlib.sha256(enc(ALL_PCM)).hexdigest() == enc_sha
    assert hashlib.sha256(dec(bytes(range(256))).astype("<i2").tobytes()).hexdigest() == dec_sha


@pytest.mark.parametrize("codec", ["ulaw", "alaw"])
def test_matches_audioop_when_available(codec: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            audioop = importlib.import_module("audioop")
        except ImportError:
            pytest.skip("audioop is gone in this Python (3.13+); the table digests above cover it")
    enc, dec = g711.CODECS[codec]
    raw = ALL_PCM.astype("<i2").tobytes()
    ref_enc = audioop.lin2ulaw(raw, 2) if codec == "ulaw" else audioop.lin2alaw(raw, 2)
    ref_dec = audioop.ulaw2lin(bytes(range(256)), 2) if codec == "ulaw" else audioop.alaw2lin(bytes(range(256)), 2)
    assert enc(raw) == ref_enc
    assert dec(bytes(range(256))).astype("<i2").tobytes() == ref_dec


@pytest.mark.parametrize("codec", ["ulaw", "alaw"])
def test_round_trip(codec: str) -> None:
    enc, dec = g711.CODECS[codec]
    codes = bytes(range(256))
    back = enc(dec(codes))
    if codec == "alaw":
        assert back == codes
    else:  # μ-law has two codes for zero: 0x7F (-0) decodes to 0, which encodes as 0xFF (+0)
        assert [i for i in range(256) if back[i] != i] == [0x7F]
    pcm = ALL_PCM[np.abs(ALL_PCM.astype(np.int32)) <= 32000]  # μ-law clips at ±32124
    err = np.abs(dec(enc(pcm)).astype(np.int32) - pcm.astype(np.int32))
    # logarithmic companding: the error grows with the magnitude; one step is 1/16 of its segment
    big = np.abs(pcm.astype(np.int32)) > 256
    assert np.all(err[big] <= np.abs(pcm[big].astype(np.int32)) / 16)
    assert np.all(err[~big] <= 16)


def test_codec_input_errors() -> None:
    with pytest.raises(ValueError, match="even number of bytes"):
        g711.ulaw_encode(b"\x00\x01\x02")
    with pytest.raises(TypeError, match="int16"):
        g711.alaw_encode(np.zeros(4, dtype=np.float32))


def test_frame_basics() -> None:
    f = AudioFrame.from_pcm(np.arange(160, dtype=np.int16).astype("<i2").tobytes(), 8000, timestamp=1.0)
    assert f.num_samples == 160
    assert f.duration == pytest.approx(0.02)
    assert f.end_time == pytest.approx(1.02)
    assert f.pcm == np.arange(160, dtype=np.int16).astype("<i2").tobytes()
    assert not f.samples.flags.writeable
    with pytest.raises(ValueError, match="sample_rate"):
        AudioFrame(np.zeros(4, dtype=np.int16), 0)
    with pytest.raises(ValueError, match="even number"):
        AudioFrame.from_pcm(b"\x00", 8000)


def test_rms_dbfs() -> None:
    assert rms_dbfs(np.zeros(100, dtype=np.int16)) == -120.0
    square = np.tile(np.array([32767, -32767], dtype=np.int16), 50)
    assert rms_dbfs(square) == pytest.approx(0.0, abs=0.01)
    assert rms_dbfs((square // 10).astype(np.int16)) == pytest.approx(-20.0, abs=0.1)


def _tone(freq: float, rate: int, seconds: float) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (10000 * np.sin(2 * np.pi * freq * t)).astype(np.int16)


@pytest.mark.parametrize(("src", "dst"), [(22050, 16000), (16000, 8000), (8000, 48000), (44100, 16000)])
def test_resample_length_and_frequency(src: int, dst: int) -> None:
    x = _tone(440.0, src, 1.0)
    y = resample(x, src, dst)
    assert abs(y.size - dst) <= 1
    spectrum = np.abs(np.fft.rfft(y.astype(np.float64)))
    peak_hz = np.argmax(spectrum) * dst / y.size
    assert peak_hz == pytest.approx(440.0, abs=2.0)


def test_stream_resampler_matches_total_length() -> None:
    x = _tone(300.0, 22050, 1.0)
    rs = StreamResampler(22050, 16000)
    parts = [rs.process(x[i : i + 1000]) for i in range(0, x.size, 1000)]
    parts.append(rs.flush())
    assert abs(sum(p.size for p in parts) - 16000) <= 2


def test_chunking_exact_sizes_and_timestamps() -> None:
    frames = [AudioFrame(np.ones(n, dtype=np.int16), 16000, 0.0) for n in (100, 500, 333)]
    out = list(chunk(frames, 20))  # 320 samples per chunk; 933 samples -> 2 full + 1 padded
    assert [f.num_samples for f in out] == [320, 320, 320]
    assert [round(f.timestamp, 4) for f in out] == [0.0, 0.02, 0.04]
    assert int(out[-1].samples[293:].sum()) == 0  # padding is silence
    c = Chunker(16000, 20)
    assert c.push(AudioFrame(np.ones(300, dtype=np.int16), 16000)) == []
    assert c.flush(pad=False)[0].num_samples == 300
    with pytest.raises(ValueError, match="resample first"):
        c.push(AudioFrame(np.ones(300, dtype=np.int16), 8000))


def test_concat() -> None:
    a = AudioFrame(np.ones(10, dtype=np.int16), 8000, 0.5)
    b = AudioFrame(np.zeros(5, dtype=np.int16), 8000, 0.6)
    joined = concat([a, b])
    assert joined.num_samples == 15 and joined.timestamp == 0.5
    with pytest.raises(ValueError, match="8000 Hz and 16000 Hz"):
        concat([a, AudioFrame(np.ones(3, dtype=np.int16), 16000)])

"""The flight recorder: each call's events as JSON lines (read back as the same events), secrets masked on the way
to disk, a killed engine's file still readable, retention by age and size, config validation, voice audio as WAV."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from engine.app import Engine
from engine.config import ConfigError, load_settings
from engine.config.models import Settings
from engine.events import CallStarted, TranscriptAdded
from engine.recorder.codec import RecordingError, read_recording
from engine.recorder.export import render, summarize
from engine.recorder.files import enforce_retention, find_recording, list_recordings, stem_for
from engine.recorder.writer import RecordingWriter
from engine.redaction.redactor import Redactor
from tests.engine.core.helpers import echo_tool, settings_with
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
ECHO = [{"name": "echo", "args": {"text": "{text}"}}]
INTENTS = [{"name": "echo", "patterns": [r"echo (?P<text>\w+)"], "tools": ECHO, "reply": "I said {result}."}]


def _settings(tmp_path: Path, **recording: object) -> Settings:
    return settings_with(tmp_path, INTENTS, ["echo"], recording={"dir": str(tmp_path / "rec"), **recording})


async def test_a_call_is_recorded_and_reads_back_as_the_events_the_bus_carried(tmp_path: Path) -> None:
    engine = Engine(_settings(tmp_path), extra_tools=[echo_tool()])
    async with engine:
        sub = engine.bus.subscribe(maxsize=10_000)
        session = await engine.start_call("c", caller_name="Ann")
        await engine.user_said(session.call_id, "echo please")
        engine.set_tier(session.call_id, "deep")
        await engine.end_call(session.call_id, "done")
        live = [e for e in sub.drain() if getattr(e, "call_id", None) == session.call_id]
    path = find_recording(tmp_path / "rec", session.call_id)
    assert path is not None and path.name.endswith(f"-{session.call_id}.jsonl")
    rec = read_recording(path)
    assert rec.header["call_id"] == session.call_id and rec.damaged == 0
    assert [e.to_dict() for e in rec.events()] == [json.loads(e.to_json()) for e in live]
    assert type(rec.events()[0]) is CallStarted
    s = summarize(rec)
    assert [t["role"] for t in s["transcript"]][:2] == ["assistant", "user"]
    assert s["tools"][0]["exposed_name"] == "echo" and s["tools"][0]["status"] == "success"
    assert s["tiers"][-1]["new"] == "deep" and s["end_reason"] == "done"
    md = render(rec, "md")
    assert "**user:** echo please" in md and "| echo |" in md and "operator override" in md


async def test_recording_off_writes_nothing(tmp_path: Path) -> None:
    async with Engine(_settings(tmp_path, enabled=False), extra_tools=[echo_tool()]) as engine:
        session = await engine.start_call("c")
        await engine.end_call(session.call_id)
    assert not (tmp_path / "rec").exists()


async def test_no_secret_lands_in_a_recording(tmp_path: Path) -> None:
    secret = "sk-live-0123456789abcdef"
    # through the engine: the secret is said on the call
    engine = Engine(_settings(tmp_path), extra_tools=[echo_tool()])
    engine.redactor.update({secret})
    async with engine:
        session = await engine.start_call("c")
        await engine.user_said(session.call_id, f"my key is {secret} ok")
        await engine.end_call(session.call_id)
    # straight into the writer (an event the bus did not mask): the writer masks on its own
    writer = RecordingWriter(tmp_path / "w", Redactor({secret}), queue_size=100, audio=False)
    writer.start()
    said = TranscriptAdded(call_id="x", role="user", text=f"key={json.dumps(secret)} {secret}")
    writer.offer_events([CallStarted(call_id="x", context="c", provider="p"), said])
    writer.close()
    files = [*(tmp_path / "rec").glob("*.jsonl"), *(tmp_path / "w").glob("*.jsonl")]
    assert len(files) == 2
    for f in files:
        text = f.read_text()
        assert secret not in text and "0123456789abcdef" not in text
        assert "••••••" in text


KILLED = textwrap.dedent("""
    import asyncio, os, signal, sys
    from engine.app import Engine
    from tests.engine.core.helpers import echo_tool, settings_with
    from pathlib import Path

    async def main():
        tmp = Path(sys.argv[1])
        s = settings_with(tmp, [], [], recording={"dir": str(tmp / "rec")})
        engine = Engine(s)
        await engine.start()
        session = await engine.start_call("c")
        await engine.user_said(session.call_id, "hello before the crash")
        assert await engine.recorder.sync()
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
""")


def test_a_killed_engine_leaves_a_readable_recording(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, "-c", KILLED, str(tmp_path)], cwd=ROOT, env=env, timeout=60, capture_output=True, text=True
    )
    assert p.returncode == -9, p.stderr
    (path,) = (tmp_path / "rec").glob("*.jsonl")
    rec = read_recording(path)
    assert rec.damaged == 0
    texts = [d.get("text") for d in rec.lines if d["type"] == "transcript.added"]
    assert "hello before the crash" in texts
    s = summarize(rec)
    assert s["incomplete"] is True and "not recorded (incomplete)" in render(rec, "md")


def test_a_torn_last_line_is_skipped_and_a_non_recording_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    good = CallStarted(call_id="c1", context="c", provider="p").to_json()
    p.write_text(good + "\n" + good[:30])
    rec = read_recording(p)
    assert len(rec.events()) == 1 and rec.damaged == 1
    p.write_text("")
    with pytest.raises(RecordingError, match=r"x\.jsonl holds no recorded events"):
        read_recording(p)
    with pytest.raises(RecordingError, match="cannot read the recording"):
        read_recording(tmp_path / "missing.jsonl")


def _fake(directory: Path, call_id: str, started: float, size: int, age_days: float, now: float) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    p = directory / f"{stem_for(call_id, started)}.jsonl"
    p.write_bytes(b"x" * size)
    wav = p.with_name(p.name.removesuffix(".jsonl") + ".caller.wav")
    wav.write_bytes(b"w" * size)
    t = now - age_days * 86400
    os.utime(p, (t, t))
    return p


def test_retention_by_age_then_by_size_oldest_first_never_a_live_one(tmp_path: Path) -> None:
    now = time.time()
    d = tmp_path / "rec"
    old = _fake(d, "call-1", now - 40 * 86400, 1000, 40, now)
    a = _fake(d, "call-2", now - 3000, 300_000, 0.03, now)
    b = _fake(d, "call-3", now - 2000, 300_000, 0.02, now)
    c = _fake(d, "call-4", now - 1000, 300_000, 0.01, now)
    live = _fake(d, "call-5", now - 4000, 300_000, 0.05, now)  # the oldest, but its call is live
    removed = enforce_retention(d, max_age_days=30, max_total_mb=2, keep=frozenset({live}), now=now)
    assert removed == [old, a]  # 5 recordings of 600 kB: too old first, then the oldest until <= 2 MiB
    left = {r.path for r in list_recordings(d)}
    assert left == {b, c, live}
    assert not old.with_name(old.name.removesuffix(".jsonl") + ".caller.wav").exists()


async def test_retention_runs_when_the_engine_starts(tmp_path: Path) -> None:
    now = time.time()
    old = _fake(tmp_path / "rec", "call-1", now - 10 * 86400, 10, 10, now)
    async with Engine(_settings(tmp_path, max_age_days=7)):
        pass
    assert not old.exists()


def test_bad_recording_settings_name_the_key_and_line(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("recording:\n  enabled: true\n  max_total_mb: 0\n")
    with pytest.raises(ConfigError) as e:
        load_settings(cfg)
    assert "recording.max_total_mb" in str(e.value) and "c.yaml:3" in str(e.value)
    cfg.write_text("recording:\n  keep_days: 3\n")
    with pytest.raises(ConfigError, match=r"recording\.keep_days"):
        load_settings(cfg)


def _voice_settings(tmp_path: Path) -> Settings:
    from engine.config.models import ContextConfig, ProviderConfig

    script = tmp_path / "s.yaml"
    script.write_text('greeting: "Hello caller."\nintents: []\nfallback: "Pardon?"\n')
    s = _settings(tmp_path)
    s.providers["brain"] = ProviderConfig(type="scripted", script=str(script))
    s.providers["voice"] = ProviderConfig(type="pipeline", brain="brain", options={"push_to_talk": True})
    s.contexts["desk"] = ContextConfig(provider="voice", tools=[])
    return s


async def test_a_voice_call_keeps_caller_and_agent_audio_as_wav(tmp_path: Path) -> None:
    from tests.fixtures.audio_backends import FeedBackend

    s = _voice_settings(tmp_path)
    made: list[FeedBackend] = []

    def factory(i: object, o: object, rate: int, frame_ms: int) -> FeedBackend:
        made.append(FeedBackend(rate, frame_ms))
        return made[-1]

    async with Engine(s) as engine:
        phone = engine.softphone(factory)
        call_id = await phone.start("desk")
        await wait_until(lambda: made[0].played, within=20, what="the greeting being played")
        made[0].feed((np.sin(np.arange(16000) / 5) * 8000).astype(np.int16))  # one second of tone
        await wait_until(
            lambda: made[0].mic.empty() and phone.state != "speaking", within=20, what="the tone heard and answered"
        )
        await phone.end()
    path = find_recording(tmp_path / "rec", call_id)
    assert path is not None
    stem = path.name.removesuffix(".jsonl")
    with wave.open(str(path.with_name(stem + ".caller.wav"))) as w:
        assert w.getframerate() == 16000 and w.getnframes() >= 16000
    with wave.open(str(path.with_name(stem + ".agent.wav"))) as w:
        assert w.getnframes() > 1600  # the spoken greeting


async def test_calls_made_by_the_voice_driver_factory_record_audio_too(tmp_path: Path) -> None:
    """Phone calls (telephony) and ``ava-engine call --audio-in`` get their voice driver from ``voice_call``."""
    from engine.realtime.driver import voice_call
    from engine.voice.wav_backend import WavBackend
    from tests.fixtures.audio_backends import FeedBackend

    s = _voice_settings(tmp_path)
    async with Engine(s) as engine:
        backend = FeedBackend(16000, 20)
        call = voice_call(engine.voice_parts, backend, "desk")
        assert call.backend is not backend  # the recorder's tap around it
        task = asyncio.create_task(call.run())
        # a quarter second of the greeting has been played (on a loaded machine the first chunk alone is short)
        await wait_until(
            lambda: sum(f.samples.size for f in backend.played) >= 4000, within=20, what="a quarter second played"
        )
        call.stop("done")
        await task
        offline = WavBackend(None, tmp_path / "out.wav")  # a file-to-file call: its audio is on disk already
        assert engine.record_audio(offline, lambda: "x") is offline
        await offline.close()
    path = find_recording(tmp_path / "rec", call.call_id or "")
    assert path is not None
    with wave.open(str(path.with_name(path.name.removesuffix(".jsonl") + ".agent.wav"))) as w:
        assert w.getnframes() > 1600


def test_a_call_is_found_by_its_name_alone_newest_first_and_never_a_lookalike(tmp_path: Path) -> None:
    """``export CALL`` opens only the files named for that call (it once read and parsed every recording in the
    folder), with the answer the full listing would give."""
    d = tmp_path / "rec"
    d.mkdir()

    def make(call_id: str, started: float, dup: str = "") -> Path:
        p = d / f"{stem_for(call_id, started)}{dup}.jsonl"
        p.write_text("{}\n")
        return p

    make("call-1", 1_700_000_000.0)
    newest = make("call-1", 1_700_000_500.25)
    twin = make("call-1", 1_700_000_500.25, "~2")  # a second engine, same id, same millisecond
    make("x-call-1", 1_800_000_000.0)  # ends in "-call-1" too, and is newer
    make("call-10", 1_800_000_000.0)
    for n in range(200):
        make(f"other-{n}", 1_600_000_000.0 + n)
    found = find_recording(d, "call-1")
    assert found in (newest, twin)
    assert found == next(r.path for r in list_recordings(d) if r.call_id == "call-1")
    assert find_recording(d, "x-call-1") is not None and find_recording(d, "call-2") is None
    assert find_recording(tmp_path / "absent", "call-1") is None
    hand = d / "call-2.jsonl"  # a file renamed by hand to the call's id
    hand.write_text("{}\n")
    assert find_recording(d, "call-2") == hand

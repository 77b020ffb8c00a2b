"""A recording carries the MCP servers' states (so a replay can show the Servers screen with no engine), and a file
too large to be a recording is refused before it is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.events import CallEnded, CallStarted, ServerStateChanged
from engine.recorder.codec import MAX_RECORDING_BYTES, RecordingError, read_recording
from engine.recorder.writer import RecordingWriter


def test_server_states_at_the_start_and_each_change_go_into_live_recordings(tmp_path: Path) -> None:
    w = RecordingWriter(tmp_path, lambda s: s, queue_size=100, audio=False)
    w.start()
    up = ServerStateChanged(server="fx", state="up", transport="stdio", protocol_version="2025-11-25", ts=100.0)
    other = ServerStateChanged(server="db", state="failed", last_error="exit 1", ts=101.0)
    w.offer_events([up, other, CallStarted(call_id="c1", context="demo", provider="script", ts=200.0)])
    w.offer_events([ServerStateChanged(server="fx", state="restarting", restarts=1, ts=210.0)])
    w.offer_events([CallEnded(call_id="c1", reason="bye", ts=220.0)])
    w.offer_events([ServerStateChanged(server="fx", state="up", restarts=1, ts=230.0)])  # no live call: nowhere
    w.close()
    (path,) = tmp_path.glob("*.jsonl")
    events = read_recording(path).events()
    assert [(e.type, getattr(e, "server", None), getattr(e, "state", None), e.ts) for e in events] == [
        ("server.state", "fx", "up", 200.0),  # as they stood when the call began, dated to its start
        ("server.state", "db", "failed", 200.0),
        ("call.started", None, None, 200.0),
        ("server.state", "fx", "restarting", 210.0),
        ("call.ended", None, None, 220.0),
    ]
    first = events[0]
    assert isinstance(first, ServerStateChanged)
    assert (first.transport, first.protocol_version) == ("stdio", "2025-11-25")


def test_a_file_too_large_for_a_recording_is_refused_unread(tmp_path: Path) -> None:
    p = tmp_path / "huge.jsonl"
    with p.open("wb") as f:
        f.truncate(MAX_RECORDING_BYTES + 1)  # sparse: no disk used
    with pytest.raises(RecordingError, match=r"huge\.jsonl is 256 MiB: more than a recording can be \(256 MiB\)"):
        read_recording(p)

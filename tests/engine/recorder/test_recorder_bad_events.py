"""One event the recorder cannot write (a lone surrogate in its text) costs that event only, never its batch: the
writer thread used to give up on the rest of the batch it was in (a whole call's end, hundreds of events)."""

from __future__ import annotations

from pathlib import Path

from engine.core.metrics import Metrics
from engine.events import CallEnded, CallStarted, TranscriptAdded
from engine.events.bus import SkippedEvents
from engine.recorder.codec import read_recording
from engine.recorder.files import find_recording
from engine.recorder.writer import RecordingWriter
from engine.redaction.redactor import Redactor


def test_a_bad_event_is_skipped_and_counted_and_the_rest_of_its_batch_is_recorded(tmp_path: Path) -> None:
    metrics = Metrics()
    writer = RecordingWriter(
        tmp_path, Redactor(), queue_size=100, audio=False, skipped=SkippedEvents("recorder", metrics.count_skipped)
    )
    writer.start()
    batch = [
        CallStarted(call_id="x", context="c", provider="p"),
        TranscriptAdded(call_id="x", role="user", text="before"),
        TranscriptAdded(call_id="x", role="user", text="bad \ud800"),
        *(TranscriptAdded(call_id="x", role="assistant", text=f"after {n}") for n in range(500)),
        CallEnded(call_id="x", reason="done", duration_s=1.0),
    ]
    writer.offer_events(batch)
    assert writer.flush()
    writer.close()
    path = find_recording(tmp_path, "x")
    assert path is not None
    rec = read_recording(path)
    assert rec.damaged == 0
    said = [e.text for e in rec.events() if isinstance(e, TranscriptAdded)]
    assert said == ["before", *(f"after {n}" for n in range(500))]
    assert isinstance(rec.events()[-1], CallEnded)
    assert writer.skipped.skipped == 1 and writer.errors == 0
    text = metrics.render().decode()
    assert 'ai_agent_events_skipped_total{consumer="recorder",reason="invalid_text"} 1.0' in text

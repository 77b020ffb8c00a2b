"""Recordings as text: the header line, events to JSON lines and back, and a reader that survives a torn file.

Why its own module: the writer, ``ava-engine export`` and the console's replay all read the same format, and the
replay must get back the very event classes the live bus carries (so it goes through the same state code). A line
of a type this engine does not know (a newer recording) is skipped and counted, never an error; so is a line cut
short by a killed engine (only the last one can be).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import events as _events
from engine.events import Event

FORMAT = 1
HEADER_TYPE = "recording.header"

_CLASSES: dict[str, type[Event]] | None = None


def event_classes() -> dict[str, type[Event]]:
    """Every event class of ``engine.events`` by its dotted type."""
    global _CLASSES
    if _CLASSES is None:
        found: dict[str, type[Event]] = {}
        for obj in vars(_events).values():
            if isinstance(obj, type) and issubclass(obj, Event) and obj is not Event:
                found[obj.type] = obj
        _CLASSES = found
    return _CLASSES


def header_line(call_id: str, started: float, version: str, trace_id: str | None = None) -> str:
    """The first line of a call's recording; ``trace_id`` (32 hex digits) when the call is traced."""
    header = {"type": HEADER_TYPE, "format": FORMAT, "call_id": call_id, "started": started, "engine_version": version}
    if trace_id:
        header["trace_id"] = trace_id
    return json.dumps(header)


def event_from_dict(d: dict[str, Any]) -> Event | None:
    """The event a recorded line describes, or None for a type this engine does not know."""
    cls = event_classes().get(str(d.get("type")))
    if cls is None:
        return None
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name not in d:
            continue
        v = d[f.name]
        if isinstance(v, list) and str(f.type).startswith("tuple"):
            v = tuple(v)
        kw[f.name] = v
    try:
        return cls(**kw)
    except TypeError:  # a required field missing: not an event this engine can rebuild
        return None


@dataclass
class Recording:
    """A recording read back: its header, its events as recorded (dicts) and what could not be read."""

    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    lines: list[dict[str, Any]] = field(default_factory=list)
    #: Lines that were not JSON objects (a torn last line after a kill).
    damaged: int = 0

    @property
    def call_id(self) -> str:
        return str(self.header.get("call_id") or next((d.get("call_id") for d in self.lines), "") or "")

    def events(self) -> list[Event]:
        """The recorded events as the engine's event classes (unknown types left out)."""
        out = []
        for d in self.lines:
            ev = event_from_dict(d)
            if ev is not None:
                out.append(ev)
        return out


class RecordingError(Exception):
    """A file that is not a recording (the message names the file and why)."""


#: The largest file read as a recording (read whole): a day-long call at full load is far smaller.
MAX_RECORDING_BYTES = 256 * 2**20


def read_recording(path: str | Path) -> Recording:
    """Read a ``.jsonl`` recording; ``RecordingError`` when the file is missing or holds no recording at all."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_RECORDING_BYTES:
            raise RecordingError(
                f"{p} is {size // 2**20} MiB: more than a recording can be ({MAX_RECORDING_BYTES // 2**20} MiB); "
                "is it a recording?"
            )
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise RecordingError(f"cannot read the recording {p}: {e.strerror or e}") from None
    rec = Recording(p)
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except ValueError:
            rec.damaged += 1
            continue
        if not isinstance(d, dict) or "type" not in d:
            rec.damaged += 1
            continue
        if d["type"] == HEADER_TYPE and n == 1:
            rec.header = d
            if int(d.get("format", 0)) > FORMAT:
                raise RecordingError(f"{p}: recording format {d.get('format')} is newer than this engine reads")
            continue
        rec.lines.append(d)
    if not rec.header and not rec.lines:
        raise RecordingError(f"{p} holds no recorded events (is it a recording? they end in .jsonl)")
    return rec

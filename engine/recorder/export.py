"""A recorded call as a document: its transcript, tool invocations and tier changes, as Markdown or JSON.

Why from the recording and not from a live engine: the call may have ended hours ago in another process; the
recording is the one place that has all of it (``ava-engine export CALL_ID``, the console's export key).
``summarize`` folds the recorded lines into a plain dict (the JSON export, and what Markdown is rendered from).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from engine.recorder.codec import Recording
from engine.recorder.export_usage import usage_markdown, usage_summary

FORMATS = ("md", "json")


def summarize(rec: Recording) -> dict[str, Any]:
    """The call's facts, transcript, tools (request joined with its outcome), tiers and usage, in recorded order."""
    call: dict[str, Any] = {"call_id": rec.call_id, "recording": str(rec.path)}
    if rec.header.get("trace_id"):  # the call's OpenTelemetry trace (engine.telemetry)
        call["trace_id"] = rec.header["trace_id"]
    transcript: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    open_tools: dict[str, dict[str, Any]] = {}
    row: dict[str, Any] | None
    tiers: list[dict[str, Any]] = []
    for d in rec.lines:
        t = d.get("type")
        if t == "call.started":
            call.update(
                context=d.get("context"),
                provider=d.get("provider"),
                started=d.get("ts"),
                caller=d.get("caller_name") or d.get("caller_number"),
                direction=d.get("direction"),
                tier=d.get("tier"),
            )
        elif t == "call.ended":
            call.update(ended=d.get("ts"), end_reason=d.get("reason"), duration_s=d.get("duration_s"))
        elif t == "transcript.added":
            transcript.append({"ts": d.get("ts"), "role": d.get("role"), "text": d.get("text")})
        elif t == "tool.requested":
            row = {**_tool_row(d, d.get("arguments")), "status": "running", "latency_ms": None, "message": ""}
            tools.append(row)
            open_tools[str(d.get("tool_call_id"))] = row
        elif t in ("tool.completed", "tool.rejected", "tool.cancelled"):
            row = open_tools.pop(str(d.get("tool_call_id")), None)
            if row is None:  # its request is not in the recording
                row = _tool_row(d, None)
                tools.append(row)
            if t == "tool.completed":
                row.update(status=d.get("status"), latency_ms=d.get("latency_ms"), message=d.get("message"))
            else:
                row.update(status=t.split(".")[1], message=d.get("reason") or d.get("message") or "")
        elif t == "tier.changed":
            tiers.append({"ts": d.get("ts"), "old": d.get("old"), "new": d.get("new"), "reason": d.get("reason")})
    if "ended" not in call:
        call["end_reason"] = None
        call["incomplete"] = True  # the engine stopped (or was killed) before the call ended
    usage = usage_summary(rec.lines)
    tail = {"tiers": tiers, "usage": usage, "damaged_lines": rec.damaged}
    return {**call, "transcript": transcript, "tools": tools, **tail}


def _tool_row(d: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """A tool call's row in the summary, from its ``tool.*`` event ``d``."""
    keys = ("ts", "tool_call_id", "exposed_name", "server", "tool")
    return {**{k: d.get(k) for k in keys}, "arguments": arguments}


def _utc(ts: Any) -> str:
    if not isinstance(ts, int | float):
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _hms(ts: Any) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ts)) if isinstance(ts, int | float) else "?"


def _cell(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) if v is not None else ""
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(s: dict[str, Any]) -> str:
    out = [f"# Call {s['call_id']}", ""]
    facts = [
        ("Context", s.get("context")),
        ("Provider", s.get("provider")),
        ("Caller", s.get("caller")),
        ("Started", _utc(s.get("started"))),
        ("Ended", f"{_utc(s['ended'])} ({s.get('end_reason')})" if s.get("ended") else "not recorded (incomplete)"),
        ("Duration", f"{s['duration_s']:.1f} s" if isinstance(s.get("duration_s"), int | float) else None),
        ("Recording", s.get("recording")),
        ("Trace", s.get("trace_id")),
    ]
    out += [f"- **{k}:** {v}" for k, v in facts if v is not None]
    out += ["", "## Transcript", ""]
    out += [f"- `{_hms(t['ts'])}` **{t['role']}:** {t['text']}" for t in s["transcript"]] or ["(nothing was said)"]
    out += ["", "## Tools", ""]
    if s["tools"]:
        out += ["| Time | Tool | Server | Status | Latency | Arguments | Result |", "|---|---|---|---|---|---|---|"]
        for t in s["tools"]:
            lat = f"{t['latency_ms']:.0f} ms" if isinstance(t.get("latency_ms"), int | float) else ""
            cells = [
                _hms(t["ts"]),
                _cell(t["exposed_name"]),
                _cell(t.get("server")),
                _cell(t.get("status")),
                lat,
                _cell(t.get("arguments")),
                _cell(t.get("message")),
            ]
            out.append("| " + " | ".join(cells) + " |")
    else:
        out.append("(no tool was called)")
    out += ["", "## Tiers", ""]
    if s["tiers"]:
        out += ["| Time | From | To | Why |", "|---|---|---|---|"]
        out += [
            f"| {_hms(t['ts'])} | {_cell(t['old'])} | {_cell(t['new'])} | {_cell(t['reason'])} |" for t in s["tiers"]
        ]
    else:
        out.append(f"(no change: {s.get('tier') or '?'} throughout)")
    out += usage_markdown(s.get("usage"))
    if s.get("damaged_lines"):
        out += ["", f"_{s['damaged_lines']} damaged line(s) of the recording were skipped._"]
    return "\n".join(out) + "\n"


def render(rec: Recording, fmt: str) -> str:
    """The export of a recording in ``fmt`` (``md`` or ``json``)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (md or json)")
    s = summarize(rec)
    return to_markdown(s) if fmt == "md" else json.dumps(s, ensure_ascii=False, indent=2) + "\n"


def export_recording(path: str | Path, fmt: str = "md", out: str | Path | None = None) -> Path:
    """Export the recording at ``path`` as ``fmt`` into ``out`` (default: beside it, ``.md``/``.json``); returns
    the file written. ``RecordingError`` when ``path`` is no recording, ``OSError`` when ``out`` cannot be written."""
    from engine.recorder.codec import read_recording

    rec = read_recording(path)
    target = Path(out) if out is not None else rec.path.with_suffix(f".{fmt}")
    target.write_text(render(rec, fmt), encoding="utf-8")
    return target

"""E-mail messages built from a call: the admin's summary, the caller's transcript, a link a tool asked the caller
to open (URL-mode elicitation), the test message.

Why a module of its own: the text of a message comes from templates a user may override (files under the config
folder), and everything a caller said ends up in them, so escaping lives in one place. Templates use ``$name``
placeholders (``string.Template``; unknown ones stay as written, nothing raises on user-written text). In the HTML
part every value — the caller's name, each transcript line, tool arguments and results — is HTML-escaped before it
is put in, so a caller saying ``<script>`` shows as text; the plain-text part gets the values as they are.

``CallRecord`` is a snapshot of a call (its history items are immutable, the tuple is copied once), taken at the end
of a call in microseconds; rendering happens later, off the call's end path.
"""

from __future__ import annotations

import html
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from engine.core.templates import render
from engine.sessions.history import HistoryItem, Message, ToolCallItem, ToolResultItem
from engine.sessions.session import CallSession

Kind = Literal["summary", "transcript", "link", "test"]
KINDS: tuple[Kind, ...] = ("summary", "transcript", "link", "test")
#: The tools whose results say how a transfer went.
TRANSFER_TOOLS = frozenset({"transfer", "blind_transfer", "cancel_transfer"})
#: A tool argument or result longer than this is cut in a message (a whole MCP payload helps nobody).
MAX_VALUE_CHARS = 2000


@dataclass(frozen=True, slots=True)
class CallRecord:
    """What a message says about one call (taken from its ``CallSession``)."""

    call_id: str
    context: str
    caller_name: str | None
    caller_number: str | None
    started_at: float
    ended_at: float | None
    end_reason: str | None
    items: tuple[HistoryItem, ...]

    @classmethod
    def of(cls, session: CallSession) -> CallRecord:
        return cls(
            session.call_id,
            session.context,
            session.caller_name,
            session.caller_number,
            session.started_at,
            session.ended_at,
            session.end_reason,
            session.history.items(),
        )

    @property
    def duration_s(self) -> float:
        end = self.ended_at if self.ended_at is not None else self.started_at
        return max(0.0, end - self.started_at)


@dataclass(frozen=True, slots=True)
class Rendered:
    """A message's subject and its two alternatives."""

    subject: str
    text: str
    html: str


def _clip(s: str) -> str:
    return s if len(s) <= MAX_VALUE_CHARS else s[:MAX_VALUE_CHARS] + " …"


def _value(v: Any) -> str:
    if isinstance(v, str):
        return _clip(v)
    try:
        return _clip(json.dumps(v, ensure_ascii=False, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return _clip(str(v))


def _clock(ts: float, start: float) -> str:
    """``+MM:SS`` from the start of the call, then the wall-clock time (UTC)."""
    off = max(0, int(ts - start))
    wall = datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S")
    return f"+{off // 60:02d}:{off % 60:02d} {wall}"


def duration_text(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def transfer_outcome(record: CallRecord) -> str:
    """How the call's transfers went (the last transfer tool's result), or "none"."""
    outcome = "none"
    for item in record.items:
        if isinstance(item, ToolResultItem) and item.name in TRANSFER_TOOLS:
            outcome = f"{item.name}: {item.status} — {item.message}"
    return outcome


def _rows(record: CallRecord) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str, str]]]:
    """(time, speaker, text) per message; (time, tool, arguments, result) per tool call."""
    said: list[tuple[str, str, str]] = []
    results: dict[str, ToolResultItem] = {i.call_id: i for i in record.items if isinstance(i, ToolResultItem)}
    tools: list[tuple[str, str, str, str]] = []
    for item in record.items:
        if isinstance(item, Message):
            who = {"user": "Caller", "assistant": "Agent"}.get(item.role, "System")
            said.append((_clock(item.ts, record.started_at), who, item.text))
        elif isinstance(item, ToolCallItem):
            r = results.get(item.id)
            outcome = f"{r.status}: {_clip(r.message)}" if r is not None else "no result"
            if r is not None and r.data is not None:
                outcome += f" {_value(r.data)}"
            tools.append((_clock(item.ts, record.started_at), item.name, _value(item.arguments), outcome))
    return said, tools


def _text_blocks(record: CallRecord) -> tuple[str, str]:
    said, tools = _rows(record)
    transcript = "\n".join(f"[{t}] {who}: {text}" for t, who, text in said) or "(nothing was said)"
    calls = "\n".join(f"[{t}] {name}({args}) -> {res}" for t, name, args, res in tools) or "(none)"
    return transcript, calls


def _html_blocks(record: CallRecord) -> tuple[str, str]:
    e = html.escape
    said, tools = _rows(record)
    transcript = (
        "<table>\n"
        + "\n".join(f"<tr><td>{e(t)}</td><th align='left'>{e(w)}</th><td>{e(x)}</td></tr>" for t, w, x in said)
        + "\n</table>"
        if said
        else "<p>(nothing was said)</p>"
    )
    calls = (
        "<table>\n"
        + "\n".join(
            f"<tr><td>{e(t)}</td><td><code>{e(n)}</code></td><td><code>{e(a)}</code></td><td>{e(r)}</td></tr>"
            for t, n, a, r in tools
        )
        + "\n</table>"
        if tools
        else "<p>(none)</p>"
    )
    return transcript, calls


class Templates:
    """The message templates: files of a user folder where present, the built-in ones otherwise."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._cache: dict[str, string.Template] = {}

    def get(self, name: str) -> string.Template:
        """``summary.html`` and the like; read once per ``Templates``."""
        t = self._cache.get(name)
        if t is None:
            user = self.folder / name if self.folder is not None else None
            if user is not None and user.is_file():
                text = user.read_text(encoding="utf-8")
            else:
                text = resources.files("engine.email").joinpath("templates", name).read_text(encoding="utf-8")
            t = self._cache[name] = string.Template(text)
        return t


def _fields(record: CallRecord | None, now: float) -> dict[str, str]:
    if record is None:
        return {"date": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M UTC")}
    return {
        "date": datetime.fromtimestamp(record.started_at, UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "caller": record.caller_name or record.caller_number or "unknown caller",
        "caller_number": record.caller_number or "unknown",
        "context": record.context,
        "call_id": record.call_id,
        "duration": duration_text(record.duration_s),
        "end_reason": record.end_reason or "",
        "transfer": transfer_outcome(record),
    }


def render_message(
    kind: Kind,
    record: CallRecord | None,
    templates: Templates,
    subjects: Mapping[str, str],
    now: float,
    extra: Mapping[str, str] | None = None,
) -> Rendered:
    """Subject, text and HTML of one message (``record`` None for ``test``, or a link outside a call); ``extra``
    adds fields of that kind (a link's ``message`` and ``url``), escaped in the HTML part like every other."""
    fields = {**_fields(record, now), **(extra or {})}
    text_fields = dict(fields)
    html_fields = {k: html.escape(v) for k, v in fields.items()}
    if record is not None:
        text_fields["transcript"], text_fields["tools"] = _text_blocks(record)
        html_fields["transcript"], html_fields["tools"] = _html_blocks(record)
    subject = render(subjects.get(kind, "ava-engine: {kind}"), {**fields, "kind": kind})
    subject = " ".join(subject.split())[:250]  # one line: a caller's name with a newline must not add headers
    return Rendered(
        subject,
        templates.get(f"{kind}.txt").safe_substitute(text_fields),
        templates.get(f"{kind}.html").safe_substitute(html_fields),
    )


def record_to_json(record: CallRecord) -> str:
    """The call as stored with a message the worker renders later (tens of microseconds for a long call)."""
    items: list[dict[str, Any]] = []
    for i in record.items:
        if isinstance(i, Message):
            items.append({"k": "m", "role": i.role, "text": i.text, "ts": i.ts})
        elif isinstance(i, ToolCallItem):
            items.append({"k": "c", "id": i.id, "name": i.name, "args": i.arguments, "group": i.group, "ts": i.ts})
        else:
            items.append(
                {"k": "r", "id": i.call_id, "name": i.name, "status": i.status, "msg": i.message, "data": i.data}
                | {"ts": i.ts}
            )
    head = {
        "call_id": record.call_id,
        "context": record.context,
        "caller_name": record.caller_name,
        "caller_number": record.caller_number,
        "started_at": record.started_at,
        "ended_at": record.ended_at,
        "end_reason": record.end_reason,
    }
    return json.dumps({**head, "items": items}, ensure_ascii=False, default=str)


def record_from_json(text: str) -> CallRecord:
    d = json.loads(text)
    items: list[HistoryItem] = []
    for i in d["items"]:
        if i["k"] == "m":
            items.append(Message(i["role"], i["text"], i["ts"]))
        elif i["k"] == "c":
            items.append(ToolCallItem(i["id"], i["name"], i["args"], i["group"], i["ts"]))
        else:
            items.append(ToolResultItem(i["id"], i["name"], i["status"], i["msg"], i["data"], i["ts"]))
    return CallRecord(
        d["call_id"],
        d["context"],
        d["caller_name"],
        d["caller_number"],
        d["started_at"],
        d["ended_at"],
        d["end_reason"],
        tuple(items),
    )

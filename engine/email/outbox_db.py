"""The outbox's SQLite file: its schema, how it is opened (WAL, ``synchronous=NORMAL``), how a row is read, and
whether the engine that owns a row still runs.

Why apart from ``engine.email.outbox``: the worker and its commands are one job, the file format another.
A committed row survives the process being killed (SIGKILL included); only an OS crash or power loss may take the
last commits, which ``synchronous=NORMAL`` does not wait to reach the disk.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Sequence
from pathlib import Path

from engine.core.processes import pid_alive
from engine.email.mail import Email, Row
from engine.email.recipients import from_json

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    call_id TEXT,
    status TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipients TEXT NOT NULL,
    bcc TEXT NOT NULL,
    subject TEXT NOT NULL,
    text TEXT NOT NULL,
    html TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    resent INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    last_error TEXT,
    record TEXT,
    owner TEXT,
    deliveries TEXT,
    due_since REAL
);
CREATE INDEX IF NOT EXISTS messages_due ON messages (status, next_at);
"""
COLUMNS = (
    "id, message_id, kind, call_id, status, sender, recipients, bcc, subject, text, html, attempts, resent, "
    "next_at, created_at, updated_at, last_error, record, deliveries, due_since"
)
#: Columns added since the first release, with their types: added to an older file when it is opened.
ADDED = {"deliveries": "TEXT", "due_since": "REAL"}
#: Tells this process from an earlier one that had the same pid (a restarted container's engine is often pid 1).
PROCESS_TOKEN = uuid.uuid4().hex[:12]


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating) the file and its table; autocommit, so every statement is committed when it returns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=5000")
    db.executescript(SCHEMA)
    have = {str(r[1]) for r in db.execute("PRAGMA table_info(messages)")}
    for column, kind in ADDED.items():
        if column not in have:
            db.execute(f"ALTER TABLE messages ADD COLUMN {column} {kind}")
    return db


def decode(values: Sequence[object]) -> Row:
    """A row as ``SELECT {COLUMNS}`` returns it."""
    (id_, mid, kind, call_id, status, sender, to, bcc, subject, text, html) = values[:11]
    attempts, resent, next_at, created, updated, err, record, deliveries, due_since = values[11:]
    email = Email(
        str(mid),
        str(kind),
        str(sender),
        tuple(json.loads(str(to))),
        tuple(json.loads(str(bcc))),
        str(subject),
        str(text),
        str(html),
        str(call_id) if call_id is not None else None,
        str(record) if record is not None else None,
    )
    return Row(
        int(id_),  # type: ignore[call-overload]
        email,
        status,  # type: ignore[arg-type]
        int(attempts),  # type: ignore[call-overload]
        bool(resent),
        float(next_at),  # type: ignore[arg-type]
        float(created),  # type: ignore[arg-type]
        float(updated),  # type: ignore[arg-type]
        str(err) if err is not None else None,
        from_json(email, str(deliveries) if deliveries is not None else None),
        float(due_since if due_since is not None else created),  # type: ignore[arg-type]
    )


def owner_alive(owner: str | None, own: str) -> bool:
    """Whether the engine that set a row ``sending`` or ``held`` still runs (this one, or another process on
    this machine sharing the file: ``serve`` and ``ava-engine email test``)."""
    pid_text = (owner or "").partition(":")[0]
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return owner == own  # the same pid, another token: an earlier process (a restarted container)
    return pid_alive(pid)

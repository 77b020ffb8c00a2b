"""SQLite storage for remembered facts, with FTS5 full-text search.

Why it exists: NPCs must remember what players told them across sessions, and a game master must find a
fact by a word or two ("dragon", "owes"). One file, one table of facts keyed by subject, and an FTS5 index
over subject and fact text kept in step by triggers.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

MAX_SUBJECT = 100
MAX_FACT = 1000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY,
    subject TEXT NOT NULL,
    subject_key TEXT NOT NULL,
    fact TEXT NOT NULL,
    session_id TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_subject ON facts(subject_key);
CREATE INDEX IF NOT EXISTS facts_session ON facts(session_id);
CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5(subject, fact, content='facts', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS facts_ai AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, subject, fact) VALUES (new.id, new.subject, new.fact);
END;
CREATE TRIGGER IF NOT EXISTS facts_ad AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, subject, fact) VALUES ('delete', old.id, old.subject, old.fact);
END;
"""


class StoreInputError(ValueError):
    """Bad input to the memory store; the message says which argument and why."""


@dataclass(frozen=True)
class Fact:
    id: int
    subject: str
    fact: str
    session_id: str | None
    created_at: float

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "subject": self.subject,
            "fact": self.fact,
            "session_id": self.session_id,
            "created_at": self.created_at,
        }


def _clean(value: str, name: str, limit: int) -> str:
    text = " ".join(value.split())
    if not text:
        raise StoreInputError(f"{name} is empty; give a short text")
    if len(text) > limit:
        raise StoreInputError(f"{name} is {len(text)} characters long; the limit is {limit}")
    return text


class MemoryStore:
    """The facts database at ``path`` (created with its folder when missing)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Closed by a finaliser on whichever thread the garbage collector runs; sqlite3 here is serialized
        # (threadsafety 3), so sharing the connection is safe and only the module's own same-thread check is off.
        self.db = sqlite3.connect(str(path), check_same_thread=sqlite3.threadsafety != 3)
        self.db.executescript(_SCHEMA)
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    def _facts(self, sql: str, params: tuple[object, ...]) -> list[Fact]:
        return [Fact(*row) for row in self.db.execute(sql, params).fetchall()]

    def known(self, subject: str, fact: str) -> Fact | None:
        """The fact already remembered about ``subject`` in the same words (case and spacing aside), if any."""
        subject = _clean(subject, "subject", MAX_SUBJECT)
        wanted = _clean(fact, "fact", MAX_FACT).casefold()
        return next((f for f in self.about(subject) if f.fact.casefold() == wanted), None)

    def remember(self, subject: str, fact: str, session_id: str | None = None) -> Fact:
        subject = _clean(subject, "subject", MAX_SUBJECT)
        fact = _clean(fact, "fact", MAX_FACT)
        session = _clean(session_id, "session_id", MAX_SUBJECT) if session_id else None
        now = time.time()
        known = self.db.execute(
            "SELECT subject FROM facts WHERE subject_key = ? ORDER BY id LIMIT 1", (subject.casefold(),)
        ).fetchone()
        if known is not None:
            subject = known[0]  # keep the spelling the subject was first remembered with
        with self.db:
            cursor = self.db.execute(
                "INSERT INTO facts(subject, subject_key, fact, session_id, created_at) VALUES (?, ?, ?, ?, ?)",
                (subject, subject.casefold(), fact, session, now),
            )
        assert cursor.lastrowid is not None
        return Fact(cursor.lastrowid, subject, fact, session, now)

    def about(self, name: str) -> list[Fact]:
        key = _clean(name, "name", MAX_SUBJECT).casefold()
        return self._facts(
            "SELECT id, subject, fact, session_id, created_at FROM facts WHERE subject_key = ? ORDER BY id",
            (key,),
        )

    def similar_subjects(self, name: str, limit: int = 5) -> list[str]:
        key = _clean(name, "name", MAX_SUBJECT).casefold()
        rows = self.db.execute(
            "SELECT DISTINCT subject FROM facts WHERE subject_key LIKE ? ORDER BY subject LIMIT ?",
            (f"%{key.replace('%', '').replace('_', '')}%", limit),
        ).fetchall()
        return [row[0] for row in rows]

    def search(self, query: str, limit: int = 10) -> list[Fact]:
        words = re.findall(r"\w+", _clean(query, "query", MAX_FACT))
        if not words:
            raise StoreInputError("query has no words to search for")
        match = " OR ".join('"' + word.replace('"', "") + '"' for word in words)
        return self._facts(
            "SELECT f.id, f.subject, f.fact, f.session_id, f.created_at FROM facts_fts "
            "JOIN facts f ON f.id = facts_fts.rowid WHERE facts_fts MATCH ? "
            "ORDER BY bm25(facts_fts, 2.0, 1.0), f.id LIMIT ?",
            (match, limit),
        )

    def session(self, session_id: str) -> list[Fact]:
        session = _clean(session_id, "session_id", MAX_SUBJECT)
        return self._facts(
            "SELECT id, subject, fact, session_id, created_at FROM facts WHERE session_id = ? ORDER BY id",
            (session,),
        )

"""The memory MCP server: ``remember``, ``search_facts``, ``query_entities``, ``get_summary``.

Why it exists: a game master's NPCs need a memory that survives the call. Facts are stored per subject in
SQLite (FTS5 for search) in the user data directory, and every answer is a sentence an NPC can say.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import platformdirs
from mcp.server import MCPServer
from mcp.types import CallToolResult

from engine.servers.common import (
    env_default,
    failing,
    join_spoken,
    make_parser,
    make_server,
    plural,
    serve,
    spoken_result,
    startup,
    tool_meta,
)
from engine.servers.memory.store import Fact, MemoryStore, StoreInputError

_WRITE_META = tool_meta(estimated_ms=5, max_ms=500, idempotent=False)
_SEARCH_META = tool_meta(estimated_ms=5, max_ms=500, idempotent=True, probe_args={"query": "probe"})
_ENTITY_META = tool_meta(estimated_ms=5, max_ms=500, idempotent=True, probe_args={"name": "probe"})
_SUMMARY_META = tool_meta(estimated_ms=5, max_ms=500, idempotent=True, probe_args={"session_id": "probe"})


def default_db_path() -> Path:
    return Path(platformdirs.user_data_dir("ava-console")) / "memory.sqlite3"


def _listing(facts: list[Fact], with_subject: bool) -> str:
    return join_spoken([f"{f.subject}: {f.fact}" if with_subject else f.fact for f in facts])


def build_server(args: argparse.Namespace, store: MemoryStore) -> MCPServer[Any]:
    server = make_server("memory", "Remembers facts about people, places and things across sessions.", args)

    @server.tool(
        description="Remember a fact about a subject (an NPC, place or thing). session_id is optional.",
        meta=_WRITE_META,
    )
    async def remember(subject: str, fact: str, session_id: str | None = None) -> CallToolResult:
        with failing(StoreInputError, doing="cannot remember that"):
            earlier = store.known(subject, fact)  # said twice, kept once
            saved = earlier or store.remember(subject, fact, session_id)
        count = len(store.about(saved.subject))
        things = plural(count, "thing")
        speech = (
            f"I already knew that about {saved.subject}: {saved.fact}. I know {things} about them."
            if earlier
            else f"Noted about {saved.subject}: {saved.fact}. I now know {things} about them."
        )
        return spoken_result(
            speech, {"fact": saved.as_dict(), "facts_about_subject": count, "already_known": earlier is not None}
        )

    @server.tool(description="Search every remembered fact by words (ranked full-text search).", meta=_SEARCH_META)
    async def search_facts(query: str) -> CallToolResult:
        with failing(StoreInputError, doing="cannot search"):
            facts = store.search(query)
        speech = (
            f"I found {plural(len(facts), 'fact')} matching {query.strip()!r}: {_listing(facts, True)}."
            if facts
            else f"I don't remember anything about {query.strip()!r}."
        )
        return spoken_result(speech, {"query": query, "facts": [f.as_dict() for f in facts]})

    @server.tool(description="Everything remembered about one subject, by name (case-insensitive).", meta=_ENTITY_META)
    async def query_entities(name: str) -> CallToolResult:
        with failing(StoreInputError, doing="cannot look that up"):
            facts = store.about(name)
            similar = [] if facts else store.similar_subjects(name)
        if facts:
            subject = facts[0].subject
            speech = f"I know {plural(len(facts), 'thing')} about {subject}: {_listing(facts, False)}."
        elif similar:
            speech = f"I know nothing about {name.strip()}. Did you mean {join_spoken(similar)}?"
        else:
            speech = f"I know nothing about {name.strip()}."
        return spoken_result(speech, {"name": name, "facts": [f.as_dict() for f in facts], "similar_subjects": similar})

    @server.tool(description="Summarise the facts remembered during one session.", meta=_SUMMARY_META)
    async def get_summary(session_id: str) -> CallToolResult:
        with failing(StoreInputError, doing="cannot summarise"):
            facts = store.session(session_id)
        subjects: dict[str, list[str]] = {}
        for fact in facts:
            subjects.setdefault(fact.subject, []).append(fact.fact)
        if facts:
            parts = [f"{subject}: {join_spoken(items)}" for subject, items in subjects.items()]
            speech = (
                f"In session {session_id.strip()} I noted {plural(len(facts), 'fact')} about "
                f"{plural(len(subjects), 'subject')}. " + "; ".join(parts) + "."
            )
        else:
            speech = f"I noted nothing in session {session_id.strip()}."
        return spoken_result(speech, {"session_id": session_id, "fact_count": len(facts), "subjects": subjects})

    return server


def create(argv: Sequence[str] | None = None) -> MCPServer[Any]:
    """The memory server for this command line (``StartupError`` on a bad one); the database closes with it."""
    parser = make_parser("python -m engine.servers.memory", "NPC memory MCP server (SQLite + FTS5).")
    parser.add_argument("--db", default=None, help=f"database file (env AVA_MEMORY_DB; default {default_db_path()})")
    args = parser.parse_args(list(argv or []))
    path = Path(env_default(args.db, "AVA_MEMORY_DB") or default_db_path()).expanduser()
    with startup("memory", OSError, sqlite3.Error, doing=f"cannot open the database {os.fspath(path)}"):
        store = MemoryStore(path)
    server = build_server(args, store)
    # Closed when the server object goes (an in-process restart builds a fresh one) or at the process's exit.
    weakref.finalize(server, store.close)
    return server


def main(argv: list[str] | None = None) -> None:
    serve(create, argv)

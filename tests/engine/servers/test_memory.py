"""Memory server: the SQLite/FTS5 store and the server as a child process over stdio."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CallToolResult

from engine.servers.memory.server import default_db_path
from engine.servers.memory.store import MemoryStore, StoreInputError


def test_store_persists_and_searches(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "memory.sqlite3"
    store = MemoryStore(path)
    store.remember("Grimble", "owes the dragon forty gold pieces", "s1")
    store.remember("grimble", "is afraid of goats")
    store.remember("Old Mill", "burned down last winter", "s1")
    store.close()
    store = MemoryStore(path)  # reopened: facts survive
    assert [f.fact for f in store.about("GRIMBLE")] == ["owes the dragon forty gold pieces", "is afraid of goats"]
    assert [f.subject for f in store.search("dragon gold")] == ["Grimble"]
    assert [f.subject for f in store.search("mill")] == ["Old Mill"]  # subject text is searchable too
    assert store.search("unicorn") == []
    assert [f.fact for f in store.session("s1")] == ["owes the dragon forty gold pieces", "burned down last winter"]
    assert store.similar_subjects("grim") == ["Grimble"]
    with pytest.raises(StoreInputError, match="subject is empty"):
        store.remember("  ", "x")
    with pytest.raises(StoreInputError, match="fact is 1001 characters long; the limit is 1000"):
        store.remember("a", "x" * 1001)
    with pytest.raises(StoreInputError, match="query has no words"):
        store.search("?!")
    store.close()
    assert default_db_path().name == "memory.sqlite3" and "ava-console" in str(default_db_path())


async def test_memory_server_over_stdio(
    spawn: Callable[..., Client], text: Callable[[CallToolResult], str], tmp_path: Path
) -> None:
    db = tmp_path / "npc.sqlite3"
    async with spawn("memory", "--db", str(db)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"remember", "search_facts", "query_entities", "get_summary"}
        assert (tools["remember"].meta or {})["idempotent"] is False
        assert (tools["search_facts"].meta or {})["idempotent"] is True
        assert (tools["search_facts"].meta or {})["probe_args"] == {"query": "probe"}

        for fact in ("owes the dragon forty gold", "is afraid of goats", "runs the ferry"):
            saved = await client.call_tool("remember", {"subject": "Grimble", "fact": fact, "session_id": "s1"})
            assert not saved.is_error, text(saved)
        last = await client.call_tool("remember", {"subject": "Mara", "fact": "sells maps"})
        assert text(last) == "Noted about Mara: sells maps. I now know 1 thing about them."
        again = await client.call_tool("remember", {"subject": "grimble", "fact": "Is afraid of  goats"})
        assert text(again) == "I already knew that about Grimble: is afraid of goats. I know 3 things about them."
        assert (again.structured_content or {})["already_known"] is True

        about = await client.call_tool("query_entities", {"name": "grimble"})
        assert text(about) == (
            "I know 3 things about Grimble: owes the dragon forty gold, is afraid of goats and runs the ferry."
        )
        nearly = await client.call_tool("query_entities", {"name": "Grim"})
        assert text(nearly) == "I know nothing about Grim. Did you mean Grimble?"

        found = await client.call_tool("search_facts", {"query": "dragon"})
        assert text(found) == "I found 1 fact matching 'dragon': Grimble: owes the dragon forty gold."
        none = await client.call_tool("search_facts", {"query": "unicorn"})
        assert not none.is_error and "don't remember anything" in text(none)

        summary = await client.call_tool("get_summary", {"session_id": "s1"})
        assert text(summary).startswith("In session s1 I noted 3 facts about 1 subject. Grimble: ")
        empty = await client.call_tool("get_summary", {"session_id": "other"})
        assert text(empty) == "I noted nothing in session other."

        bad = await client.call_tool("remember", {"subject": "", "fact": "x"})
        assert bad.is_error and "cannot remember that: subject is empty" in text(bad)
        bad = await client.call_tool("search_facts", {"query": "???"})
        assert bad.is_error and "query has no words" in text(bad)
        bad = await client.call_tool("get_summary", {"session_id": " "})
        assert bad.is_error and "session_id is empty" in text(bad)
    assert db.exists()


def test_a_store_closes_from_another_thread(tmp_path: Path) -> None:
    """The database closes with its server object, from whichever thread the garbage collector runs in (a CI run
    saw sqlite's "objects created in a thread can only be used in that same thread" from that finaliser)."""
    import threading

    store = MemoryStore(tmp_path / "m.db")
    store.remember("Grimble", "owes us ten gold")
    errors: list[BaseException] = []

    def close() -> None:
        try:
            store.close()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=close)
    t.start()
    t.join()
    assert errors == []
    assert MemoryStore(tmp_path / "m.db").about("grimble")[0].fact == "owes us ten gold"

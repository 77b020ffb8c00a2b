"""Tool-list refreshes (issue 18 item 5): a refresh never changes the exposed names of tools that did not change,
the view's order does not follow the server's list order around, and a listing's ``ttlMs`` hint is honoured."""

from __future__ import annotations

import sys
from typing import Any

from engine.config.models import McpServerConfig
from engine.events import ToolsChanged
from engine.mcp.naming import NameBook, hashed_name
from tests.engine.mcp.helpers import FIXTURES, settings, wait_for
from tests.engine.mcp.test_real_peers import call

STRUCTURED = str(FIXTURES / "structured_server.py")


def _cfg(*args: str) -> dict[str, Any]:
    return {"transport": "stdio", "command": [sys.executable, STRUCTURED, *args], "connect_timeout_ms": 8000}


def _names(engine: Any) -> dict[str, str]:
    return {t["name"]: t["exposed_name"] for t in engine.server_status()["servers"][0]["tools"]}


async def test_a_refresh_keeps_every_unchanged_name_and_the_view_order(make_engine: Any) -> None:
    engine = await make_engine(settings({"st": _cfg()}))
    before = _names(engine)
    assert before["get-sum"] == "mcp_st_get_sum"
    order = [t.name for t in engine.views.view(["mcp_st_*"], "deep").tools]
    sub = engine.bus.subscribe(types={"tools.changed"})
    assert (await call(engine, "mcp_st_flip", {})).message == "flipped"
    await wait_for(lambda: "get_sum" in _names(engine))
    after = _names(engine)
    assert {k: v for k, v in after.items() if k != "get_sum"} == before  # get-sum keeps mcp_st_get_sum
    assert after["get_sum"] == hashed_name("st", "get_sum")  # the newcomer yields, though it sorts first
    (changed,) = [e for e in sub.drain() if isinstance(e, ToolsChanged)]
    assert changed.added == (hashed_name("st", "get_sum"),) and changed.removed == ()
    assert [n for n in (t.name for t in engine.views.view(["mcp_st_*"], "deep").tools) if n in order] == order
    assert (await call(engine, "mcp_st_get_sum", {"a": 1, "b": 1})).data == {"result": 2}


def test_name_book_newcomers_of_a_refresh_come_last() -> None:
    book = NameBook()
    cfg = McpServerConfig.model_validate({"transport": "stdio", "command": ["x"]})
    book.configure("s", cfg)
    names, _ = book.claim("s", ["get-sum"])
    assert names == {"get-sum": "mcp_s_get_sum"}
    names, _ = book.claim("s", ["get_sum", "get-sum"])  # a refresh, in another order
    assert names == {"get-sum": "mcp_s_get_sum", "get_sum": hashed_name("s", "get_sum")}
    names, _ = book.claim("s", ["get_sum"])  # get-sum went: the name is free for the tool left
    assert names == {"get_sum": "mcp_s_get_sum"}
    fresh = NameBook()  # a first listing still follows the rule (the normal form wins), whatever the order
    fresh.configure("s", cfg)
    assert fresh.claim("s", ["get-sum", "get_sum"])[0]["get_sum"] == "mcp_s_get_sum"


async def test_a_listing_ttl_makes_the_engine_list_again(make_engine: Any) -> None:
    engine = await make_engine(settings({"st": _cfg("--ttl-ms", "300")}))
    assert engine.server_status()["servers"][0]["protocol_version"] == "2026-07-28"
    assert engine.mcp.supervisors["st"].conn.list_ttl_ms == 300
    assert (await call(engine, "mcp_st_sneak", {})).message == "sneaked"  # no notification at all
    await wait_for(lambda: "quiet" in _names(engine), limit_s=15)

"""A 10 MB tool result on each transport, with its documented outcome.

stdio and streamable HTTP: the result arrives and is shaped — a speakable message, ``data`` cut to
``MAX_DATA_CHARS`` with ``truncated``/``size_chars`` — the server stays up and the next call works. A tool whose
timeout is shorter than the transfer ends as ``timeout`` naming the tool, and the server stays up. SSE: the SDK's
SSE client refuses any event over 1 MiB and closes the stream, so the call ends as an error and the server is
reconnected (results under 1 MiB arrive as usual).
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.events import ServerStateChanged
from engine.mcp.results import MAX_DATA_CHARS, MAX_SPEECH_CHARS, speakable
from tests.engine.mcp.helpers import settings, stdio, wait_for

TEN_MB = 10_000_000
#: Liveness bound for one big transfer on a loaded machine (the result normally arrives in a second or two).
GENEROUS_MS = 60_000


async def call(engine: Any, name: str, args: dict[str, Any]) -> Any:
    return await engine.executor.execute(None, name, args, allowed=frozenset({name}))


def assert_shaped(r: Any, size: int) -> None:
    assert r.status == "success"
    assert 0 < len(r.message) <= MAX_SPEECH_CHARS + 1 and "\n" not in r.message
    assert r.data["truncated"] is True and r.data["size_chars"] >= size
    assert len(r.data["text"]) == MAX_DATA_CHARS


def generous(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "timeout_ms": GENEROUS_MS} for n in names]


def test_speakable_reads_only_what_it_needs_of_a_huge_text_and_says_the_same() -> None:
    # the message comes from a prefix of the text; whitespace that collapses it makes the prefix grow
    assert speakable(" \n" * 3_000_000 + "Found it. " * 50) == ("Found it. " * 30).strip()
    assert speakable("a" + " " * 1204 + "b") == "a b"  # a run across the first window's edge collapses once
    text = "  word\t" * 40 + "end of the first sentence. " + "x" * 10_000_000
    flat = " ".join(text.split())
    assert speakable(text) == flat[: flat.rfind(". ", 0, MAX_SPEECH_CHARS) + 1]


async def test_ten_megabytes_over_stdio_arrive_shaped(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio(tools=generous("big_text", "big", "echo"))}))
    r = await call(engine, "mcp_fx_big_text", {"size": TEN_MB})  # text only: one ~10 MB line
    assert_shaped(r, TEN_MB)
    assert r.message.startswith("All good.") and r.message.endswith("All good.")  # cut at a sentence end
    assert r.data["text"].startswith("All good. xxx")
    r = await call(engine, "mcp_fx_big", {"size": TEN_MB})  # text + the same as structured content: ~20 MB
    assert_shaped(r, TEN_MB)
    assert r.message.endswith("…") and r.data["text"].startswith('{"result": "xxx')
    assert engine.mcp.supervisors["fx"].state == "up"
    r = await call(engine, "mcp_fx_echo", {"text": "still here"})
    assert (r.status, r.message) == ("success", "still here")


async def test_ten_megabytes_past_the_tool_timeout_end_as_timeout_and_the_server_stays_up(make_engine: Any) -> None:
    # The server starts writing its 10 MB only after the 100 ms are up (a quiet machine can carry 10 MB through the
    # pipe in less than 100 ms, so without the delay the outcome would depend on the machine's speed).
    tools = [{"name": "big", "timeout_ms": 100}, *generous("echo")]
    engine = await make_engine(settings({"fx": stdio(tools=tools)}))
    sub = engine.bus.subscribe()
    r = await call(engine, "mcp_fx_big", {"size": TEN_MB, "delay": 0.3})
    limit = "the limit set by the tool's timeout (timeout_ms: 100)"
    assert (r.status, r.message) == ("timeout", f"mcp_fx_big did not answer within 0.1 seconds, {limit}.")
    # the late answer is still read off the pipe (and dropped) before the next one
    r = await call(engine, "mcp_fx_echo", {"text": "next"})
    assert (r.status, r.message) == ("success", "next")
    assert engine.mcp.supervisors["fx"].state == "up"
    assert not [e for e in sub.drain() if isinstance(e, ServerStateChanged)]


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 answers in JSON; legacy answers in an SSE event
async def test_ten_megabytes_over_streamable_http_arrive_shaped(net_server: Any, make_engine: Any, mode: str) -> None:
    server = net_server("http")
    cfg = {"transport": "http", "url": server.url, "mode": mode, "tools": generous("big_text", "big", "echo")}
    engine = await make_engine(settings({"web": cfg}))
    assert engine.mcp.supervisors["web"].state == "up"
    r = await call(engine, "mcp_web_big_text", {"size": TEN_MB})
    assert_shaped(r, TEN_MB)
    r = await call(engine, "mcp_web_big", {"size": TEN_MB})
    assert_shaped(r, TEN_MB)
    r = await call(engine, "mcp_web_echo", {"text": "still here"})
    assert (r.status, r.message) == ("success", "still here")
    assert engine.mcp.supervisors["web"].state == "up"


async def test_over_sse_a_result_past_one_mebibyte_ends_the_stream_and_the_server_is_reconnected(
    net_server: Any, make_engine: Any
) -> None:
    server = net_server("sse")
    cfg = {
        "transport": "sse",
        "url": server.url,
        "tools": generous("big_text", "echo"),
        "restart": {"backoff_ms": 20, "backoff_max_ms": 100, "max_restarts": 3},
    }
    engine = await make_engine(settings({"remote": cfg}))
    sup = engine.mcp.supervisors["remote"]
    sub = engine.bus.subscribe()
    r = await call(engine, "mcp_remote_big_text", {"size": 500_000})  # under the SDK's 1 MiB event limit
    assert_shaped(r, 500_000)
    r = await call(engine, "mcp_remote_big_text", {"size": TEN_MB})
    assert r.status == "error" and r.message.startswith("server remote stopped (connection closed")
    await wait_for(lambda: sup.state == "up" and sup.restarts_total == 1, limit_s=20)
    restarting = [e for e in sub.drain() if isinstance(e, ServerStateChanged) and e.state == "restarting"]
    assert restarting and "1048576 byte limit" in (restarting[0].last_error or "")
    r = await call(engine, "mcp_remote_echo", {"text": "reconnected"})
    assert (r.status, r.message) == ("success", "reconnected")

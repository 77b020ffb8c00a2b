"""The engine's own MCP endpoint through the SDK's streamable HTTP client, legacy (2025-11-25) and auto (2026)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import MCPError
from mcp.types import INVALID_PARAMS, ImageContent, TextContent
from mcp_endpoint_helpers import EXPOSED, TOKEN, Served, book_table_definition, mcp_client

from engine.events import ToolCompleted

MODES = ["legacy", "auto"]
VALID = {"name": "Ada", "party": 2}


@pytest.mark.parametrize("mode", MODES)
async def test_handshake_and_list_publishes_exact_schemas_of_exposed_tools_only(serve: Any, mode: str) -> None:
    s: Served = await serve()
    async with mcp_client(s.url, mode) as c:
        assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        listed = (await c.list_tools()).tools
    assert [t.name for t in listed] == EXPOSED  # expose order; secret_tool and built-ins are not served
    for t in listed:
        entry = s.engine.registry.get(t.name)
        assert entry is not None
        assert t.input_schema == entry.tool.definition.schema()
        assert t.description == entry.tool.definition.description
    book = next(t for t in listed if t.name == "book_table").input_schema
    assert book == book_table_definition().schema()
    assert book["required"] == ["name", "party"]  # optional parameters stay optional
    assert book["properties"]["party"]["type"] == "integer"  # integers stay integers
    assert book["properties"]["seating"] == {
        "type": "string",
        "description": "where",
        "default": "inside",
        "enum": ["inside", "terrace"],
    }
    assert book["properties"]["vip"]["default"] is False  # a false default is kept


@pytest.mark.parametrize("mode", MODES)
async def test_valid_call_runs_through_the_engine_and_maps_the_result(serve: Any, mode: str) -> None:
    s: Served = await serve()
    sub = s.engine.bus.subscribe()
    async with mcp_client(s.url, mode) as c:
        r = await c.call_tool("book_table", {**VALID, "seating": "terrace", "email": "ada@example.org"})
    assert r.is_error is False
    assert r.content == [TextContent(type="text", text="Booked for Ada, 2 people.")]
    assert r.structured_content == {"status": "success", "message": "Booked for Ada, 2 people.", "data": {"table": 7}}
    assert s.calls.runs == [("book_table", {**VALID, "seating": "terrace", "email": "ada@example.org"})]
    done = [e for e in sub.drain() if isinstance(e, ToolCompleted)]
    assert [(e.exposed_name, e.status, e.tool_call_id.startswith("mcp-endpoint:")) for e in done] == [
        ("book_table", "success", True)
    ]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"party": 2}, ["name: is required"]),
        ({"name": "Ada", "party": "two"}, ["party: expected integer, got string"]),
        ({"name": "Ada", "party": 2.5}, ["party: expected integer, got number"]),
        ({"name": "Ada", "party": 40}, ["party: must be <= 12"]),
        ({"name": "A", "party": 2}, ["name: must have at least 2 characters"]),
        ({**VALID, "seating": "roof"}, ['seating: must be one of ["inside", "terrace"], got "roof"']),
        ({**VALID, "code": "ABC12\n"}, ["code: does not match pattern ^[A-Z]{3}[0-9]{2}$"]),
        ({**VALID, "email": "ada@example.org\nBcc: x@evil.test"}, ["email: is not a valid email"]),
        ({**VALID, "website": "https://ok.example\njavascript:alert(1)"}, ["website: is not a valid uri"]),
        ({**VALID, "phone": "+1 555 0100\n; rm"}, ["phone: is not a valid phone"]),
        ({**VALID, "vip": "yes"}, ["vip: expected boolean, got string"]),
        ({**VALID, "table": 3}, ["table: is not an argument of this tool"]),
        (
            {"party": "many", "seating": "roof", "extra": 1},
            ["name: is required", "party: expected integer", "seating: must be one of", "extra: is not an argument"],
        ),
    ],
    ids=[
        "missing-required",
        "type",
        "integer-not-float",
        "maximum",
        "min-length",
        "enum",
        "pattern-anchored",
        "email-anchored",
        "url-anchored",
        "phone-anchored",
        "boolean",
        "unknown-argument",
        "several-at-once",
    ],
)
async def test_every_invalid_argument_is_an_iserror_result_naming_it(
    serve: Any, args: dict[str, Any], named: list[str]
) -> None:
    s: Served = await serve()
    async with mcp_client(s.url) as c:
        r = await c.call_tool("book_table", args)
    assert r.is_error is True
    text = r.content[0].text if isinstance(r.content[0], TextContent) else ""
    for fragment in named:
        assert fragment in text
    assert r.structured_content is not None and r.structured_content["status"] == "rejected"
    assert r.structured_content["message"] == text
    assert s.calls.runs == []  # the tool never ran


async def test_invalid_arguments_are_results_in_2026_mode_too(serve: Any) -> None:
    s: Served = await serve()
    async with mcp_client(s.url, "auto") as c:
        r = await c.call_tool("book_table", {"party": 0})
    assert r.is_error is True
    text = r.content[0].text if isinstance(r.content[0], TextContent) else ""
    assert "name: is required" in text and "party: must be >= 1" in text


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["secret_tool", "hangup_call", "no_such_tool"])
async def test_a_tool_that_is_not_exposed_is_an_unknown_tool_error(serve: Any, mode: str, name: str) -> None:
    s: Served = await serve()
    async with mcp_client(s.url, mode) as c:
        with pytest.raises(MCPError) as err:
            await c.call_tool(name, {})
    assert err.value.code == INVALID_PARAMS
    assert name in err.value.message and "not served" in err.value.message
    assert s.calls.runs == []


async def test_tool_error_status_is_iserror_with_structured_result(serve: Any) -> None:
    s: Served = await serve()
    async with mcp_client(s.url) as c:
        r = await c.call_tool("broken", {})
    assert r.is_error is True
    assert r.structured_content == {"status": "error", "message": "The kitchen is closed.", "data": {"why": "closed"}}


async def test_media_blocks_follow_the_message_and_leave_structured_content(serve: Any) -> None:
    s: Served = await serve()
    async with mcp_client(s.url) as c:
        r = await c.call_tool("media", {})
        bad = await c.call_tool("bad_media", {})
    assert r.is_error is False
    assert r.content[0] == TextContent(type="text", text="Here is the floor plan.")
    assert isinstance(r.content[1], ImageContent) and r.content[1].mime_type == "image/png"
    assert r.structured_content == {"status": "success", "message": "Here is the floor plan.", "data": {"floor": 1}}
    assert bad.is_error is True
    assert bad.structured_content is not None and "malformed MCP content" in bad.structured_content["message"]


@pytest.mark.parametrize("mode", MODES)
async def test_progress_from_an_engine_tool_reaches_the_mcp_client(serve: Any, mode: str) -> None:
    s: Served = await serve()
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_client(s.url, mode) as c:
        r = await c.call_tool("progress", {}, progress_callback=on_progress)
    assert r.is_error is False
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize("mode", MODES)
async def test_per_tool_timeout_cancels_the_tool_and_answers_iserror(serve: Any, mode: str) -> None:
    s: Served = await serve(tool_timeouts_ms={"slow": 50})
    sub = s.engine.bus.subscribe()
    async with mcp_client(s.url, mode) as c:
        r = await c.call_tool("slow", {})
    assert r.is_error is True
    assert r.structured_content is not None and r.structured_content["status"] == "timeout"
    assert r.structured_content["message"] == (
        "slow did not answer within 0.05 seconds,"
        " the limit set by the MCP endpoint's timeout (engine.mcp_server.tool_timeouts_ms.slow: 50)."
    )
    assert s.calls.cancelled.is_set()  # the run was cancelled, not left behind
    completed = [e for e in sub.drain() if isinstance(e, ToolCompleted)]
    assert [(e.exposed_name, e.status) for e in completed] == [("slow", "timeout")]


async def test_endpoint_wide_timeout_applies_when_no_per_tool_value(serve: Any) -> None:
    s: Served = await serve(timeout_ms=40)
    async with mcp_client(s.url) as c:
        r = await c.call_tool("slow", {})
        ok = await c.call_tool("book_table", VALID)
    assert r.structured_content is not None and r.structured_content["status"] == "timeout"
    assert ok.is_error is False


@pytest.mark.parametrize("mode", MODES)
async def test_rate_limit_answers_iserror_with_retry_hint(serve: Any, mode: str) -> None:
    s: Served = await serve(requests_per_minute=2)
    async with mcp_client(s.url, mode) as c:
        first = [await c.call_tool("book_table", VALID) for _ in range(2)]
        third = await c.call_tool("book_table", VALID)
    assert [r.is_error for r in first] == [False, False]
    assert third.is_error is True
    sc = third.structured_content
    assert sc is not None and sc["status"] == "rejected"
    assert sc["message"].startswith("Rate limit reached: at most 2 calls per minute. Try again in ")
    assert sc["data"]["reason"] == "rate_limit" and 1 <= sc["data"]["retry_after_s"] <= 60
    assert len(s.calls.runs) == 2


async def test_daily_budget_answers_iserror_once_used_up(serve: Any) -> None:
    s: Served = await serve(daily_budget=1)
    async with mcp_client(s.url) as c:
        ok = await c.call_tool("book_table", VALID)
        refused = await c.call_tool("book_table", VALID)
    assert ok.is_error is False
    assert refused.is_error is True
    sc = refused.structured_content
    assert sc is not None and sc["data"]["reason"] == "daily_budget"
    assert "Daily call budget exhausted: 1 calls per UTC day" in sc["message"]
    assert len(s.calls.runs) == 1


async def test_endpoint_metrics_count_outcomes(serve: Any) -> None:
    s: Served = await serve(requests_per_minute=1)
    async with mcp_client(s.url) as c:
        await c.call_tool("book_table", VALID)
        await c.call_tool("book_table", VALID)
    text = s.engine.metrics.render().decode()
    assert 'ai_agent_mcp_endpoint_calls_total{outcome="success",tool="book_table"} 1.0' in text
    assert 'ai_agent_mcp_endpoint_calls_total{outcome="rate_limit",tool="book_table"} 1.0' in text
    assert TOKEN not in text

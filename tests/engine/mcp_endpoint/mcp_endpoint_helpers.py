"""Helpers for the engine's own MCP endpoint tests: test tools, settings, a started Engine on port 0, a client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engine.app import Engine
from engine.config.models import Settings
from engine.mcp_endpoint.results import MCP_CONTENT_KEY, report_progress
from engine.tools.base import FunctionTool, Tool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult

TOKEN = "endpoint-test-token-7f3a"
EXPOSED = ["book_table", "slow", "progress", "broken", "media", "bad_media"]


@dataclass
class Calls:
    """What the test tools saw: every run, and whether the slow one was cancelled."""

    runs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


def book_table_definition() -> ToolDefinition:
    return ToolDefinition(
        name="book_table",
        description="Book a table.",
        parameters=(
            ToolParameter("name", "string", "guest name", required=True, min_length=2),
            ToolParameter("party", "integer", "how many", required=True, minimum=1, maximum=12),
            ToolParameter("seating", "string", "where", enum=("inside", "terrace"), default="inside"),
            ToolParameter("code", "string", "booking code", pattern="^[A-Z]{3}[0-9]{2}$"),
            ToolParameter("email", "string", "confirmation address", format="email"),
            ToolParameter("website", "string", "guest site", format="url"),
            ToolParameter("phone", "string", "guest phone", format="phone"),
            ToolParameter("vip", "boolean", "VIP guest", default=False),
        ),
    )


def make_tools(calls: Calls) -> list[Tool]:
    def tool(d: ToolDefinition, fn: Callable[[dict[str, Any]], Awaitable[ToolResult]]) -> FunctionTool:
        async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            calls.runs.append((d.name, args))
            return await fn(args)

        return FunctionTool(d, run)

    async def book(args: dict[str, Any]) -> ToolResult:
        return ToolResult.success(f"Booked for {args['name']}, {args['party']} people.", {"table": 7})

    async def slow(args: dict[str, Any]) -> ToolResult:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            calls.cancelled.set()
            raise
        return ToolResult.success("finally")

    async def progress(args: dict[str, Any]) -> ToolResult:
        for i in (1, 2, 3):
            await report_progress(i, 3, f"step {i}")
        return ToolResult.success("done in three steps")

    async def broken(args: dict[str, Any]) -> ToolResult:
        return ToolResult.error("The kitchen is closed.", {"why": "closed"})

    async def media(args: dict[str, Any]) -> ToolResult:
        block = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        return ToolResult.success("Here is the floor plan.", {"floor": 1, MCP_CONTENT_KEY: [block]})

    async def bad_media(args: dict[str, Any]) -> ToolResult:
        return ToolResult.success("oops", {MCP_CONTENT_KEY: [{"type": "image"}]})

    empty: dict[str, Any] = {"type": "object", "properties": {}}
    return [
        tool(book_table_definition(), book),
        tool(ToolDefinition(name="slow", description="Takes forever.", input_schema=empty), slow),
        tool(ToolDefinition(name="progress", description="Reports progress.", input_schema=empty), progress),
        tool(ToolDefinition(name="broken", description="Always fails.", input_schema=empty), broken),
        tool(ToolDefinition(name="media", description="Returns an image.", input_schema=empty), media),
        tool(ToolDefinition(name="bad_media", description="Returns bad content.", input_schema=empty), bad_media),
        tool(ToolDefinition(name="secret_tool", description="Never exposed.", input_schema=empty), book),
    ]


def endpoint_settings(**mcp: Any) -> Settings:
    cfg: dict[str, Any] = {"enabled": True, "expose": EXPOSED, "auth_token": TOKEN, **mcp}
    return Settings.model_validate({"engine": {"http": {"host": "127.0.0.1", "port": 0}, "mcp_server": cfg}})


@dataclass
class Served:
    engine: Engine
    url: str
    base: str
    calls: Calls


@asynccontextmanager
async def mcp_client(url: str, mode: str = "legacy", token: str | None = TOKEN) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client

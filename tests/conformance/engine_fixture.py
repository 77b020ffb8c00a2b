"""An Engine serving the MCP conformance suite's server-scenario tools through its own /mcp endpoint.

Why it exists: the official conformance suite (``@modelcontextprotocol/conformance``) connects to an MCP server
and calls tools with fixed names (``test_simple_text``, ``test_image_content`` …). Here each of them is an engine
``FunctionTool`` registered in the engine's registry and served by ``engine.mcp_server`` — so the suite checks the
real path (endpoint → ``engine.executor.execute`` → ToolResult → CallToolResult), not a separate toy server.
Resources, prompts, completion and the logging tool come from an MCP server configured behind the engine
(``upstream.py``), so the suite checks the endpoint passing them on; the tools and prompt that ask their caller for
input mid-call (MRTR, 2026-07-28) from a second one (``upstream_mrtr.py``).

Run by hand: ``.venv/bin/python tests/conformance/engine_fixture.py`` prints the URL and serves until Ctrl-C.
"""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import wave
import zlib
from typing import Any

from engine.app import Engine
from engine.config.models import Settings
from engine.mcp_endpoint.results import MCP_CONTENT_KEY, close_stream, report_progress
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def red_pixel_png() -> str:
    """A 1x1 red PNG, base64 (built here, so the fixture ships no binary)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00")
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


def short_wav() -> str:
    """10 ms of 8 kHz mono silence as a WAV file, base64."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 80)
    return base64.b64encode(buf.getvalue()).decode()


def _tool(name: str, description: str, fn: Any, schema: dict[str, Any] | None = None) -> FunctionTool:
    return FunctionTool(
        ToolDefinition(name=name, description=description, input_schema=schema or {"type": "object", "properties": {}}),
        fn,
    )


def conformance_tools() -> list[FunctionTool]:
    png, wav = red_pixel_png(), short_wav()

    async def simple_text(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success("This is a simple text response for testing.")

    async def image(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        block = {"type": "image", "data": png, "mimeType": "image/png"}
        return ToolResult.success("A red pixel.", {MCP_CONTENT_KEY: [block]})

    async def audio(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        block = {"type": "audio", "data": wav, "mimeType": "audio/wav"}
        return ToolResult.success("Ten milliseconds of silence.", {MCP_CONTENT_KEY: [block]})

    async def embedded(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        res = {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        }
        block = {"type": "resource", "resource": res}
        return ToolResult.success("An embedded resource.", {MCP_CONTENT_KEY: [block]})

    async def mixed(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        blocks = [
            {"type": "image", "data": png, "mimeType": "image/png"},
            {
                "type": "resource",
                "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": '{"test":"data","value":123}',
                },
            },
        ]
        return ToolResult.success("Multiple content types test:", {MCP_CONTENT_KEY: blocks})

    async def error(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        raise RuntimeError("This tool intentionally returns an error for testing")

    async def progress(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        for step in (0, 50, 100):
            await report_progress(step, 100, f"step {step}")
            await asyncio.sleep(0.01)
        return ToolResult.success("Progress reported three times.")

    async def schema_2020(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success("Arguments accepted.", {"args": args})

    async def reconnection(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        # SEP-1699 polling: the call's stream ends here; the client resumes it (Last-Event-ID) for the result
        closed = await close_stream()
        return ToolResult.success("Reconnection test completed." if closed else "The stream could not be closed.")

    return [
        _tool("test_simple_text", "Returns a simple text response.", simple_text),
        _tool("test_image_content", "Returns a 1x1 red PNG.", image),
        _tool("test_audio_content", "Returns a short WAV clip.", audio),
        _tool("test_embedded_resource", "Returns an embedded text resource.", embedded),
        _tool("test_multiple_content_types", "Returns text, an image and a resource.", mixed),
        _tool("test_error_handling", "Always fails.", error),
        _tool("test_tool_with_progress", "Reports progress three times.", progress),
        _tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", schema_2020, JSON_SCHEMA_2020_12),
        _tool("test_reconnection", "Closes its SSE stream mid-call, then returns.", reconnection),
    ]


def conformance_settings(port: int = 0) -> Settings:
    """HTTP on 127.0.0.1 (port 0 = any free port), the endpoint at /mcp without a token (the suite sends none);
    behind it MCP server ``test`` (upstream.py): the suite's resources, prompts, completion, logging tool and the
    tools that change its lists, and
    ``test_input_required_result`` (upstream_mrtr.py): the tools and prompt that ask for input."""
    import upstream_mrtr
    from upstream import CHANGING, EXTRA_TOOL, server_config  # beside this file; it imports this module

    mrtr = upstream_mrtr.server_config()
    names = [t.name for t in conformance_tools()] + ["test_tool_with_logging", "test_logging_tool"]
    names += [f"test_{name}" for name in CHANGING] + [EXTRA_TOOL]  # lists that change (subscriptions/listen)
    names += [tool["expose_as"] for tool in mrtr["tools"]]
    return Settings.model_validate(
        {
            "engine": {
                "http": {"host": "127.0.0.1", "port": port},
                "mcp_server": {
                    "enabled": True,
                    "path": "/mcp",
                    "expose": names,
                    "share": ["*"],
                    "requests_per_minute": 10_000,
                },
            },
            "mcp": {"servers": {"test": server_config(), upstream_mrtr.SERVER_ID: mrtr}},
        }
    )


def conformance_engine(port: int = 0) -> Engine:
    return Engine(conformance_settings(port), extra_tools=list(conformance_tools()), serve_http=True)


def endpoint_url(engine: Engine) -> str:
    http = next(c for c in engine.components if c.name == "http")
    base = getattr(http, "url", None)
    if base is None:
        raise RuntimeError("the engine's HTTP server is not listening")
    return f"{base}{engine.settings.engine.mcp_server.path}"


async def _serve_forever() -> None:
    async with conformance_engine(8765) as engine:
        print(endpoint_url(engine), flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(_serve_forever())
    except KeyboardInterrupt:
        pass

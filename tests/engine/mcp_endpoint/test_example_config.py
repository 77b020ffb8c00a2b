"""config/examples/mcp_endpoint.yaml end to end: real MCP servers (stdio) re-served by the engine's own /mcp."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_endpoint_helpers import mcp_client

from engine.app import Engine
from engine.config.loader import load_settings
from engine.http.server import HttpServer

EXAMPLE = Path(__file__).resolve().parents[3] / "config" / "examples" / "mcp_endpoint.yaml"


def test_example_loads_and_keeps_the_token_secret() -> None:
    s = load_settings(EXAMPLE, env={"AVA_MCP_TOKEN": "example-token"})
    ep = s.engine.mcp_server
    assert ep.enabled and ep.path == "/mcp"
    assert ep.expose == ["mcp_dice_roll", "mcp_dice_roll_table", "mcp_aviation_atis_get_atis"]
    assert ep.auth_token is not None and ep.auth_token.get_secret_value() == "example-token"
    assert "example-token" not in repr(s)


@pytest.mark.timeout(60)
async def test_example_serves_tools_of_real_mcp_servers_through_the_engine() -> None:
    settings = load_settings(EXAMPLE, env={"AVA_MCP_TOKEN": "example-token"})
    settings.engine.http.port = 0
    async with Engine(settings, config_path=EXAMPLE, serve_http=True) as engine:
        http = next(c for c in engine.components if isinstance(c, HttpServer))
        async with mcp_client(f"{http.url}/mcp", "auto", token="example-token") as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert list(listed) == settings.engine.mcp_server.expose
            roll = engine.registry.get("mcp_dice_roll")
            assert roll is not None and listed["mcp_dice_roll"].input_schema == roll.tool.definition.schema()
            r = await c.call_tool("mcp_dice_roll", {"expression": "2d6"})
            assert r.is_error is False
            assert r.structured_content is not None and r.structured_content["data"]["expression"] == "2d6"
            bad = await c.call_tool("mcp_dice_roll", {})
            assert bad.is_error is True and "expression: is required" in str(bad.structured_content)

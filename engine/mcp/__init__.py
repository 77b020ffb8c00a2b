"""MCP host: supervised connections to MCP servers whose tools the engine exposes (see host.McpHost)."""

from engine.mcp.host import McpHost, UnknownServer
from engine.mcp.naming import NamingError
from engine.mcp.tool import MCPTool

__all__ = ["MCPTool", "McpHost", "NamingError", "UnknownServer"]

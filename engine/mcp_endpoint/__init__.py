"""The engine's own MCP endpoint: serves ``engine.mcp_server.expose`` tools to other agents over streamable HTTP."""

from engine.mcp_endpoint.component import McpEndpoint
from engine.mcp_endpoint.results import MCP_CONTENT_KEY, close_stream, report_progress

__all__ = ["MCP_CONTENT_KEY", "McpEndpoint", "close_stream", "report_progress"]

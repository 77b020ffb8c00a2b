"""The engine's own MCP endpoint: serves ``engine.mcp_server.expose`` tools to other agents over streamable HTTP."""

from engine.mcp_endpoint.component import McpEndpoint
from engine.mcp_endpoint.results import MCP_CONTENT_KEY, report_progress

__all__ = ["MCP_CONTENT_KEY", "McpEndpoint", "report_progress"]

"""The engine's own MCP endpoint: serves ``engine.mcp_server.expose`` tools to other agents over streamable HTTP.

The package face imports nothing, so the composition root can hold the endpoint's slot (``on_demand``) without
loading the MCP SDK; the endpoint is ``engine.mcp_endpoint.component.McpEndpoint``.
"""

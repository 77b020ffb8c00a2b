"""MCP host: supervised connections to MCP servers whose tools the engine exposes (see ``engine.mcp.host.McpHost``).

The package face imports nothing: ``engine.mcp.policy`` and ``engine.mcp.naming`` are plain rules the budget layer
and the registry use, and naming them must not load the host's client machinery and the MCP SDK (~1.4 s) in every
command; import ``McpHost`` from ``engine.mcp.host``.
"""

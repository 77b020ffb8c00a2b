"""Memory MCP server package: a game master's NPC memory in SQLite with FTS5 search.

Handlers are async on purpose: they run on the event-loop thread that opened the connection.
"""

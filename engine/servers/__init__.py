"""Built-in MCP servers shipped with ava-console.

Each server is a small package runnable with ``python -m engine.servers.NAME`` (stdio by default,
``--http PORT`` for streamable HTTP on 127.0.0.1). They are ordinary MCP servers built on the official
SDK, so the engine talks to them exactly as it talks to third-party servers.
"""

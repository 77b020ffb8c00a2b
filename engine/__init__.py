"""ava-console's engine: brings tools (built-in and MCP) into LLM and voice providers. Never imports textual."""

__version__ = "0.1.0"

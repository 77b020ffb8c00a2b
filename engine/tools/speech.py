"""What a caller hears when a tool fails, beside the raw text the operator reads.

Why it exists: a failed tool's own text (an exception, a server's error, which setting set a time limit) is for the
operator: the log, the tool row, ``mcp call``. Spoken to a caller it is noise or a leak ("KeyError: 'station' at line
42"). The places that make such a result put the raw text in ``ToolResult.message`` and one of these short sentences
in ``ToolResult.spoken``; what a provider (and so the caller) receives is ``ToolResult.speech``.
"""

from __future__ import annotations

from engine.tools.base import ToolDefinition


def tool_words(d: ToolDefinition) -> str:
    """The tool's name as a caller can hear it: its own name (not the exposed ``mcp_server_`` one), in words."""
    return (d.origin_name or d.name).replace("_", " ").replace("-", " ").strip() or "requested"


def failed(d: ToolDefinition) -> str:
    """The tool raised, or returned something that is not a result."""
    return f"The {tool_words(d)} tool ran into a problem and gave no answer."


#: ``reported_error`` when the tool is not known.
REPORTED_ERROR = "The tool reported a problem and gave no answer."


def reported_error(d: ToolDefinition) -> str:
    """The tool answered with an error of its own (an MCP ``isError`` result)."""
    return f"The {tool_words(d)} tool reported a problem and gave no answer."


def unavailable(d: ToolDefinition) -> str:
    """The tool's server is not up, needs a sign-in, or went away during the call."""
    return f"The {tool_words(d)} tool is not available right now."


def refused(d: ToolDefinition) -> str:
    """The tool's server refused the request."""
    return f"The {tool_words(d)} tool could not do that."


def timed_out(d: ToolDefinition, seconds: float | None = None) -> str:
    """The tool did not answer in time (within ``seconds``, when known)."""
    within = f" within {seconds:g} seconds" if seconds is not None else " in time"
    return f"The {tool_words(d)} tool did not answer{within}."

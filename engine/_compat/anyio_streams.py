"""anyio's private API the engine relies on (pinned in pyproject.toml through the mcp SDK's anyio).

- anyio's asyncio backend wraps a process's stdin (an asyncio ``StreamWriter``) in a ``StreamWriterWrapper`` whose
  ``_stream`` is that writer: engine/mcp/stdio_direct.py writes a message line straight into its buffer, with no
  task switch in between. Any other stream (another backend, a changed wrapper) falls back to ``send``.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["asyncio_writer"]


def asyncio_writer(stream: Any) -> asyncio.StreamWriter | None:
    """The asyncio ``StreamWriter`` inside anyio's ``stream``, or None when it is not such a wrapper."""
    writer = getattr(stream, "_stream", None)
    return writer if isinstance(writer, asyncio.StreamWriter) else None

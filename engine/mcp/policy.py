"""MCP tool annotations as policy inputs: which tools calibration may probe and whose results may be cached.

Why it exists: a server's ``readOnlyHint``, ``destructiveHint`` and ``idempotentHint`` say what a call does to the
world. They are hints from the server, so they may only add caution, never remove a check the operator made:

* **probing** (calibration calls a tool with made-up arguments): only a tool that is read-only (annotation, or
  ``idempotent`` from config or ``_meta``) or idempotent and not destructive (``idempotentHint`` with
  ``destructiveHint: false``; the MCP default for ``destructiveHint`` is true). Never a tool annotated
  ``destructiveHint: true`` (unless it is also read-only, which the spec says wins), and never one whose config
  says ``idempotent: false``.
* **caching** a result (a second call answered without running the tool): only a read-only tool
  (``readOnlyHint``) or one whose config sets ``cacheable_seconds``; a ``cacheable_seconds`` from the server's
  ``_meta`` alone is not enough, and a destructive tool is never cached, whatever the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.config.models import McpToolConfig


def _hint(annotations: Mapping[str, Any] | None, name: str) -> bool | None:
    value = (annotations or {}).get(name)
    return value if isinstance(value, bool) else None


def destructive(annotations: Mapping[str, Any] | None) -> bool:
    """Annotated ``destructiveHint: true`` and not read-only."""
    return _hint(annotations, "destructiveHint") is True and _hint(annotations, "readOnlyHint") is not True


def probe_refusal(annotations: Mapping[str, Any] | None, config: McpToolConfig | None, idempotent: bool) -> str | None:
    """Why calibration must not probe this tool, or None when it may (``idempotent``: the tool's LatencyMeta)."""
    if destructive(annotations):
        return "annotated destructive (destructiveHint): never probed"
    if config is not None and config.idempotent is False:
        return "configured idempotent: false: never probed"
    if idempotent or _hint(annotations, "readOnlyHint") is True:
        return None
    if _hint(annotations, "idempotentHint") is True and _hint(annotations, "destructiveHint") is False:
        return None
    return "not read-only or idempotent (by annotation or config): never probed"


def cache_seconds(
    name: str, annotations: Mapping[str, Any] | None, config: McpToolConfig | None, declared: int
) -> tuple[int, str | None]:
    """The ``cacheable_seconds`` the tool gets, and a warning when a declared value was refused."""
    if declared <= 0:
        return declared, None
    if destructive(annotations):
        return 0, f"tool {name!r}: annotated destructive (destructiveHint): its results are never cached"
    if config is not None and config.cacheable_seconds is not None:
        return declared, None
    if _hint(annotations, "readOnlyHint") is True:
        return declared, None
    return 0, (
        f"tool {name!r}: _meta.cacheable_seconds ignored: only read-only tools (readOnlyHint) or tools with "
        "cacheable_seconds in the config are cached"
    )

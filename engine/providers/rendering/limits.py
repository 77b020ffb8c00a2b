"""How many tools one request may carry, and which tools stay when a view has more than that.

OpenAI rejects a request with more than 128 tools (Chat Completions, Responses and Realtime share the limit, and
Deepgram's Voice Agent passes its functions to such a think provider);
Gemini's 512 per ``Tool`` object is met by grouping declarations (``wrap_tools``), and the other providers
document no limit. A call whose view is larger must keep working, so the request carries the tools that matter
most and the rest are named (``RenderedTools.omitted``, ``ava-engine tools --json``, the ``tools.omitted``
event). The choice is deterministic: call-control tools (category ``telephony``, e.g. ``hangup_call``) first,
then built-in tools before server tools, then the view's own order — which the budget layer sorts for the
call's tier, fastest first. The tools kept are rendered in the view's order.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.tools.base import ToolCategory, ToolDefinition

TOOL_LIMITS: dict[str, int] = {
    "openai_chat": 128,
    "openai_responses": 128,
    "openai_realtime": 128,
    # Deepgram documents no number of its own: the functions go to the think provider, and the strictest of
    # those documented (OpenAI, its default) takes 128 (reference/wire-formats.md §7.6).
    "deepgram_agent": 128,
}


def priority(position: int, d: ToolDefinition) -> tuple[int, int, int]:
    return (0 if d.category == ToolCategory.TELEPHONY else 1, 0 if d.server == "builtin" else 1, position)


def select(
    definitions: Sequence[ToolDefinition], limit: int | None
) -> tuple[list[ToolDefinition], list[ToolDefinition]]:
    """(kept, left out): at most ``limit`` definitions by ``priority``, both lists in the view's order."""
    if limit is None or len(definitions) <= limit:
        return list(definitions), []
    ranked = sorted(range(len(definitions)), key=lambda i: priority(i, definitions[i]))
    keep = set(ranked[:limit])
    return (
        [d for i, d in enumerate(definitions) if i in keep],
        [d for i, d in enumerate(definitions) if i not in keep],
    )

"""The SDK's side of a question: what a server's elicitation request asks, and the result it gets back.

Why it exists: the desk is built with every engine, and most engines never connect an MCP server; the SDK's types
(~1 s to import) are needed only once a connected server asks, when the SDK is loaded already. So the desk names
them through the aliases below (strings at run time) and reads and answers a request through these two functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from mcp.types import ElicitRequestParams, ElicitResult

#: A server's question (URL or form mode), as the SDK's elicitation callback hands it over.
Question: TypeAlias = "ElicitRequestParams"
#: The answer the server gets.
Reply: TypeAlias = "ElicitResult"


def question(params: Question) -> tuple[str | None, dict[str, Any]]:
    """The link a URL-mode question opens (None for a form), and a form's requested schema (``{}`` for a link)."""
    import mcp.types as types  # a connected server asked, so the SDK is loaded already

    url = params.url if isinstance(params, types.ElicitRequestURLParams) else None
    schema = dict(params.requested_schema) if isinstance(params, types.ElicitRequestFormParams) else {}
    return url, schema


def reply(action: str, content: dict[str, Any], mode: str) -> Reply:
    """The result the server gets: the answers only for an accepted form."""
    import mcp.types as types  # a connected server asked, so the SDK is loaded already

    return types.ElicitResult(action=action, content=content if action == "accept" and mode == "form" else None)  # type: ignore[arg-type]

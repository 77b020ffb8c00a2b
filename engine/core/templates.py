"""Prompt and reply templates: ``{caller_name}`` style placeholders that never raise.

Unknown placeholders stay as they are, stray or unbalanced braces are left alone, and dotted paths
(``{result.total}``) look into mappings. Unlike ``str.format`` nothing here can raise on user-written text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)((?:\|[a-z]+)*)\}")

#: Filters a placeholder may chain: ``{icao|nospace|upper}``. An unknown filter leaves the placeholder as it is.
FILTERS: dict[str, Callable[[str], str]] = {
    "upper": str.upper,
    "lower": str.lower,
    "title": str.title,
    "strip": str.strip,
    "nospace": lambda s: "".join(s.split()),
}

PROMPT_DEFAULTS = {
    "caller_name": "there",
    "caller_number": "unknown",
    "call_direction": "inbound",
    "campaign_id": "",
    "lead_id": "",
}


def lookup(values: Mapping[str, Any], dotted: str) -> Any:
    """``a.b.0.c`` into nested mappings and lists; raises KeyError when any step is missing."""
    node: Any = values
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list | tuple) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(dotted)
    return node


def render(template: str, values: Mapping[str, Any]) -> str:
    def sub(m: re.Match[str]) -> str:
        try:
            v = lookup(values, m.group(1))
        except KeyError:
            return m.group(0)
        text = "" if v is None else str(v)
        for name in m.group(2).split("|")[1:]:
            fn = FILTERS.get(name)
            if fn is None:
                return m.group(0)
            text = fn(text)
        return text

    return _PLACEHOLDER.sub(sub, template)


def prompt_values(session: Any) -> dict[str, Any]:
    """The placeholders a context prompt or greeting may use, with their spoken defaults."""
    return {
        "caller_name": session.caller_name or PROMPT_DEFAULTS["caller_name"],
        "caller_number": session.caller_number or PROMPT_DEFAULTS["caller_number"],
        "call_id": session.call_id,
        "context_name": session.context,
        "call_direction": session.direction or PROMPT_DEFAULTS["call_direction"],
        "campaign_id": session.campaign_id or "",
        "lead_id": session.lead_id or "",
    }

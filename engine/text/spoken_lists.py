"""Lists said aloud: "a", "a and b", "a, b and c" (or "or"), and "a, b, c and 2 more" past a limit.

Why it exists: a transfer's unknown extension, an elicitation's choices, a built-in server's results and a tool
result's resource links each joined their words for speech with their own copy of the same rule. This module imports
nothing of the engine, so the built-in MCP servers may use it too.
"""

from __future__ import annotations

from collections.abc import Sequence


def spoken_list(items: Sequence[str], word: str = "and", *, most: int | None = None) -> str:
    """``items`` joined as a sentence says them: commas, then ``word`` before the last. With ``most``, only that many
    are named and the rest counted ("a, b, c and 2 more"). No items: the empty string."""
    names = list(items)
    if most is not None and len(names) > most:
        return ", ".join(names[:most]) + f" {word} {len(names) - most} more"
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + f" {word} {names[-1]}"

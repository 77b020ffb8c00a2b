"""JSON from outside, bounded: nesting depth is checked on the text before ``json.loads`` sees it.

Why it exists: ``json.loads`` on a megabyte of ``[[[[…`` raises ``RecursionError``, so every surface that parses
JSON it did not write (HTTP request bodies, provider sockets) scans the nesting first. One scanner for all of them.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A JSON string (skipped whole, escapes included) or one bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class JsonBoundsError(ValueError):
    """JSON refused: ``too_deep`` (nesting past the limit) or not valid JSON (``detail`` names line and column,
    never the input)."""

    def __init__(self, too_deep: bool, detail: str) -> None:
        super().__init__(detail)
        self.too_deep = too_deep
        self.detail = detail


def nesting_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests arrays/objects deeper than ``limit`` (brackets inside strings ignored)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for m in _TOKENS.finditer(text):
        ch = text[m.start()]
        if ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def loads_bounded(text: str, max_depth: int) -> Any:
    """``json.loads`` after the depth check, or ``JsonBoundsError`` saying which bound or rule failed."""
    deep = f"nested deeper than {max_depth} levels"
    if nesting_exceeds(text, max_depth):
        raise JsonBoundsError(True, deep)
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonBoundsError(True, deep) from None
    except ValueError as e:  # JSONDecodeError names line and column, never the input
        raise JsonBoundsError(False, str(e)) from None

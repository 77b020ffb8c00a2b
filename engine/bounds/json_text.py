"""JSON and text from outside, bounded and valid: nesting depth is checked on the text before ``json.loads`` sees
it, and what it gives back is valid Unicode.

Why it exists: ``json.loads`` on a megabyte of ``[[[[…`` raises ``RecursionError``, so every surface that parses
JSON it did not write (HTTP request bodies, provider sockets) scans the nesting first. One scanner for all of them.
And legal JSON such as ``"\\ud800"`` (a lone surrogate) or a command-line argument with invalid UTF-8 (which Python
keeps as lone surrogates) gives a ``str`` that cannot be encoded: the first writer that encodes it (Redis, a file, an
SQLite outbox, stdout) fails. ``valid_text`` / ``valid_json`` are the one place outside text is made valid: a lone
surrogate becomes U+FFFD, invalid bytes are decoded with U+FFFD, everything else is left as it is.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A JSON string, skipped whole (escapes included; unrolled so it matches in linear time; an unterminated one runs to
# the end), or one bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
#: A surrogate in a ``str``, or the JSON escape of one (``\\udXXX``, X in 8-f): only text with one needs a repair.
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
#: How deep ``valid_json`` follows a value (as deep as any parser here lets JSON nest, and then some).
MAX_VALID_DEPTH = 256


class JsonBoundsError(ValueError):
    """JSON refused: ``too_deep`` (nesting past the limit) or not valid JSON (``detail`` names line and column,
    never the input)."""

    def __init__(self, too_deep: bool, detail: str) -> None:
        super().__init__(detail)
        self.too_deep = too_deep
        self.detail = detail


def too_deep_at(text: str, limit: int) -> int | None:
    """Where the JSON ``text`` first nests arrays/objects deeper than ``limit``: the index of that bracket, or None
    (brackets inside strings ignored; no recursion). The one depth scanner: tool arguments, request bodies, sockets."""
    if text.count("[") + text.count("{") <= limit:  # cannot nest deeper than its opening brackets
        return None
    depth = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c == "[" or c == "{":
            depth += 1
            if depth > limit:
                return m.start()
        elif c == "]" or c == "}":
            depth -= 1
    return None


def nesting_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests arrays/objects deeper than ``limit`` (``too_deep_at`` found a place)."""
    return too_deep_at(text, limit) is not None


def loads_bounded(text: str, max_depth: int) -> Any:
    """``json.loads`` after the depth check, or ``JsonBoundsError`` saying which bound or rule failed; every string
    in the value is valid text (``valid_json``)."""
    deep = f"nested deeper than {max_depth} levels"
    if nesting_exceeds(text, max_depth):
        raise JsonBoundsError(True, deep)
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonBoundsError(True, deep) from None
    except ValueError as e:  # JSONDecodeError names line and column, never the input
        raise JsonBoundsError(False, str(e)) from None
    return valid_json(value, max_depth + 1) if needs_repair(text) else value


class InvalidText(ValueError):
    """Text that cannot be encoded as UTF-8: ``at`` is the index of its first lone surrogate."""

    def __init__(self, at: int) -> None:
        super().__init__(f"a lone surrogate at character {at} (not valid Unicode)")
        self.at = at


def require_valid(text: str) -> str:
    """``text`` itself when every UTF-8 writer can take it, else ``InvalidText`` saying where it is not: what a
    writer asks of text it did not make valid itself (an event's JSON line) before it writes it."""
    if text.isascii():
        return text
    m = _SURROGATE.search(text)
    if m is None:
        return text
    raise InvalidText(m.start())


def valid_text(text: str | bytes) -> str:
    """Outside text as valid Unicode: bytes are decoded as UTF-8 with U+FFFD for invalid bytes; in a ``str``, lone
    surrogates (from a ``"\\ud800"`` escape, or invalid bytes kept by ``surrogateescape``) become U+FFFD and valid
    surrogate pairs are joined. The same object back when it is valid already (the common case costs one scan)."""
    if isinstance(text, bytes | bytearray):
        return bytes(text).decode("utf-8", "replace")
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    # a pair (two escapes that belong together) is joined; what is left alone is replaced
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def valid_json(value: Any, max_depth: int = MAX_VALID_DEPTH) -> Any:
    """A parsed JSON value (objects' keys and values, arrays' items, at any depth) with every string made valid
    by ``valid_text``. The same object back when nothing needed repair (no copy); ``JsonBoundsError`` when it nests
    deeper than ``max_depth``."""
    return _valid(value, max_depth, 0)


def _valid(value: Any, max_depth: int, depth: int) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if not isinstance(value, dict | list | tuple):
        return value
    if depth >= max_depth:
        raise JsonBoundsError(True, f"nested deeper than {max_depth} levels")
    changed = False
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            k2 = valid_text(k) if isinstance(k, str) else k
            v2 = _valid(v, max_depth, depth + 1)
            changed = changed or k2 is not k or v2 is not v
            out[k2] = v2  # two keys that differ only in a lone surrogate: the later one's value is kept
        return out if changed else value
    items = []
    for v in value:
        v2 = _valid(v, max_depth, depth + 1)
        changed = changed or v2 is not v
        items.append(v2)
    if not changed:
        return value
    return items if isinstance(value, list) else tuple(items)


def needs_repair(text: str) -> bool:
    """Whether JSON ``text`` may decode to invalid text: it holds a surrogate or a surrogate's escape. Cheap (ASCII
    text without ``\\u`` is settled without a scan), so a parser asks it first and walks the parsed value only when
    it says yes."""
    if text.isascii() and "\\u" not in text:
        return False
    return _SURROGATE_ESCAPE.search(text) is not None

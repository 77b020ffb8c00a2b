"""Bounds on tool arguments, checked before anything parses or validates them, and the clip for echoed input.

Why it exists: arguments come from a model, a remote MCP client or a command line, so they can be anything. Python's
JSON parser and every recursive walker after it (validators, event serialisation, the MCP SDK) raise
``RecursionError`` on a few thousand nested brackets, and a megabyte-long name or value would be copied into every
rejection message, event and transcript. So depth, total size and string lengths are bounded here without recursion:
raw JSON text by a scan of its brackets (strings skipped) before ``json`` sees it, already-parsed values by an
iterative walk. Messages that echo input go through ``clip``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from engine.bounds.json_text import too_deep_at

#: Longest excerpt of user input echoed in a message (names, values, keys, parser excerpts).
ECHO_LIMIT = 80


class Limits(Protocol):
    """What the checks read: the ``engine.tool_arguments`` config section, or ``ArgumentLimits``."""

    @property
    def max_depth(self) -> int: ...

    @property
    def max_size(self) -> int: ...

    @property
    def max_string(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """Nesting levels (the arguments object is level 1), characters of JSON text, characters per string."""

    max_depth: int = 64
    max_size: int = 1_048_576
    max_string: int = 65_536


DEFAULT_LIMITS = ArgumentLimits()


class LimitExceeded(ValueError):
    """Arguments beyond a bound; the message names the bound, the measured value and where."""


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` itself when short, else its first ``limit`` characters, an ellipsis and the original length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def clip_repr(text: str, limit: int = ECHO_LIMIT) -> str:
    """``repr`` of a clipped string (control, zero-width and bidi characters escaped), length noted outside."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def check_text(text: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Bound raw JSON text before parsing: total size, then bracket depth (strings skipped). No recursion."""
    n = len(text)
    if n > limits.max_size:
        raise LimitExceeded(f"arguments are {n:,} characters of JSON (limit {limits.max_size:,})")
    at = too_deep_at(text, limits.max_depth)
    if at is not None:
        raise LimitExceeded(
            f"nested more than {limits.max_depth} levels deep (limit {limits.max_depth}) at character {at + 1:,}"
        )


def text_needs_walk(text: str, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Whether values parsed from ``text`` (already through ``check_text``) could still break a bound: only a
    string longer than ``max_string``, which needs at least that many characters of text."""
    return len(text) > limits.max_string


def _where(path: list[str | int]) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{clip(p, 40)}"
    return clip(out, 200)


def check_value(value: Any, limits: Limits = DEFAULT_LIMITS) -> None:
    """Bound an already-parsed value: depth, approximate JSON size, string and key lengths, finite numbers.

    Iterative (an explicit stack), so a self-containing or absurdly deep mapping is refused, never recursed into.
    The common case, a flat object of short strings, numbers and booleans, is settled by one quick loop.
    """
    if type(value) is dict and len(value) <= 256:
        max_string = limits.max_string
        size = 0
        for k, v in value.items():
            t = type(v)
            if t is str:
                n = len(v)
                if n > max_string:
                    break
                size += n
            elif t is float:
                if v - v != 0:  # inf or nan
                    break
            elif t is not int and t is not bool and v is not None:
                break
            if type(k) is not str:
                break
            n = len(k)
            if n > max_string:
                break
            size += n
        else:
            if size + 32 * len(value) <= limits.max_size:
                return
    _check_tree(value, limits)


def _check_tree(value: Any, limits: Limits) -> None:
    max_depth, max_string, max_size = limits.max_depth, limits.max_string, limits.max_size
    size = 0  # a lower bound of the JSON text's length, so text within max_size is never refused for size
    # (value, depth, path) — the path is only materialised for the message, from parent links.
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(value, 1, None)]
    while stack:
        v, depth, link = stack.pop()
        if isinstance(v, str):
            if len(v) > max_string:
                raise LimitExceeded(
                    f"a string of {len(v):,} characters (limit {max_string:,}) at {_where(_path(link))}"
                )
            size += len(v) + 2
        elif isinstance(v, Mapping | list | tuple):
            if depth > max_depth:
                raise LimitExceeded(
                    f"nested more than {max_depth} levels deep (limit {max_depth}) at {_where(_path(link))}"
                )
            size += 2
            if isinstance(v, Mapping):
                for k, x in v.items():
                    key = k if isinstance(k, str) else str(k)
                    if len(key) > max_string:
                        raise LimitExceeded(
                            f"a key of {len(key):,} characters (limit {max_string:,}) at {_where(_path(link))}"
                        )
                    size += len(key) + 3
                    stack.append((x, depth + 1, (link, key)))
            else:
                for i, x in enumerate(v):
                    stack.append((x, depth + 1, (link, i)))
        else:
            if isinstance(v, float) and not math.isfinite(v):
                raise LimitExceeded(f"{v!r} is not a JSON number at {_where(_path(link))}")
            size += 1
        if size > max_size:
            raise LimitExceeded(f"arguments are more than {max_size:,} characters of JSON (limit {max_size:,})")


def _path(link: tuple[Any, ...] | None) -> list[str | int]:
    out: list[str | int] = []
    while link is not None:
        link, step = link
        out.append(step)
    out.reverse()
    return out

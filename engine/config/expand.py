"""Expansion of ``${VAR}``, ``${VAR:-default}``, ``${keyring:NAME}`` and ``{python}`` in config strings.

Config files hold references, not secrets: the loader runs every string value through ``expand`` before
validation. ``$${`` writes a literal ``${``. The keyring lookup is passed in (``lookup_secret``) so this
module has no I/O of its own and can be tested with any mapping; every failure is an ``ExpansionError`` whose
message never contains a resolved value (the loader adds file, line and key path).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from engine.config.errors import format_path

ENV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$", re.DOTALL)
SECRET_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PYTHON_PLACEHOLDER = "{python}"
REFERENCE_HELP = "use ${VAR}, ${VAR:-default} or ${keyring:NAME}; write $${ for a literal '${'"


class ExpansionError(ValueError):
    """A reference that cannot be expanded; ``message`` is safe to show (no secret values)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Reference:
    """One ``${...}`` found in a string: ``kind`` is "env" or "keyring"."""

    kind: str
    name: str
    default: str | None = None


Part = str | Reference


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parse_body(body: str) -> Reference:
    if body.startswith("keyring:"):
        name = body[len("keyring:") :]
        if not SECRET_NAME_RE.match(name):
            raise ExpansionError(
                f"'${{keyring:{_short(name)}}}' names no valid secret (use letters, digits, '_', '.', '-')"
            )
        return Reference("keyring", name)
    match = ENV_RE.match(body)
    if not match:
        raise ExpansionError(f"'${{{_short(body)}}}' is not a valid reference: {REFERENCE_HELP}")
    default = match.group(2)
    if default is not None and "${" in default:
        raise ExpansionError(f"'${{{_short(body)}}}': nested references are not supported in a default")
    return Reference("env", match.group(1), default)


def parse(text: str, *, lenient: bool = False) -> list[Part]:
    """Split ``text`` into literal strings and references.

    With ``lenient`` a malformed ``${...`` is kept as literal text instead of raising (used to scan files for
    references without failing on them).
    """
    parts: list[Part] = []
    literal: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        j = text.find("$", i)
        if j < 0:
            literal.append(text[i:])
            break
        literal.append(text[i:j])
        if text.startswith("$${", j):
            literal.append("${")
            i = j + 3
            continue
        if not text.startswith("${", j):
            literal.append("$")
            i = j + 1
            continue
        end = text.find("}", j + 2)
        try:
            if end < 0:
                raise ExpansionError(f"unterminated '${{' in {_short(text[j:])!r}: {REFERENCE_HELP}")
            ref = _parse_body(text[j + 2 : end])
        except ExpansionError:
            if not lenient:
                raise
            literal.append("${")
            i = j + 2
            continue
        if literal:
            parts.append("".join(literal))
            literal = []
        parts.append(ref)
        i = end + 1
    if literal:
        parts.append("".join(literal))
    return [p for p in parts if p != ""]


def references(text: str) -> list[Reference]:
    """Every well-formed reference in ``text`` (malformed ones are ignored)."""
    return [p for p in parse(text, lenient=True) if isinstance(p, Reference)]


def _walk_strings(node: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _walk_strings(value, (*path, str(key)))
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            yield from _walk_strings(value, (*path, i))
    elif isinstance(node, str):
        yield path, node


def keyring_references(data: Any) -> dict[str, list[str]]:
    """Where an (unexpanded) config tree references each keyring secret: ``{name: [key paths]}``, by name."""
    found: dict[str, list[str]] = {}
    for path, text in _walk_strings(data, ()):
        for ref in references(text):
            if ref.kind == "keyring":
                where = format_path(path)
                if where not in found.setdefault(ref.name, []):
                    found[ref.name].append(where)
    return dict(sorted(found.items()))


def expand(
    text: str,
    *,
    env: Mapping[str, str],
    lookup_secret: Callable[[str], str],
    revealed: set[str] | None = None,
) -> str:
    """Return ``text`` with every reference replaced.

    ``lookup_secret(name)`` returns the secret or raises ``ExpansionError``. Every substituted value (from the
    environment or the keyring) is added to ``revealed`` so callers can redact it from any message they print.
    """
    if "$" not in text:
        return text
    out: list[str] = []
    for part in parse(text):
        if isinstance(part, str):
            out.append(part)
            continue
        if part.kind == "keyring":
            value = lookup_secret(part.name)
        else:
            found = env.get(part.name)
            if found is None or (found == "" and part.default is not None):
                if part.default is None:
                    raise ExpansionError(
                        f"environment variable {part.name} is not set "
                        f"(set it, or give a default: ${{{part.name}:-value}})"
                    )
                out.append(part.default)  # written in the file itself: not a secret
                continue
            value = found
        if revealed is not None and value:
            revealed.add(value)
        out.append(value)
    return "".join(out)


def expand_python(text: str) -> str:
    """``{python}`` (in an MCP server ``command``) is the interpreter running the engine."""
    return text.replace(PYTHON_PLACEHOLDER, sys.executable)


def expand_entry(data: Mapping[str, Any], lookup_secret: Callable[[str], str]) -> dict[str, Any]:
    """A server entry with every reference expanded as the loader expands a saved one (for testing it unsaved).

    The console's server form and ``ava-engine mcp add`` test an entry before it is saved through this one function.

    ``ExpansionError`` names the key whose reference cannot be expanded (never a resolved value).
    """

    def walk(node: Any, path: tuple[str | int, ...]) -> Any:
        if isinstance(node, Mapping):
            return {k: walk(v, (*path, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, (*path, i)) for i, v in enumerate(node)]
        if isinstance(node, str):
            try:
                text = expand(node, env=os.environ, lookup_secret=lookup_secret)
            except ExpansionError as e:
                where = ".".join(str(p) for p in path)
                raise ExpansionError(f"{where}: {e.message}") from None
            return expand_python(text) if path[:1] == ("command",) else text
        return node

    result: dict[str, Any] = walk(data, ())
    return result

"""Bounds for every YAML the engine reads: file size before parsing, nesting depth, how much aliases may expand.

Why it exists: YAML aliases make a 1 KB document describe a billion values ("billion laughs"). Parsers keep an
aliased value once, so loading is cheap, but anything that walks the result (our ``${VAR}`` expansion, pydantic,
a dice table's loader) expands it and runs for minutes and gigabytes. ``alias_bomb`` measures the expansion on the
parsed tree without expanding it (each shared container is sized once). Nesting is bounded before any tree is
built: the parsers compose recursively, so a few MB of ``[[[[…`` ran for seconds and ended in a ``RecursionError``
without a line; ``too_deep`` reads the parser's event stream (no tree, no recursion) and stops at the first
collection deeper than ``MAX_YAML_DEPTH``, and ``may_be_deep`` skips even that for the usual shallow document.
The config loader turns a hit into a ``ConfigError`` at the file and line, and ``safe_load``/``load_file`` are
a safe load with the same bounds for the other YAML files (dice tables, rule corpora, aerodrome lists: the built-in
servers, which import nothing else of the engine, so this module stands alone). One YAML library, ruamel.yaml, with
its libyaml parser (``ruamel.yaml[oldlibyaml]``): the config is YAML 1.2 round-trip (``engine.config.loader``); the
servers' files are read as YAML 1.1, as they always were (``yes``/``on`` are true, ``010`` is 8).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, StreamMark, YAMLError

__all__ = ["YAMLError", "YamlLimitError", "load_file", "safe_load"]

#: Largest YAML file read (bytes). A demanding config is a few hundred KB.
MAX_YAML_BYTES = 8 * 1024 * 1024
#: Most values aliases may add beyond what the document spells out (sharing a block among a few hundred servers
#: is fine; a multiplying chain of aliases is not).
MAX_ALIAS_VALUES = 100_000
#: Most collections nested inside one another (a demanding config nests about a dozen).
MAX_YAML_DEPTH = 64

Children = Callable[[Any], Iterable[tuple[Any, Any]] | None]


@dataclass(frozen=True)
class AliasBomb:
    """Where the expansion goes over: the key path of the smallest container that alone expands beyond the
    bound, that container, and how many values the whole document would expand to."""

    path: tuple[Any, ...]
    node: Any
    expanded: int
    written: int


def plain_children(node: Any) -> Iterable[tuple[Any, Any]] | None:
    """Children of loaded data (dicts and lists, ruamel's commented ones too); ``None`` for a scalar."""
    if isinstance(node, Mapping):
        return node.items()
    if isinstance(node, list):
        return enumerate(node)
    return None


def node_children(node: Any) -> Iterable[tuple[Any, Any]] | None:
    """Children of a composed node graph; keys are scalar values or positions."""
    value = getattr(node, "value", None)
    if not isinstance(value, list):
        return None
    if value and isinstance(value[0], tuple):
        return ((getattr(k, "value", "?"), v) for k, v in value)
    return enumerate(value)


def alias_bomb(root: Any, children: Children = plain_children, limit: int = MAX_ALIAS_VALUES) -> AliasBomb | None:
    """``None`` when aliases add at most ``limit`` values to ``root``; else where the expansion goes over.

    Iterative, and each container is sized once however often it is referenced; a recursive alias counts once
    (its cycle is reported by whoever converts the tree).
    """
    sizes: dict[int, int] = {}  # values in the container's full expansion
    kids: dict[int, list[tuple[Any, Any]]] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        nid = id(node)
        if finished:
            active.discard(nid)
            sizes[nid] = sum(1 + sizes.get(id(c), 0) for _, c in kids[nid])
            continue
        if nid in sizes or nid in active:
            continue
        items = children(node)
        if items is None:
            continue
        kids[nid] = list(items)
        active.add(nid)
        stack.append((node, True))
        stack.extend((c, False) for _, c in reversed(kids[nid]) if id(c) not in sizes and id(c) not in active)
    if id(root) not in sizes:
        return None
    written = sum(len(k) for k in kids.values())
    expanded = sizes[id(root)]
    if expanded - written <= limit:
        return None
    path: tuple[Any, ...] = ()
    node = root
    while True:
        nxt = next(((key, c) for key, c in kids[id(node)] if sizes.get(id(c), 0) > limit), None)
        if nxt is None:
            return AliasBomb(path, node, expanded, written)
        path = (*path, nxt[0])
        node = nxt[1]


def bomb_message(bomb: AliasBomb, limit: int = MAX_ALIAS_VALUES) -> str:
    return (
        f"YAML aliases expand this document to {bomb.expanded:,} values from {bomb.written:,} written "
        f"(at most {limit:,} may come from aliases): an alias bomb? Use fewer or smaller aliases here"
    )


@dataclass(frozen=True)
class TooDeep:
    """The first collection nested deeper than the bound: its 1-based line and the key path down to it."""

    line: int
    path: tuple[str | int, ...]


def may_be_deep(text: str, limit: int = MAX_YAML_DEPTH) -> bool:
    """False when ``text`` cannot nest more than ``limit`` collections (two C-speed passes, no parsing).

    A block collection nested ``d`` deep starts at column ``d - 1`` or further, after spaces and the indicators
    ``- ? :`` only; each flow collection needs a bracket. So the depth is at most the longest such line prefix
    plus one, plus the number of opening brackets.
    """
    room = limit - text.count("[") - text.count("{")
    return room <= 1 or re.search(rf"^[ \t?:-]{{{room - 1},}}", text, re.MULTILINE) is not None


def too_deep(events: Iterable[Any], limit: int = MAX_YAML_DEPTH) -> TooDeep | None:
    """Where a parser's event stream first nests more than ``limit`` collections; ``None``
    when it never does. Stops there, so a document of a million levels costs what its first ``limit`` do."""
    stack: list[list[Any]] = []  # per open collection: [is_mapping, nodes seen, last key]
    for event in events:
        kind = type(event).__name__
        if kind in ("MappingEndEvent", "SequenceEndEvent"):
            if stack:
                stack.pop()
            continue
        if kind not in ("ScalarEvent", "AliasEvent", "MappingStartEvent", "SequenceStartEvent"):
            continue
        if stack:
            parent = stack[-1]
            if parent[0] and parent[1] % 2 == 0:  # a key of a mapping
                parent[2] = event.value if kind == "ScalarEvent" else "?"
            parent[1] += 1
        if kind in ("MappingStartEvent", "SequenceStartEvent"):
            stack.append([kind == "MappingStartEvent", 0, None])
            if len(stack) > limit:
                path = tuple(p[2] if p[0] else p[1] - 1 for p in stack[:-1])
                return TooDeep(event.start_mark.line + 1, path)
    return None


def depth_message(limit: int = MAX_YAML_DEPTH) -> str:
    return f"YAML collections are nested more than {limit} levels deep here; flatten this structure"


def _safe_yaml(pure: bool = False) -> YAML:
    """A safe loader reading YAML 1.1 (one per use: ruamel instances are not thread-safe); libyaml's parser unless
    ``pure``."""
    loader = YAML(typ="safe", pure=pure)
    loader.version = (1, 1)
    return loader


def nesting(
    text: str, limit: int = MAX_YAML_DEPTH, fallback: Callable[[str], TooDeep | None] | None = None
) -> TooDeep | None:
    """``too_deep`` of a document, read by libyaml's C parser: the pure-Python parser takes over a second to reach
    the 65th ``[`` of ``[[[[…``, looking up to 1,024 characters ahead for a simple key at each. Where libyaml finds a
    syntax error, ``fallback`` (a scan with the parser that will read the document) decides; without one, the
    real parse reports the error."""
    if not may_be_deep(text, limit):
        return None
    try:
        return too_deep(_safe_yaml().parse(text), limit)
    except YAMLError:
        return fallback(text) if fallback is not None else None


def size_message(size: int, limit: int = MAX_YAML_BYTES) -> str:
    return f"is {size:,} bytes; YAML files are limited to {limit:,} bytes"


class YamlLimitError(MarkedYAMLError):
    """Too large, too deep or an alias bomb; a ``YAMLError``, so ``except YAMLError`` handlers report it."""


def safe_load(text: str | bytes) -> Any:
    """A safe load (YAML 1.1) that refuses more than ``MAX_YAML_BYTES``, nesting deeper than ``MAX_YAML_DEPTH`` and
    alias bombs (with the line)."""
    size = len(text)
    if isinstance(text, str) and size > MAX_YAML_BYTES // 4:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        raise YamlLimitError(problem=f"the document {size_message(size)}")
    deep = nesting(text if isinstance(text, str) else text.decode("utf-8", "replace"))
    if deep is not None:  # (where libyaml finds a syntax error first, the load below reports it at its line)
        where = StreamMark("<document>", 0, deep.line - 1, 0)
        raise YamlLimitError(problem=depth_message(), problem_mark=where)
    loader = _safe_yaml()
    node = loader.compose(text)
    if node is None:
        return None
    bomb = alias_bomb(node, node_children)
    if bomb is not None:
        mark: StreamMark | None = getattr(bomb.node, "start_mark", None)
        raise YamlLimitError(problem=bomb_message(bomb), problem_mark=mark)
    return loader.constructor.construct_document(node)


def load_file(path: str | os.PathLike[str]) -> Any:
    """``safe_load`` of a UTF-8 file, reading at most ``MAX_YAML_BYTES`` (+1 to notice a larger one)."""
    with Path(path).open("rb") as f:
        raw = f.read(MAX_YAML_BYTES + 1)
    if len(raw) > MAX_YAML_BYTES:
        raise YamlLimitError(problem=f"{os.fspath(path)} {size_message(os.path.getsize(path))}")
    return safe_load(raw.decode("utf-8"))

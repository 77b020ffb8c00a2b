"""Bounds for every YAML the engine reads: file size before parsing, and how much aliases may expand.

Why it exists: YAML aliases make a 1 KB document describe a billion values ("billion laughs"). Parsers keep an
aliased value once, so loading is cheap, but anything that walks the result (our ``${VAR}`` expansion, pydantic,
a dice table's loader) expands it and runs for minutes and gigabytes. ``alias_bomb`` measures the expansion on the
parsed tree without expanding it (each shared container is sized once); the config loader turns a hit into a
``ConfigError`` at the file and line, and ``safe_load``/``load_file`` are PyYAML's ``safe_load`` with the same
bounds for the other YAML files (dice tables, rule corpora, aerodrome lists: the built-in servers, which import
nothing else of the engine, so this module stands alone).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.error import Mark

#: Largest YAML file read (bytes). A demanding config is a few hundred KB.
MAX_YAML_BYTES = 8 * 1024 * 1024
#: Most values aliases may add beyond what the document spells out (sharing a block among a few hundred servers
#: is fine; a multiplying chain of aliases is not).
MAX_ALIAS_VALUES = 100_000

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
    """Children of a composed (PyYAML or ruamel) node graph; keys are scalar values or positions."""
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


def size_message(size: int, limit: int = MAX_YAML_BYTES) -> str:
    return f"is {size:,} bytes; YAML files are limited to {limit:,} bytes"


class YamlLimitError(yaml.MarkedYAMLError):
    """Too large or an alias bomb; a ``yaml.YAMLError``, so existing ``except yaml.YAMLError`` handlers report it."""


def safe_load(text: str | bytes) -> Any:
    """``yaml.safe_load`` that refuses more than ``MAX_YAML_BYTES`` and alias bombs (with the line)."""
    size = len(text)
    if isinstance(text, str) and size > MAX_YAML_BYTES // 4:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        raise YamlLimitError(problem=f"the document {size_message(size)}")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        bomb = alias_bomb(node, node_children)
        if bomb is not None:
            mark: Mark | None = getattr(bomb.node, "start_mark", None)
            raise YamlLimitError(problem=bomb_message(bomb), problem_mark=mark)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_file(path: str | os.PathLike[str]) -> Any:
    """``safe_load`` of a UTF-8 file, reading at most ``MAX_YAML_BYTES`` (+1 to notice a larger one)."""
    with Path(path).open("rb") as f:
        raw = f.read(MAX_YAML_BYTES + 1)
    if len(raw) > MAX_YAML_BYTES:
        raise YamlLimitError(problem=f"{os.fspath(path)} {size_message(os.path.getsize(path))}")
    return safe_load(raw.decode("utf-8"))

"""Edit the config file as the user wrote it: comments, key order and ``${...}`` references survive.

``ConfigDocument`` holds the raw round-trip tree (never expanded: ``${keyring:X}`` stays literal), edits it by
key path, validates the would-be file exactly like the loader (same errors, same lines) before anything is
written, shows a unified diff against the file on disk, and saves atomically with the previous version kept as
``PATH.bak``. It refuses to save over a file that changed on disk since it was loaded.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.tokens import CommentToken

from engine.config.atomic import atomic_write
from engine.config.errors import ConfigConflictError, ConfigError, format_path
from engine.config.fragment import new_dumper
from engine.config.loader import decode_config, parse_yaml, read_config_bytes, settings_from_tree
from engine.config.models import Settings

KeyPart = str | int
_MISSING: Any = object()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _to_tree(value: Any) -> Any:
    """Plain dicts/lists -> round-trip containers (so later edits inside them keep working)."""
    if isinstance(value, CommentedMap | CommentedSeq):
        return value
    if isinstance(value, Mapping):
        out = CommentedMap()
        for key, item in value.items():
            out[key] = _to_tree(item)
        return out
    if isinstance(value, list | tuple):
        return CommentedSeq(_to_tree(item) for item in value)
    return value


def _is_block(node: Any) -> bool:
    return isinstance(node, CommentedMap | CommentedSeq) and bool(node) and not node.fa.flow_style()


def _trailing_slot(node: Any) -> tuple[list[Any], int] | None:
    """The comment slot after the last scalar of a block container (ruamel keeps the blank lines and comments
    that follow a mapping there, on its deepest last entry)."""
    if isinstance(node, CommentedMap) and node:
        key = next(reversed(node))
        if _is_block(node[key]):
            return _trailing_slot(node[key])
        slots = node.ca.items.setdefault(key, [None, None, None, None])
        return slots, 2
    if isinstance(node, CommentedSeq) and node:
        index = len(node) - 1
        if _is_block(node[index]):
            return _trailing_slot(node[index])
        slots = node.ca.items.setdefault(index, [None, None])
        return slots, 0
    return None


def _add_key(target: CommentedMap, key: Any, value: Any) -> None:
    """Append a new key; the blank lines/comments that followed the old last entry move after the new one."""
    before = _trailing_slot(target) if _is_block(target) else None
    target[key] = _to_tree(value)
    if before is None:
        return
    slots, index = before
    token = slots[index]
    if not isinstance(token, CommentToken) or "\n" not in token.value:
        return
    head, _, rest = token.value.partition("\n")
    if not rest:
        return
    after = _trailing_slot(target)
    if after is None or after[0] is slots:
        return
    token.value = head + "\n"
    after[0][after[1]] = CommentToken("\n" + rest, token.start_mark, None)


def _merge_into(target: CommentedMap, new: Mapping[str, Any]) -> None:
    """Make ``target`` equal ``new`` while keeping the comments and order of the keys that remain."""
    for key in [k for k in target if k not in new]:
        del target[key]
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), CommentedMap):
            _merge_into(target[key], value)
        elif key not in target:
            _add_key(target, key, value)
        elif target[key] != value:
            target[key] = _to_tree(value)


def _guess_indent(tree: CommentedMap) -> tuple[int, int, int]:
    """(mapping, sequence, offset) indentation as the user wrote it, from the first nested block of each kind."""
    mapping: int | None = None
    sequence: int | None = None
    stack: list[CommentedMap] = [tree]
    while stack and (mapping is None or sequence is None):
        node = stack.pop(0)
        for key, child in node.items():
            try:
                key_line, key_col = node.lc.key(key)
                if isinstance(child, CommentedMap) and child and not child.fa.flow_style():
                    first_line, first_col = child.lc.key(next(iter(child)))
                    if mapping is None and first_line > key_line:
                        mapping = first_col - key_col
                    stack.append(child)
                elif isinstance(child, CommentedSeq) and child and not child.fa.flow_style():
                    item_line, item_col = child.lc.item(0)
                    if sequence is None and item_line > key_line:
                        sequence = item_col - key_col
                    stack.extend(item for item in child if isinstance(item, CommentedMap))
            except (KeyError, TypeError, AttributeError, StopIteration):  # merged keys have no position
                continue
    mapping = mapping if mapping and mapping > 0 else 2
    sequence = sequence if sequence and sequence >= 2 else 2
    return mapping, sequence, sequence - 2


class ConfigDocument:
    """The raw config file, editable by key path, saved atomically."""

    def __init__(self, path: str | os.PathLike[str], text: str, *, on_disk: bool) -> None:
        self.path = Path(path)
        self.source = os.fspath(path)
        self.data: CommentedMap = self._parse(text)
        self._indent = _guess_indent(self.data)
        self._disk_digest: str | None = _digest(text.encode("utf-8")) if on_disk else None
        self._disk_text = text if on_disk else ""

    # ------------------------------------------------------------------------------------------- loading

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ConfigDocument:
        """Read ``path``; syntax errors, duplicate keys or a non-mapping top level are a ``ConfigError``."""
        raw = read_config_bytes(path)
        doc = cls(path, decode_config(raw, os.fspath(path)), on_disk=True)
        doc._disk_digest = _digest(raw)
        return doc

    @classmethod
    def new(cls, path: str | os.PathLike[str], text: str = "") -> ConfigDocument:
        """A document for a file that does not exist yet (saving refuses if one appears meanwhile)."""
        return cls(path, text, on_disk=False)

    def _parse(self, text: str) -> CommentedMap:
        tree = parse_yaml(text, self.source)
        if tree is None:
            return CommentedMap()
        if not isinstance(tree, CommentedMap):
            raise ConfigError.single(self.source, "the top level must be a mapping of sections", line=1)
        return tree

    # ------------------------------------------------------------------------------------------- editing

    def get(self, path: Sequence[KeyPart], default: Any = _MISSING) -> Any:
        """The raw (unexpanded) value at ``path``; ``KeyError`` naming the path if absent and no default."""
        node: Any = self.data
        for i, part in enumerate(path):
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                if default is not _MISSING:
                    return default
                raise KeyError(f"{format_path(tuple(path[: i + 1]))} is not set in {self.source}") from None
        return node

    def set(self, path: Sequence[KeyPart], value: Any) -> None:
        """Set ``path`` to ``value``, creating missing mappings on the way; existing keys keep their place."""
        if not path:
            raise ValueError("an empty key path names the whole document; set a section instead")
        node: Any = self.data
        for i, part in enumerate(path[:-1]):
            if isinstance(node, CommentedMap):
                child = node.get(part)
                if child is None:
                    _add_key(node, part, CommentedMap())
                    child = node[part]
            elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
                child = node[part]
            else:
                where = format_path(tuple(path[:i])) or "the top level"
                raise KeyError(f"cannot set {format_path(tuple(path))}: {where} is not a mapping")
            node = child
        last = path[-1]
        if isinstance(node, CommentedMap):
            if last in node:
                node[last] = _to_tree(value)
            else:
                _add_key(node, last, value)
        elif isinstance(node, CommentedSeq) and isinstance(last, int) and 0 <= last <= len(node):
            if last == len(node):
                node.append(_to_tree(value))
            else:
                node[last] = _to_tree(value)
        else:
            raise KeyError(f"cannot set {format_path(tuple(path))}: its parent is not a mapping or list")

    def remove(self, path: Sequence[KeyPart]) -> Any:
        """Delete ``path`` and return the removed raw value; ``KeyError`` naming the path if absent."""
        if not path:
            raise ValueError("an empty key path names the whole document")
        parent = self.get(path[:-1]) if len(path) > 1 else self.data
        try:
            value = parent[path[-1]]
            del parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            raise KeyError(f"{format_path(tuple(path))} is not set in {self.source}") from None
        return value

    def set_server(self, server_id: str, server: Mapping[str, Any]) -> None:
        """Add or replace ``mcp.servers.<id>``; keys kept by the edit keep their comments and order."""
        current = self.get(("mcp", "servers", server_id), None)
        if isinstance(current, CommentedMap):
            _merge_into(current, server)
        else:
            self.set(("mcp", "servers", server_id), dict(server))

    def remove_server(self, server_id: str) -> None:
        self.remove(("mcp", "servers", server_id))

    # ------------------------------------------------------------------------------------------- output

    def text(self) -> str:
        buf = io.StringIO()
        if len(self.data) or self.data.ca.comment:
            new_dumper(*self._indent).dump(self.data, buf)
        return buf.getvalue()

    def validate(
        self,
        *,
        env: Mapping[str, str] | None = None,
        lookup_secret: Callable[[str], str] | None = None,
    ) -> Settings:
        """Expand and validate what ``save()`` would write; ``ConfigError`` lines refer to that text."""
        text = self.text()
        return settings_from_tree(parse_yaml(text, self.source), self.source, env=env, lookup_secret=lookup_secret)

    def diff(self) -> str:
        """Unified diff from the file as loaded to the document as it would be saved ('' when unchanged)."""
        return "".join(
            difflib.unified_diff(
                self._disk_text.splitlines(keepends=True),
                self.text().splitlines(keepends=True),
                fromfile=f"{self.source} (on disk)",
                tofile=f"{self.source} (edited)",
            )
        )

    def _check_unchanged_on_disk(self) -> bytes | None:
        try:
            current: bytes | None = self.path.read_bytes()
        except FileNotFoundError:
            current = None
        current_digest = _digest(current) if current is not None else None
        if current_digest != self._disk_digest:
            what = "was created" if self._disk_digest is None else "changed on disk"
            if current is None:
                what = "was deleted"
            raise ConfigConflictError.single(
                self.source, f"the file {what} since it was loaded; reload it and make the change again"
            )
        return current

    def save(
        self,
        *,
        validate: bool = True,
        env: Mapping[str, str] | None = None,
        lookup_secret: Callable[[str], str] | None = None,
    ) -> Settings | None:
        """Validate, write atomically (previous version -> ``PATH.bak``), return the new ``Settings``."""
        settings = self.validate(env=env, lookup_secret=lookup_secret) if validate else None
        previous = self._check_unchanged_on_disk()
        text = self.text()
        data = text.encode("utf-8")
        atomic_write(self.path, data, backup=previous)
        self._disk_digest = _digest(data)
        self._disk_text = text
        return settings

"""Read a config YAML file into ``Settings``, reporting every problem with file, line and key path.

Steps: read the file (missing, unreadable, not UTF-8 -> clear errors); parse it round-trip with ruamel.yaml so
every key keeps its line (syntax errors and duplicate keys are reported at the parser's line); record the line
of every key path; turn the tree into plain data while expanding ``${VAR}``, ``${VAR:-default}``,
``${keyring:NAME}`` and ``{python}``; validate with pydantic and map each error back to its line. All problems
become one ``ConfigError``. Values taken from the environment or the keyring are redacted from every message.
"""

from __future__ import annotations

import datetime
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.bounds.yaml_loader import (
    MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
    TooDeep,
    alias_bomb,
    bomb_message,
    depth_message,
    nesting,
    size_message,
    too_deep,
)
from engine.config.errors import ConfigError, ConfigIssue, KeyPath, format_path
from engine.config.expand import ExpansionError, expand, expand_python, keyring_references
from engine.config.models import Settings
from engine.config.secrets import lookup_secret as keyring_lookup
from engine.config.validation import issues_from_validation, line_for
from engine.redaction.redactor import Redactor

log = logging.getLogger(__name__)

MAX_DEPTH = MAX_YAML_DEPTH
SECTIONS_HINT = "a mapping of sections such as engine, providers, mcp, contexts"


def new_yaml() -> YAML:
    """A round-trip YAML instance (one per use: ruamel instances are not thread-safe)."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def read_config_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, or a ``ConfigError`` naming the path and what is wrong with it."""
    name = os.fspath(path)
    try:
        with Path(path).open("rb") as f:
            raw = f.read(MAX_YAML_BYTES + 1)  # never more, whatever the file (or device) holds
            if len(raw) > MAX_YAML_BYTES:
                size = os.fstat(f.fileno()).st_size
                raise ConfigError.single(name, size_message(max(size, len(raw))))
            return raw
    except FileNotFoundError:
        raise ConfigError.single(name, "config file not found") from None
    except IsADirectoryError:
        raise ConfigError.single(name, "is a directory, not a config file") from None
    except PermissionError:
        raise ConfigError.single(name, "cannot read the config file: permission denied") from None
    except OSError as exc:
        raise ConfigError.single(name, f"cannot read the config file: {exc.strerror or exc}") from None


def decode_config(raw: bytes, source: str) -> str:
    """UTF-8 (a BOM is tolerated); anything else is a ``ConfigError`` at the first bad byte's line."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError.single(source, "is not UTF-8 text", line=line) from None


def read_config_text(path: str | os.PathLike[str]) -> str:
    return decode_config(read_config_bytes(path), os.fspath(path))


def _duplicate_issues(text: str, source: str) -> list[ConfigIssue]:
    """Every duplicate key with its full path (the constructor reports only the first, without a path)."""
    root = new_yaml().compose(text)
    issues: list[ConfigIssue] = []
    seen_nodes: set[int] = set()

    def walk(node: Node | None, path: KeyPath) -> None:
        if node is None or id(node) in seen_nodes:
            return
        seen_nodes.add(id(node))
        if isinstance(node, MappingNode):
            first: dict[str, int] = {}
            for key_node, value_node in node.value:
                key = str(key_node.value) if isinstance(key_node, ScalarNode) else "?"
                line = key_node.start_mark.line + 1
                if key in first and key != "<<":
                    issues.append(
                        ConfigIssue(
                            source,
                            line,
                            format_path((*path, key)),
                            f"duplicate key {key!r} (first defined on line {first[key]})",
                        )
                    )
                first.setdefault(key, line)
                walk(value_node, (*path, key))
        elif isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i))

    walk(root, ())
    return issues


def parse_yaml(text: str, source: str) -> Any:
    """Round-trip parse; syntax errors and duplicate keys become a ``ConfigError`` at the parser's line.

    Every YAML the engine reads as config goes through here (files, the console's YAML boxes, scripts), so the
    bounds live here too: more than ``MAX_YAML_BYTES`` is refused before parsing, nesting deeper than
    ``MAX_DEPTH`` before a tree is built (the line of the first collection too deep, its key path abbreviated),
    an alias bomb after parsing (measured without expanding it) with the line of the container that blows up.
    """
    if len(text) > MAX_YAML_BYTES // 4 and (size := len(text.encode("utf-8", "surrogatepass"))) > MAX_YAML_BYTES:
        raise ConfigError.single(source, size_message(size))
    deep = nesting(text, MAX_DEPTH, fallback=_too_deep)
    if deep is not None:
        shown = format_path(deep.path[:3]) + ("…" if len(deep.path) > 3 else "")
        raise ConfigError.single(source, depth_message(MAX_DEPTH), line=deep.line, path=shown)
    try:
        tree = new_yaml().load(text)
    except DuplicateKeyError as exc:
        issues = _duplicate_issues(text, source)
        if issues:
            raise ConfigError(issues) from None
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError.single(source, "duplicate key", line=line) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        message = f"YAML syntax error: {problem}"
        if exc.context and exc.context_mark is not None and exc.context_mark.line + 1 != line:
            message += f" ({exc.context} started on line {exc.context_mark.line + 1})"
        raise ConfigError.single(source, message, line=line) from None
    except YAMLError as exc:
        raise ConfigError.single(source, f"YAML error: {str(exc).splitlines()[0][:200]}") from None
    except RecursionError:
        raise ConfigError.single(source, "YAML nesting is too deep") from None
    bomb = alias_bomb(tree)
    if bomb is not None:
        lc = getattr(bomb.node, "lc", None)
        line = lc.line + 1 if lc is not None and lc.line is not None else None
        raise ConfigError.single(source, bomb_message(bomb), line=line, path=format_path(bomb.path))
    return tree


def _too_deep(text: str) -> TooDeep | None:
    """``too_deep`` over ruamel's own event stream (the grammar ``parse_yaml`` then reads), which builds no tree:
    for a document libyaml finds a syntax error in."""
    try:
        return too_deep(new_yaml().parse(text), MAX_DEPTH)
    except YAMLError:
        return None  # a syntax error before any deep part: the real parse reports it at its line


def line_index(node: Any) -> dict[KeyPath, int]:
    """1-based line of every key and list item in a round-trip tree, by key path."""
    lines: dict[KeyPath, int] = {}
    seen: set[int] = set()

    def walk(cur: Any, path: KeyPath) -> None:
        if id(cur) in seen or len(path) > MAX_DEPTH:
            return
        if isinstance(cur, CommentedMap):
            seen.add(id(cur))
            for key in cur:
                try:
                    lines[(*path, key)] = cur.lc.key(key)[0] + 1
                except (
                    KeyError,
                    TypeError,
                    AttributeError,
                ):  # merged (<<) keys have no position of their own
                    pass
                walk(cur[key], (*path, key))
        elif isinstance(cur, CommentedSeq):
            seen.add(id(cur))
            for i, item in enumerate(cur):
                try:
                    lines[(*path, i)] = cur.lc.item(i)[0] + 1
                except (KeyError, TypeError, AttributeError):
                    pass
                walk(item, (*path, i))

    walk(node, ())
    return lines


def _is_command_item(path: KeyPath) -> bool:
    return len(path) == 5 and path[0] == "mcp" and path[1] == "servers" and path[3] == "command"


#: Keys under which a value from ``${VAR}`` is a credential to mask in every output (``${keyring:…}`` always is).
_CREDENTIAL_PLACES = frozenset({"env", "headers", "command", "args"})
_CREDENTIAL_KEY_RE = re.compile(r"token|key|secret|passw|auth|credential|bearer|cookie", re.IGNORECASE)


def _is_credential_place(path: KeyPath) -> bool:
    """Where a ``${VAR}`` value is a credential: an env/headers map, a command line, a credential-named key."""
    keys = [k for k in path if isinstance(k, str)]
    return any(k in _CREDENTIAL_PLACES for k in keys) or bool(keys and _CREDENTIAL_KEY_RE.search(keys[-1]))


class _Expander:
    """Converts a round-trip tree to plain data, expanding strings; collects issues instead of stopping."""

    def __init__(
        self, source: str, lines: Mapping[KeyPath, int], env: Mapping[str, str], lookup: Callable[[str], str]
    ) -> None:
        self.source = source
        self.lines = lines
        self.env = env
        self.lookup = lookup
        self.issues: list[tuple[KeyPath, ConfigIssue]] = []
        self.revealed: set[str] = set()
        #: Substituted values every output must mask (``Settings._expanded_secrets``).
        self.secrets: set[str] = set()
        self._secrets: dict[str, str] = {}

    def _issue(self, path: KeyPath, message: str) -> None:
        self.issues.append((path, ConfigIssue(self.source, line_for(path, self.lines), format_path(path), message)))

    def _cached_lookup(self, name: str) -> str:
        if name not in self._secrets:
            self._secrets[name] = self.lookup(name)
        return self._secrets[name]

    def convert(self, node: Any, path: KeyPath, stack: tuple[int, ...] = ()) -> Any:
        if isinstance(node, Mapping | list):
            if id(node) in stack or len(path) > MAX_DEPTH:
                self._issue(path, "recursive or too deeply nested YAML (check anchors and aliases)")
                return None
            stack = (*stack, id(node))
        if isinstance(node, Mapping):
            return {key: self.convert(value, (*path, key), stack) for key, value in node.items()}
        if isinstance(node, list):
            return [self.convert(item, (*path, i), stack) for i, item in enumerate(node)]
        if isinstance(node, str):
            found: set[str] = set()
            try:
                text = expand(str(node), env=self.env, lookup_secret=self._cached_lookup, revealed=found)
            except ExpansionError as exc:
                self.revealed |= found
                self._issue(path, exc.message)
                return ""
            self.revealed |= found
            self.secrets |= found if _is_credential_place(path) else found & set(self._secrets.values())
            return expand_python(text) if _is_command_item(path) else text
        try:
            return plain_scalar(node)
        except ValueError as exc:
            self._issue(path, str(exc))
            return None


def plain_scalar(node: Any) -> Any:
    """A parsed scalar other than a string as the config reads it (``engine.config.fragment`` reads the same):
    ruamel's number subclasses become plain numbers, an unquoted date its text; ``ValueError`` for a YAML tag."""
    if isinstance(node, TaggedScalar):
        raise ValueError(f"YAML tags such as {node.tag.value!r} are not supported here")
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, datetime.date):  # an unquoted 2025-06-18 is a date in YAML; fields want the text
        return node.isoformat()
    raise ValueError(f"unsupported YAML value of type {type(node).__name__}")


def settings_from_tree(
    tree: Any,
    source: str,
    *,
    env: Mapping[str, str] | None = None,
    lookup_secret: Callable[[str], str] | None = None,
) -> Settings:
    """Validate a parsed round-trip tree (from ``parse_yaml``) into ``Settings`` or raise ``ConfigError``."""
    if tree is None:
        raise ConfigError.single(source, f"the config is empty (expected {SECTIONS_HINT})", line=1)
    if not isinstance(tree, CommentedMap):
        kind = "a list" if isinstance(tree, list) else "a single value"
        raise ConfigError.single(source, f"the top level must be {SECTIONS_HINT}, not {kind}", line=1)
    lines = line_index(tree)
    expander = _Expander(source, lines, os.environ if env is None else env, lookup_secret or keyring_lookup)
    data = expander.convert(tree, ())
    found = list(expander.issues)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        failed = [path for path, _ in expander.issues]
        for path, issue in issues_from_validation(exc, source=source, data=data, lines=lines):
            if not any(path[: len(bad)] == bad for bad in failed):  # no follow-on error for a failed expansion
                found.append((path, issue))
    else:
        if not found:
            log.debug(
                "loaded config %s: %d providers, %d MCP servers, %d contexts",
                source,
                len(settings.providers),
                len(settings.mcp.servers),
                len(settings.contexts),
            )
            settings._expanded_secrets = frozenset(expander.secrets)
            return settings
    issues = sorted((issue for _, issue in found), key=lambda i: (i.line or 0, i.path))
    mask = Redactor(expander.revealed)  # every substituted value, in each encoded form a message may carry
    raise ConfigError(ConfigIssue(i.file, i.line, i.path, mask(i.message)) for i in issues) from None


def load_settings_text(
    text: str,
    source_name: str = "<config>",
    *,
    env: Mapping[str, str] | None = None,
    lookup_secret: Callable[[str], str] | None = None,
) -> Settings:
    """Parse, expand and validate config text; ``source_name`` is the file name used in messages."""
    return settings_from_tree(parse_yaml(text, source_name), source_name, env=env, lookup_secret=lookup_secret)


def load_settings(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    lookup_secret: Callable[[str], str] | None = None,
) -> Settings:
    """Load the config file at ``path`` (``env`` defaults to ``os.environ``, secrets to the OS keyring)."""
    name = os.fspath(path)
    return load_settings_text(read_config_text(path), name, env=env, lookup_secret=lookup_secret)


def references(source: str | Mapping[str, Any]) -> dict[str, list[str]]:
    """Where the config references each secret: ``{name: [key paths]}``.

    ``source`` is the raw YAML text or an already-loaded (unexpanded) mapping, e.g. ``ConfigDocument.data``.
    """
    return keyring_references(parse_yaml(source, "<references>") if isinstance(source, str) else source)

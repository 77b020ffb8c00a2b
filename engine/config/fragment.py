"""YAML written or typed outside the config file reads exactly like the config file.

Why it exists: the console's server form has a YAML box (the ``tools`` list) and the scripted provider reads YAML
scripts; with PyYAML they spoke YAML 1.1, where ``on``/``no``/``yes``/``off`` are booleans and ``1e3``/``0o17``
strings, while the loader speaks YAML 1.2, where it is the other way round. So the same text meant one thing in
the form and another in the file. Here a fragment goes through the loader's own parser (``parse_yaml``: the same
YAML instance, limits, duplicate-key check and error messages with lines) and the loader's scalar rules
(``plain_scalar``), and is written back with the same dialect the config document is saved with.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML

from engine.config.errors import ConfigError, ConfigIssue, KeyPath, format_path
from engine.config.loader import MAX_DEPTH, line_index, new_yaml, parse_yaml, plain_scalar
from engine.config.validation import line_for

__all__ = ["dump_yaml_fragment", "new_dumper", "parse_yaml_fragment"]


def parse_yaml_fragment(text: str, where: str = "<yaml>") -> Any:
    """Plain data (dict, list, str, int, float, bool, None) from YAML text, read as the config loader reads it.

    ``where`` names the text in messages (``"tools"``, a file name). Syntax errors, duplicate keys, tags and
    recursive aliases raise ``ConfigError`` with the line; ``${...}`` references stay as written.
    """
    tree = parse_yaml(text, where)
    issues: list[ConfigIssue] = []
    lines = line_index(tree)

    def plain(node: Any, path: KeyPath, stack: tuple[int, ...]) -> Any:
        if isinstance(node, Mapping | list):
            if id(node) in stack or len(path) > MAX_DEPTH:
                issues.append(
                    ConfigIssue(
                        where,
                        line_for(path, lines),
                        format_path(path),
                        "recursive or too deeply nested YAML (check anchors and aliases)",
                    )
                )
                return None
            stack = (*stack, id(node))
        if isinstance(node, Mapping):
            return {key: plain(value, (*path, key), stack) for key, value in node.items()}
        if isinstance(node, list):
            return [plain(item, (*path, i), stack) for i, item in enumerate(node)]
        if isinstance(node, str):
            return str(node)
        try:
            return plain_scalar(node)
        except ValueError as exc:
            issues.append(ConfigIssue(where, line_for(path, lines), format_path(path), str(exc)))
            return None

    data = plain(tree, (), ())
    if issues:
        raise ConfigError(issues)
    return data


def _represent_null(representer: Any, _data: None) -> Any:
    """Write ``null`` explicitly (ruamel would leave ``key:`` empty, which reads as a mistake)."""
    return representer.represent_scalar("tag:yaml.org,2002:null", "null")


def new_dumper(mapping: int = 2, sequence: int = 2, offset: int = 0) -> YAML:
    """The loader's YAML instance set up for writing: the given indentation, ``null`` written out."""
    yaml = new_yaml()
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.representer.add_representer(type(None), _represent_null)
    return yaml


def dump_yaml_fragment(value: Any) -> str:
    """YAML text for ``value`` that ``parse_yaml_fragment`` (and the loader) reads back as the same data."""
    buf = io.StringIO()
    new_dumper().dump(value, buf)
    return buf.getvalue().removesuffix("\n...\n").rstrip("\n")

"""The manual (docs/, built by ``make test`` with ``mkdocs build --strict``) documents the code it is built from.

The config and CLI reference pages are generated at build time by docs/hooks.py; these tests walk the config
models and the argument parsers on their own and check that every key and every command is on those pages, so a
generator that skips a kind of field (a map of sections, a list of them) or a nesting of commands fails here.
The README stays a landing page whose links into docs/ resolve.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import types
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from engine.config.models import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def load_docs_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"docs/{name}.py is missing"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def model_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every key path of the config: ``<name>`` for a key the user names, ``[]`` for an item of a list."""
    paths = []
    for name, field in model.model_fields.items():
        path = f"{prefix}.{field.alias or name}" if prefix else (field.alias or name)
        paths.append(path)
        for sub, suffix in sections_in(field.annotation):
            if sub is not model:
                paths += model_paths(sub, path + suffix)
    return paths


def sections_in(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, "")]
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin is dict:
        return [(m, ".<name>" + s) for m, s in sections_in(args[1])]
    if origin is list:
        return [(m, "[]" + s) for m, s in sections_in(args[0])]
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        return [found for arg in args for found in sections_in(arg)]
    return []


def test_every_config_key_is_in_the_config_reference() -> None:
    page = load_docs_module("reference_config").render_config_reference()
    documented = set(re.findall(r"^\| `([^`]+)` \|", page, re.M))
    paths = model_paths(Settings)
    assert len(paths) > 150  # the walk above reached the nested sections
    missing = [p for p in paths if p not in documented and p not in Settings.model_fields]
    assert missing == [], f"config keys missing from the generated reference: {missing}"
    for section in Settings.model_fields:
        assert f"## `{section}`" in page, f"no section for {section!r}"


def command_lines(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
    lines = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                lines.append(f"{prefix} {name}")
                lines += command_lines(sub, f"{prefix} {name}")
    return lines


def test_every_cli_command_and_console_option_is_in_the_cli_reference() -> None:
    from console.app import build_parser as console_parser
    from engine.cli import build_parser as engine_parser

    page = load_docs_module("reference_cli").render_cli_reference()
    commands = command_lines(engine_parser(), "ava-engine")
    assert "ava-engine mcp login" in commands  # nested groups were walked
    missing = [c for c in commands if f"### `{c}`" not in page]
    assert missing == [], f"commands missing from the generated CLI reference: {missing}"
    options = [o for a in console_parser()._actions for o in a.option_strings]
    assert "--web" in options
    section = page.split("## `ava-console`", 1)[-1]
    assert [o for o in options if o not in section] == [], "ava-console options missing from the CLI reference"


def test_readme_is_a_landing_page_whose_docs_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 400, "README.md is the landing page; the manual lives in docs/"
    targets = re.findall(r"\]\((docs/[^)#\s]+)", readme)
    assert len(targets) >= 10, "README.md links into the docs pages"
    broken = sorted({t for t in targets if not (ROOT / t).exists()})
    assert broken == [], f"README.md links to missing files: {broken}"

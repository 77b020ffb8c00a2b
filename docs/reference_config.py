"""The config reference page, generated from the pydantic models (``engine.config.models.Settings``).

Written at every docs build by the MkDocs hook (docs/hooks.py), never committed, so it cannot drift from the code:
every key the loader accepts, with its type (and bounds), its default and its description. A description is the
field's ``description=``, else the ``#:`` comment above the field, else the docstring of the section it opens.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

PLACEHOLDER = "<name>"


@dataclass(frozen=True)
class KeyDoc:
    path: str  # engine.http.port, providers.<name>.type, contexts.<name>.tools[]
    type: str
    default: str
    description: str


def config_keys() -> list[KeyDoc]:
    """Every key of the config file, parents before their children, in the models' order."""
    from engine.config.models import Settings

    out: list[KeyDoc] = []
    _walk(Settings, "", out, ())
    return out


def _walk(model: type[BaseModel], prefix: str, out: list[KeyDoc], chain: tuple[type, ...]) -> None:
    comments = _field_comments(model)
    for name, field in model.model_fields.items():
        key = field.alias or name
        path = f"{prefix}.{key}" if prefix else key
        nested = [(sub, suffix) for sub, suffix in _models_in(field.annotation) if sub not in chain]
        description = field.description or comments.get(name, "")
        if not description and nested:
            description = _first_paragraph(nested[0][0].__doc__)
        out.append(KeyDoc(path, _type_text(field.annotation, field), _default_text(field), description))
        for sub, suffix in nested:
            _walk(sub, path + suffix, out, (*chain, model))


def _models_in(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    """The models a field's value holds, each with the key-path suffix that reaches it (``.<name>``, ``[]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, "")]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models_in(args[0])
    if origin in (dict, typing.Mapping) and len(args) == 2:
        return [(m, f".{PLACEHOLDER}{s}") for m, s in _models_in(args[1])]
    if origin in (list, tuple, set, frozenset) and args:
        return [(m, f"[]{s}") for m, s in _models_in(args[0])]
    if origin in (typing.Union, types.UnionType):
        return [found for arg in args for found in _models_in(arg)]
    return []


def _type_text(annotation: Any, field: FieldInfo | None = None) -> str:
    text = _name_of(annotation)
    bounds = [_bound_text(m) for m in (field.metadata if field is not None else [])]
    bounds = [b for b in bounds if b]
    return f"{text} ({', '.join(bounds)})" if bounds else text


def _name_of(annotation: Any) -> str:
    if annotation is type(None):
        return "null"
    if annotation is SecretStr:
        return "secret"
    if annotation is Any:
        return "any"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin is typing.Annotated:
        return _name_of(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_name_of(a) for a in args)
    if origin is not None:
        inner = ", ".join(_name_of(a) for a in args if a is not Ellipsis)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return "section"
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _bound_text(meta: Any) -> str:
    for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
        if isinstance(meta, getattr(annotated_types, attr.capitalize())):
            return f"{sign} {getattr(meta, attr)}"
    if isinstance(meta, annotated_types.MinLen):
        return f"at least {meta.min_length} long"
    if isinstance(meta, annotated_types.MaxLen):
        return f"at most {meta.max_length} long"
    return ""


def _default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(the keys below)"
    return _yaml_text(value)


def _yaml_text(value: Any) -> str:
    if isinstance(value, SecretStr):
        return "(a secret)"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, frozenset | set | tuple):
        value = sorted(value) if isinstance(value, frozenset | set) else list(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _field_comments(model: type[BaseModel]) -> dict[str, str]:
    """``#:`` comments written above a field in the model's source (and its bases'), by field name."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        pending: list[str] = []
        for line in source.splitlines():
            stripped = line.strip()
            if stripped.startswith("#:"):
                pending.append(stripped[2:].strip())
                continue
            m = re.match(r"(\w+)\s*:", stripped)
            if m and pending:
                found[m.group(1)] = " ".join(pending)
            pending = []
    return found


def _first_paragraph(doc: str | None) -> str:
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split()) if doc else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def render_config_reference() -> str:
    """The page: one table per top-level section, every key of that section in it."""
    from engine.config.models import Settings

    keys = config_keys()
    lines = [
        "# Configuration keys",
        "",
        "Every key the config file accepts, generated from the config models (`engine/config/models/`) when the",
        "docs are built. `<name>` stands for a name you choose (a provider, a server, a context). A key marked",
        "*required* must be written when its section is; every other key may be left out and takes its default.",
        "Unknown keys are errors. See [Configuration](../configuration.md) for the file's rules (`${VAR}`,",
        "`${keyring:NAME}`, saving, secrets).",
        "",
    ]
    for section, field in Settings.model_fields.items():
        rows = [k for k in keys if k.path == section or k.path.startswith((f"{section}.", f"{section}["))]
        lines += [f"## `{section}`", ""]
        intro = field.description or _first_paragraph(rows[0].description) if rows else ""
        if intro:
            lines += [intro, ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for k in rows[1:] if rows and rows[0].path == section else rows:
            lines.append(f"| `{k.path}` | {_cell(k.type)} | `{_cell(k.default)}` | {_cell(k.description)} |")
        lines.append("")
    return "\n".join(lines)

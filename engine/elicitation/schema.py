"""The forms an MCP server may ask for: a flat object of primitive properties, checked before anyone is asked.

Why it exists: an elicitation's ``requestedSchema`` comes from the server and is shown to an operator (a form) or
spoken to a caller (one question per field), so it is checked first. The MCP spec allows only a flat object whose
properties are strings (``format`` email, uri, date, date-time; min/max length), numbers or integers (min/max),
booleans, single-choice enums (``enum`` with optional ``enumNames``, or ``oneOf`` of ``const``/``title``) and
multi-select enums (an array whose ``items`` are such choices, min/max items). Anything else — a nested object,
another array, a ``$ref``, an unknown type or format — is a ``SchemaError`` naming the property, and the question
is declined. ``check_content`` checks an answer against the same fields (the operator's form and the caller's
parsed words both go through it before the server gets them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

Kind = Literal["string", "number", "integer", "boolean", "enum", "multi"]

#: The string formats a form can take and check.
FORMATS = ("email", "uri", "date", "date-time")
#: At most this many properties (a form beyond it is no question to put to a person mid-call).
MAX_FIELDS = 32
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$")
_KEYS = {
    "string": {
        "type",
        "title",
        "description",
        "minLength",
        "maxLength",
        "format",
        "default",
        "enum",
        "enumNames",
        "oneOf",
    },
    "number": {"type", "title", "description", "minimum", "maximum", "default"},
    "integer": {"type", "title", "description", "minimum", "maximum", "default"},
    "boolean": {"type", "title", "description", "default"},
    "array": {"type", "title", "description", "minItems", "maxItems", "items", "default"},
}


class SchemaError(ValueError):
    """A requested schema no form can show, or an answer that does not fit it."""


@dataclass(frozen=True, slots=True)
class FormField:
    """One property of a requested form."""

    name: str
    kind: Kind
    title: str
    description: str = ""
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    options: tuple[str, ...] = ()
    option_titles: tuple[str, ...] = ()
    default: Any = None

    @property
    def label(self) -> str:
        """What the field is called to a person: its title, else its description, else its name."""
        return self.title or self.description or self.name.replace("_", " ")


def form_fields(schema: Any) -> list[FormField]:
    """The fields of ``schema`` (a requested form), in its order; ``SchemaError`` naming what is wrong."""
    if not isinstance(schema, Mapping):
        raise SchemaError(f"the requested schema is {type(schema).__name__}, not an object schema")
    if schema.get("type") != "object":
        raise SchemaError(f"the requested schema has type {schema.get('type')!r}, not 'object'")
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        raise SchemaError("the requested schema's properties are not an object")
    if not props:
        raise SchemaError("the requested schema has no properties to ask for")
    if len(props) > MAX_FIELDS:
        raise SchemaError(f"the requested schema has {len(props)} properties (at most {MAX_FIELDS} can be asked)")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise SchemaError("the requested schema's 'required' is not a list of property names")
    for r in required:
        if r not in props:
            raise SchemaError(f"the requested schema requires {r!r}, which is not one of its properties")
    return [_field(str(name), spec, name in required) for name, spec in props.items()]


def _num(name: str, spec: Mapping[str, Any], key: str) -> float | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SchemaError(f"property {name!r}: {key} is {value!r}, not a number")
    return float(value)


def _field(name: str, spec: Any, required: bool) -> FormField:
    if not isinstance(spec, Mapping):
        raise SchemaError(f"property {name!r} is {type(spec).__name__}, not a schema")
    if "$ref" in spec:
        raise SchemaError(f"property {name!r} is a reference ($ref); only flat primitive properties can be asked")
    kind = spec.get("type")
    if kind == "object" or (kind == "array" and not _is_multi_select(spec.get("items"))):
        what = "an array (other than a multi-select of string choices)" if kind == "array" else "a nested object"
        raise SchemaError(
            f"property {name!r} is {what}; only flat primitive properties (string, number, integer, boolean, enum) "
            "can be asked"
        )
    if kind not in _KEYS:
        raise SchemaError(f"property {name!r} has type {kind!r}, not string, number, integer or boolean")
    unknown = sorted(set(spec) - _KEYS[kind])
    if unknown:
        raise SchemaError(f"property {name!r} ({kind}) has keys a form cannot honour: {', '.join(unknown)}")
    title = spec.get("title") if isinstance(spec.get("title"), str) else ""
    desc = spec.get("description") if isinstance(spec.get("description"), str) else ""
    base: dict[str, Any] = {"name": name, "title": title, "description": desc, "required": required}
    default = spec.get("default")
    if kind == "array":
        options, titles = _options(name, spec["items"])
        lo, hi = _num(name, spec, "minItems"), _num(name, spec, "maxItems")
        return FormField(
            kind="multi",
            options=options,
            option_titles=titles,
            min_length=int(lo) if lo else None,
            max_length=int(hi) if hi else None,
            default=default,
            **base,
        )
    if kind == "boolean":  # a default that does not fit is left out when answering (engine.elicitation.defaults)
        return FormField(kind="boolean", default=default, **base)
    if kind in ("number", "integer"):
        lo, hi = _num(name, spec, "minimum"), _num(name, spec, "maximum")
        if lo is not None and hi is not None and lo > hi:
            raise SchemaError(f"property {name!r}: minimum {lo:g} is above maximum {hi:g}")
        return FormField(kind=kind, minimum=lo, maximum=hi, default=default, **base)
    options, titles = _options(name, spec)
    if options:
        return FormField(kind="enum", options=options, option_titles=titles, default=default, **base)
    fmt = spec.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise SchemaError(f"property {name!r}: format {fmt!r} is not one of {', '.join(FORMATS)}")
    lo, hi = _num(name, spec, "minLength"), _num(name, spec, "maxLength")
    return FormField(
        kind="string",
        format=fmt,
        min_length=int(lo) if lo is not None else None,
        max_length=int(hi) if hi is not None else None,
        default=default,
        **base,
    )


def _is_multi_select(items: Any) -> bool:
    """``items`` of a multi-select: string choices (``enum``, or ``anyOf`` of ``const``/``title``)."""
    if not isinstance(items, Mapping):
        return False
    return "enum" in items or "anyOf" in items or "oneOf" in items


def _options(name: str, spec: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if "enum" in spec:
        values = spec["enum"]
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            raise SchemaError(f"property {name!r}: enum must be a non-empty list of strings")
        names = spec.get("enumNames")
        if names is not None and (not isinstance(names, list) or len(names) != len(values)):
            raise SchemaError(f"property {name!r}: enumNames must name each of the {len(values)} enum values")
        return tuple(values), tuple(str(n) for n in names) if names else tuple(values)
    if "oneOf" in spec or "anyOf" in spec:
        items = spec.get("oneOf", spec.get("anyOf"))
        if not isinstance(items, list) or not items:
            raise SchemaError(f"property {name!r}: oneOf must be a non-empty list of {{const, title}}")
        values, titles = [], []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or not isinstance(item.get("const"), str):
                raise SchemaError(f"property {name!r}: oneOf[{i}] is not a {{const, title}} choice")
            values.append(item["const"])
            titles.append(str(item.get("title") or item["const"]))
        return tuple(values), tuple(titles)
    return (), ()


def check_value(f: FormField, value: Any) -> Any:
    """``value`` as the field takes it (an integral float becomes an int for integer fields); ``SchemaError``."""
    return _VALUE_CHECKS.get(f.kind, _check_text)(f, value)


def _check_boolean(f: FormField, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(f"{f.label!r} must be yes or no")
    return value


def _check_number(f: FormField, value: Any) -> int | float:
    where = f"{f.label!r}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SchemaError(f"{where} must be a number")
    if f.kind == "integer":
        if value != int(value):
            raise SchemaError(f"{where} must be a whole number")
        value = int(value)
    if f.minimum is not None and value < f.minimum:
        raise SchemaError(f"{where} must be at least {f.minimum:g}")
    if f.maximum is not None and value > f.maximum:
        raise SchemaError(f"{where} must be at most {f.maximum:g}")
    return value


def _check_multi(f: FormField, value: Any) -> list[str]:
    where = f"{f.label!r}"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaError(f"{where} must be a list of choices")
    wrong = [v for v in value if v not in f.options]
    if wrong:
        raise SchemaError(f"{where}: {wrong[0]!r} is not one of {', '.join(f.option_titles)}")
    if f.min_length is not None and len(value) < f.min_length:
        raise SchemaError(f"{where} needs at least {f.min_length} choice(s)")
    if f.max_length is not None and len(value) > f.max_length:
        raise SchemaError(f"{where} takes at most {f.max_length} choice(s)")
    return list(dict.fromkeys(value))


def _check_text(f: FormField, value: Any) -> str:
    """A string field: one of the options for an enum, else within its lengths and of its format."""
    where = f"{f.label!r}"
    if not isinstance(value, str):
        raise SchemaError(f"{where} must be text")
    if f.kind == "enum":
        if value not in f.options:
            raise SchemaError(f"{where} must be one of {', '.join(f.option_titles)}")
        return value
    if f.min_length is not None and len(value) < f.min_length:
        raise SchemaError(f"{where} must be at least {f.min_length} characters")
    if f.max_length is not None and len(value) > f.max_length:
        raise SchemaError(f"{where} must be at most {f.max_length} characters")
    _check_format(f, value)
    return value


#: How each field kind checks a value; any other kind (string, enum) is text.
_VALUE_CHECKS: dict[str, Callable[[FormField, Any], Any]] = {
    "boolean": _check_boolean,
    "number": _check_number,
    "integer": _check_number,
    "multi": _check_multi,
}


def _check_format(f: FormField, value: str) -> None:
    ok = True
    if f.format == "email":
        ok = bool(_EMAIL.match(value))
    elif f.format == "uri":
        ok = bool(_URI.match(value))
    elif f.format == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            ok = False
    elif f.format == "date-time":
        try:
            datetime.fromisoformat(value)
        except ValueError:
            ok = False
    if not ok:
        raise SchemaError(f"{f.label!r} must be a valid {f.format} (got {value[:60]!r})")


def check_content(fields: list[FormField], content: Mapping[str, Any]) -> dict[str, Any]:
    """An answer to the whole form: every required field present, every value fitting; ``SchemaError``."""
    names = {f.name for f in fields}
    extra = sorted(set(content) - names)
    if extra:
        raise SchemaError(f"the form has no field {extra[0]!r}")
    out: dict[str, Any] = {}
    for f in fields:
        if f.name not in content or content[f.name] is None or content[f.name] == "":
            if f.required:
                raise SchemaError(f"{f.label!r} is required")
            continue
        out[f.name] = check_value(f, content[f.name])
    return out

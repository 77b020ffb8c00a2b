"""Minimal valid probe arguments from JSON schemas: every generated set validates; impossible ones say where."""

from __future__ import annotations

from typing import Any

import pytest

from engine.budget.probe_args import ProbeArgsError, minimal_args
from engine.tools.validation import validator_for


def obj(props: dict[str, Any], required: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props) if required is None else required, **kw}


SCHEMAS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("empty", {"type": "object", "properties": {}}, {}),
    ("optional only", obj({"q": {"type": "string"}}, required=[]), {}),
    ("enum first", obj({"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}), {"unit": "celsius"}),
    ("const", obj({"v": {"const": 3}}), {"v": 3}),
    ("default", obj({"n": {"type": "integer", "default": 7, "minimum": 1}}), {"n": 7}),
    ("integer bounds", obj({"sides": {"type": "integer", "minimum": 2, "maximum": 100}}), {"sides": 2}),
    ("negative range", obj({"t": {"type": "integer", "minimum": -50, "maximum": -10}}), {"t": -10}),
    ("exclusive", obj({"x": {"type": "integer", "exclusiveMinimum": 0}}), {"x": 1}),
    ("multipleOf", obj({"x": {"type": "integer", "minimum": 1, "multipleOf": 5}}), {"x": 5}),
    ("number exclusive", obj({"p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}), {"p": 0.5}),
    ("email", obj({"to": {"type": "string", "format": "email"}}), {"to": "probe@example.com"}),
    ("uri", obj({"u": {"type": "string", "format": "uri"}}), {"u": "https://example.com/"}),
    ("date", obj({"d": {"type": "string", "format": "date"}}), {"d": "2024-01-01"}),
    ("min length", obj({"s": {"type": "string", "minLength": 6}}), {"s": "testxx"}),
    ("max length", obj({"s": {"type": "string", "maxLength": 2}}), {"s": "te"}),
    ("icao pattern", obj({"icao": {"type": "string", "pattern": "^[A-Z]{4}$"}}), {"icao": "AAAA"}),
    ("dice pattern", obj({"n": {"type": "string", "pattern": r"^\d+d\d+$"}}), {"n": "0d0"}),
    ("alternation", obj({"c": {"type": "string", "pattern": "^(red|green)-[0-9]{2}$"}}), {"c": "red-00"}),
    ("negated class", obj({"c": {"type": "string", "pattern": "^[^a-z]+$"}}), {"c": "0"}),
    ("boolean", obj({"b": {"type": "boolean"}}), {"b": False}),
    ("nullable union", obj({"n": {"type": ["null", "integer"], "minimum": 3}}), {"n": 3}),
    (
        "array min items",
        obj({"a": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2}}),
        {"a": [1, 1]},
    ),
    ("nested object", obj({"o": obj({"k": {"type": "string", "enum": ["x"]}})}), {"o": {"k": "x"}}),
    (
        "ref",
        {
            **obj({"loc": {"$ref": "#/$defs/Loc"}}),
            "$defs": {"Loc": obj({"lat": {"type": "number", "minimum": -90, "maximum": 90}})},
        },
        {"loc": {"lat": 0.0}},
    ),
    (
        "anyOf prefers non-null",
        obj({"v": {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 1}]}}),
        {"v": "test"},
    ),
    ("allOf", obj({"v": {"allOf": [{"type": "integer"}, {"minimum": 4}]}}), {"v": 4}),
]


@pytest.mark.parametrize(("schema", "expected"), [c[1:] for c in SCHEMAS], ids=[c[0] for c in SCHEMAS])
def test_minimal_args_are_valid(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    args = minimal_args(schema)
    assert args == expected
    assert validator_for(schema).problems(args) == []


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (obj({"n": {"type": "integer", "minimum": 5, "maximum": 3}}), "arguments.n: no number fits"),
        (obj({"e": {"enum": []}}), "arguments.e: enum is empty"),
        (obj({"s": {"type": "string", "pattern": r"^(a)\1$"}}), "arguments.s: pattern"),
        (obj({"r": {"$ref": "https://example.com/schema"}}), "external $ref"),
        (obj({"r": {"$ref": "#/$defs/Missing"}}), "does not resolve"),
        (obj({"x": False}), "arguments.x: the schema accepts no value"),
        (
            {"type": "object", "properties": {}, "required": ["ghost"], "additionalProperties": False},
            "arguments.ghost: required but not declared",
        ),
        ({**obj({"r": {"$ref": "#/$defs/R"}}), "$defs": {"R": obj({"r": {"$ref": "#/$defs/R"}})}}, "deeper than"),
        (obj({"m": {"type": "string", "format": "email", "maxLength": 3}}), "cannot fit in maxLength"),
    ],
)
def test_impossible_schemas_name_the_path(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(ProbeArgsError, match=message.replace("$", r"\$").replace("(", r"\(")):
        minimal_args(schema)

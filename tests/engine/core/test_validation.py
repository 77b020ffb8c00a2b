"""Argument validation: every kind, every violation named, formats anchored on the whole value."""

from __future__ import annotations

import pytest

from engine.tools.base import ToolDefinition, ToolParameter
from engine.tools.validation import ArgumentError, ArgumentValidator, parse_arguments

SCHEMA = ToolDefinition(
    "t",
    "d",
    parameters=(
        ToolParameter("name", "string", required=True, pattern=r"^[A-Z][a-z]+$", max_length=10),
        ToolParameter("count", "integer", minimum=1, maximum=5),
        ToolParameter("ratio", "number", minimum=0, maximum=1),
        ToolParameter("loud", "boolean"),
        ToolParameter("tags", "array", items=ToolParameter("tag", "string", enum=("a", "b")), max_length=2),
        ToolParameter("where", "object", properties=(ToolParameter("city", "string", required=True),)),
        ToolParameter("mail", "string", format="email"),
        ToolParameter("site", "string", format="url"),
        ToolParameter("tel", "string", format="phone"),
        ToolParameter("size", "integer", enum=(1, 2, 3)),
    ),
).schema()

V = ArgumentValidator(SCHEMA)


def test_valid_arguments_pass() -> None:
    args = {
        "name": "Ada",
        "count": 3,
        "ratio": 0.5,
        "loud": True,
        "tags": ["a"],
        "where": {"city": "Bern"},
        "mail": "a@b.ch",
        "site": "https://x.org/p?q=1",
        "tel": "+41 44 123 45 67",
        "size": 2,
    }
    assert V.problems(args) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "name: is required"),
        ({"name": 5}, "name: expected string, got integer"),
        ({"name": "ada"}, "name: does not match pattern"),
        ({"name": "Ada\n"}, "name: does not match pattern"),
        ({"name": "Abcdefghijkl"}, "name: must have at most 10 characters"),
        ({"name": "Ada", "count": 2.5}, "count: expected integer, got number"),
        ({"name": "Ada", "count": True}, "count: expected integer, got boolean"),
        ({"name": "Ada", "count": 9}, "count: must be <= 5"),
        ({"name": "Ada", "count": 0}, "count: must be >= 1"),
        ({"name": "Ada", "ratio": "0.5"}, "ratio: expected number, got string"),
        ({"name": "Ada", "loud": "yes"}, "loud: expected boolean, got string"),
        ({"name": "Ada", "tags": ["c"]}, "tags[0]: must be one of"),
        ({"name": "Ada", "tags": ["a", "b", "a"]}, "tags: must have at most 2 items"),
        ({"name": "Ada", "tags": "a"}, "tags: expected array, got string"),
        ({"name": "Ada", "where": {}}, "where.city: is required"),
        ({"name": "Ada", "mail": "nobody"}, "mail: is not a valid email"),
        ({"name": "Ada", "mail": "a@b.ch\nBcc: x@y.z"}, "mail: is not a valid email"),
        # a URI, but no web address: a url parameter's pattern refuses it
        ({"name": "Ada", "site": "javascript:alert(1)"}, "site: does not match pattern ^https?://"),
        ({"name": "Ada", "site": "https://ok.org\nevil"}, "site: is not a valid uri"),
        ({"name": "Ada", "tel": "call me"}, "tel: is not a valid phone"),
        ({"name": "Ada", "tel": "+41441234567\n"}, "tel: is not a valid phone"),
        ({"name": "Ada", "size": 4}, "size: must be one of [1, 2, 3]"),
        ({"name": "Ada", "size": "1"}, "size: expected integer, got string"),
        ({"name": "Ada", "extra": 1}, "extra: is not an argument of this tool"),
    ],
)
def test_each_violation_is_named(args: dict, expected: str) -> None:
    problems = V.problems(args)
    assert any(expected in p for p in problems), problems


def test_all_violations_reported_together() -> None:
    problems = V.problems({"count": 9, "loud": "x", "bogus": 1})
    assert len(problems) == 4


def test_optional_null_means_absent() -> None:
    assert V.problems({"name": "Ada", "count": None}) == []


def test_rich_schema_falls_back_to_jsonschema() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"anyOf": [{"type": "integer"}, {"type": "string", "format": "email"}]}},
        "required": ["v"],
    }
    v = ArgumentValidator(schema)
    assert v.problems({"v": 3}) == []
    assert v.problems({"v": "a@b.ch"}) == []
    assert v.problems({"v": 1.5}) != []
    assert any("v" in p for p in v.problems({"v": [1]}))


def test_parse_arguments() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments(None) == {} and parse_arguments("") == {}
    with pytest.raises(ArgumentError, match="not valid JSON"):
        parse_arguments('{"a": ')
    with pytest.raises(ArgumentError, match="must be a JSON object"):
        parse_arguments("[1]")

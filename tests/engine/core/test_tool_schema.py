"""ToolParameter → JSON Schema: optional stays optional, integer stays integer, defaults and enums kept."""

from __future__ import annotations

from engine.tools.base import ToolDefinition, ToolParameter


def schema_of(*params: ToolParameter) -> dict:
    return ToolDefinition("t", "d", parameters=params).schema()


def test_every_kind_renders() -> None:
    s = schema_of(
        ToolParameter("name", "string", "who", required=True, min_length=1, max_length=20, pattern="^[A-Z]"),
        ToolParameter("count", "integer", default=2, minimum=1, maximum=10),
        ToolParameter("ratio", "number", minimum=0, maximum=1),
        ToolParameter("loud", "boolean", default=False),
        ToolParameter("tags", "array", items=ToolParameter("tag", "string", enum=("a", "b")), max_length=3),
        ToolParameter("where", "object", properties=(ToolParameter("city", "string", required=True),)),
        ToolParameter("mail", "string", format="email"),
        ToolParameter("site", "string", format="url"),
        ToolParameter("tel", "string", format="phone"),
        ToolParameter("size", "integer", enum=(1, 2, 3)),
    )
    props = s["properties"]
    assert s["type"] == "object" and s["required"] == ["name"]
    assert props["count"] == {"type": "integer", "default": 2, "minimum": 1, "maximum": 10}
    assert props["ratio"]["type"] == "number"
    assert props["loud"] == {"type": "boolean", "default": False}
    assert props["tags"]["items"] == {"type": "string", "enum": ["a", "b"]} and props["tags"]["maxItems"] == 3
    assert props["where"]["required"] == ["city"]
    assert props["mail"]["format"] == "email" and props["site"]["format"] == "uri"
    assert props["tel"]["format"] == "phone"
    assert props["size"]["enum"] == [1, 2, 3]
    assert props["name"] == {
        "type": "string",
        "description": "who",
        "pattern": "^[A-Z]",
        "minLength": 1,
        "maxLength": 20,
    }


def test_false_default_is_kept() -> None:
    s = schema_of(ToolParameter("loud", "boolean", default=False))
    assert s["properties"]["loud"]["default"] is False


def test_raw_schema_wins() -> None:
    raw = {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {"type": "integer"}}}
    d = ToolDefinition("t", "d", input_schema=raw)
    assert d.schema() == raw
    assert d.declaration() == {"name": "t", "description": "d", "input_schema": raw}

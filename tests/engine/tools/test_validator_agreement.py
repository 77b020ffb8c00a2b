"""One set of argument rules: the compiled fast path and the JSON Schema reference agree on every instance.

Hypothesis generates schemas from the subset the fast path compiles (every keyword it knows, bool schemas, nested
objects and arrays) and instances aimed at them (enum members, nulls for optional keys, near-miss numbers and
lengths, strings for the patterns and formats). For each pair: the fast validator, the same schema forced through
the reference path, and ``Reference`` itself on the normalized instance all say valid, or all say invalid.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.tools.quick_schema import quick_accept
from engine.tools.validation import FORMAT_CHECKER, ArgumentError, ArgumentValidator, Reference

KEYS = ["a", "b", "c", "d"]
TYPES = ["string", "integer", "number", "boolean", "array", "object", "null"]
PATTERNS = ["^[a-z]+$", "ab", "^[0-9]{2,3}$", "x$", "^$", "[A-Z]"]
FORMATS = ["email", "uri", "url", "phone", "date", "ipv4", "uuid", "no-such-format"]
FORMAT_SAMPLES = [
    "a@b.ch",
    "nobody",
    "https://x.org/p",
    "javascript:alert(1)",
    "+41 44 123 45 67",
    "2025-06-18",
    "2025-13-40",
    "10.0.0.1",
    "999.1.1.1",
    "12345678-1234-5678-1234-567812345678",
    "x\n",
    "ab",
    "abc",
    "12",
    "AB",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 1.5]),
    st.text(alphabet="abxAB0\n", max_size=4),
    st.sampled_from(FORMAT_SAMPLES),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=5,
)
small_values = st.one_of(scalars, st.lists(scalars, max_size=2))
numbers = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2.0]))
counts = st.integers(0, 4)


def keywords(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(
                st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)
            ),
            "enum": st.lists(small_values, min_size=1, max_size=3),
            "const": small_values,
            "pattern": st.sampled_from(PATTERNS),
            "format": st.sampled_from(FORMATS),
            "minimum": numbers,
            "maximum": numbers,
            "exclusiveMinimum": numbers,
            "exclusiveMaximum": numbers,
            "minLength": counts,
            "maxLength": counts,
            "minItems": counts,
            "maxItems": counts,
            "uniqueItems": st.booleans(),
            "items": children,
            "properties": st.dictionaries(st.sampled_from(KEYS), children, max_size=3),
            "required": st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
            "additionalProperties": st.booleans(),
            "description": st.just("d"),
        },
    )


leaf_schemas = st.one_of(
    st.booleans(), keywords(st.booleans()).filter(lambda s: "items" not in s and "properties" not in s)
)
sub_schemas = st.recursive(leaf_schemas, lambda inner: st.one_of(st.booleans(), keywords(inner)), max_leaves=4)
root_schemas = st.builds(
    lambda props, req, closed: {
        "type": "object",
        "properties": props,
        "required": req,
        **({"additionalProperties": False} if closed else {}),
    },
    st.dictionaries(st.sampled_from(KEYS), sub_schemas, max_size=4),
    st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
    st.booleans(),
)


def aimed(schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances likely to sit on the schema's boundaries (valid ones, and ones that miss by a little)."""
    options: list[st.SearchStrategy[Any]] = [json_values]
    if not isinstance(schema, dict) or depth > 4:
        return st.one_of(options)
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        options.append(st.just(schema["const"]))
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema:
            b = schema[key]
            options.append(st.sampled_from([b, b - 1, b + 1, float(b), b + 0.5, int(b)]))
    for key in ("minLength", "maxLength"):
        if key in schema:
            n = schema[key]
            options.append(st.sampled_from(["x" * max(0, n - 1), "x" * n, "x" * (n + 1)]))
    if "pattern" in schema or "format" in schema:
        options.append(st.sampled_from(FORMAT_SAMPLES))
    item = aimed(schema.get("items", True), depth + 1)
    options.append(st.lists(item, max_size=5))
    options.append(st.lists(st.sampled_from([1, 1.0, True, "1", None, [1], [True]]), max_size=4))
    props = schema.get("properties") or {}
    if props:
        options.append(
            st.fixed_dictionaries(
                {},
                optional={
                    **{k: st.one_of(st.none(), aimed(s, depth + 1)) for k, s in props.items()},
                    "zz": json_values,
                },
            )
        )
    return st.one_of(options)


@st.composite
def schema_and_instance(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = draw(root_schemas)
    instance = draw(
        aimed(schema).filter(lambda x: isinstance(x, dict))
        | st.dictionaries(st.sampled_from([*KEYS, "zz"]), json_values, max_size=4)
    )
    return schema, instance


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(schema_and_instance())
def test_fast_path_agrees_with_the_reference(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    schema, instance = case
    fast = ArgumentValidator(schema)
    assert fast.fast, schema
    # The same rules forced through the reference path (a no-op keyword outside the fast subset).
    slow = ArgumentValidator({**schema, "dependentRequired": {}})
    assert not slow.fast
    normalized = fast.normalize(instance)
    assert slow.normalize(instance) == normalized
    reference_valid = Reference(schema, format_checker=FORMAT_CHECKER).is_valid(normalized)
    fast_problems = fast.problems(instance)
    slow_problems = slow.problems(instance)
    assert (not fast_problems) == reference_valid, (fast_problems, normalized)
    assert (not slow_problems) == reference_valid, (slow_problems, normalized)
    # What a call gets: the normalized arguments (``check`` skips normalizing what its compiled check passes as is).
    if reference_valid:
        assert fast.check(instance) == normalized == slow.check(instance)
    else:
        with pytest.raises(ArgumentError):
            fast.check(instance)


def test_optional_null_does_not_depend_on_anyof_elsewhere() -> None:
    """The finding: ``{"a": null}`` passed when every property was simple and failed once another used anyOf."""
    plain = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
    rich = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
    }
    assert ArgumentValidator(plain).fast and not ArgumentValidator(rich).fast
    for schema in (plain, rich):
        v = ArgumentValidator(schema)
        assert v.problems({"a": None}) == []
        assert v.check({"a": None, "b": "x"}) == {"b": "x"}  # the tool never sees the null
    # A required argument, or one whose type allows null, keeps its null and is checked as sent.
    required = {**plain, "required": ["a"]}
    assert ArgumentValidator(required).problems({"a": None}) == ["a: expected integer, got null"]
    nullable = {"type": "object", "properties": {"a": {"type": ["integer", "null"]}}}
    assert ArgumentValidator(nullable).check({"a": None}) == {"a": None}


def test_nested_optional_null_and_ref_schemas() -> None:
    schema = {
        "type": "object",
        "$defs": {"n": {"type": "integer"}},
        "properties": {
            "where": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"$ref": "#/$defs/n"}}},
            "rows": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        },
    }
    v = ArgumentValidator(schema)
    assert not v.fast
    args = {"where": {"city": None, "zip": None}, "rows": [{"x": None}, {"x": 1}]}
    assert v.check(args) == {"where": {}, "rows": [{}, {"x": 1}]}
    assert args["where"] == {"city": None, "zip": None}  # the caller's object is not modified


def test_fast_path_rules_that_used_to_differ() -> None:
    """Each of these once gave a different answer on the fast path than on the reference."""
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"type": "array", "uniqueItems": True}, [1, 1.0]),  # uniqueItems was ignored
        ({"const": True}, 1),  # true == 1 in Python, not in JSON Schema
        ({"enum": [[1]]}, [True]),
        ({"minLength": 3}, [1]),  # minLength applied to arrays
        ({"maxItems": 1}, "ab"),  # maxItems applied to strings
        ({"items": False}, [1]),  # a false schema was ignored
        ({"format": "ipv4"}, "999.1.1.1"),  # library formats were ignored
    ]
    for sub, value in cases:
        schema = {"type": "object", "properties": {"v": sub}}
        expected = Reference(schema, format_checker=FORMAT_CHECKER).is_valid({"v": value})
        assert (ArgumentValidator(schema).problems({"v": value}) == []) == expected, sub


# Schemas of plain arguments, the kind engine.tools.quick_schema writes one function for (and a few it declines).
plain_leaves = st.one_of(
    st.booleans(),
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "minLength": counts,
            "maxLength": counts,
            "enum": st.lists(st.text(alphabet="abx", max_size=2), min_size=1, max_size=3),
            "description": st.just("d"),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={"minimum": numbers, "maximum": numbers, "exclusiveMinimum": numbers, "exclusiveMaximum": numbers},
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["boolean", "null"])}),
    keywords(st.booleans()).filter(lambda s: "items" not in s and "properties" not in s),  # mostly declined
)
plain_roots = st.builds(
    lambda props, req, closed: {
        "type": "object",
        "properties": props,
        "required": req,
        **({"additionalProperties": closed} if closed is not None else {}),
    },
    st.dictionaries(st.sampled_from(KEYS), plain_leaves, max_size=3),
    st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
    st.one_of(st.none(), st.booleans()),
)


# Values each plain argument is tried with: every JSON type, numbers and lengths on and around common bounds.
tricky: st.SearchStrategy[Any] = st.sampled_from(
    [True, False, None, 0, 1, 2, 3, -1, -3, 2.0, 0.5, -1.5, "", "x", "xx", "xxx", "a", "b", [], {}]
)


def fitting(schema: Any) -> st.SearchStrategy[Any]:
    """Values a plain leaf accepts, mostly (bounds that exclude each other leave none: then anything tricky)."""
    if not isinstance(schema, dict) or "type" not in schema or ("enum" in schema and schema.get("type") != "string"):
        return tricky
    t = schema["type"]
    if not isinstance(t, str):
        return tricky
    if t == "string":
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        lo, hi = schema.get("minLength", 0), schema.get("maxLength", 5)
        return st.text(alphabet="abx", min_size=lo, max_size=max(lo, hi)) if lo <= hi else tricky
    if t in ("integer", "number"):
        lo = max(schema.get("minimum", -4), schema.get("exclusiveMinimum", -5) + 1)
        hi = min(schema.get("maximum", 4), schema.get("exclusiveMaximum", 5) - 1)
        on_bounds = st.sampled_from(
            [schema.get(k, 0) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")]
        )
        first, last = math.ceil(lo), math.floor(hi)
        if lo > hi or (first > last and t == "integer"):
            return st.one_of(tricky, on_bounds)
        floats = st.floats(lo, hi, allow_nan=False)
        if first > last:
            return st.one_of(floats, on_bounds)
        ints = st.integers(first, last)
        return st.one_of(ints, on_bounds) if t == "integer" else st.one_of(ints, floats, on_bounds)
    return {"boolean": st.booleans(), "null": st.none()}.get(t, tricky)


def edges(schema: Any) -> st.SearchStrategy[Any]:
    """Values on and just past a plain leaf's bounds."""
    if not isinstance(schema, dict):
        return tricky
    near: list[Any] = []
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema:
            b = schema[key]
            near += [b, b - 1, b + 1, b - 0.5, b + 0.5, float(b)]
    for key in ("minLength", "maxLength"):
        if key in schema:
            n = schema[key]
            near += ["x" * max(0, n - 1), "x" * n, "x" * (n + 1)]
    if "enum" in schema:
        near += ["zz", *schema["enum"]]
    return st.sampled_from(near) if near else tricky


@st.composite
def plain_schema_and_instance(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A plain schema and valid arguments for it, then maybe one argument spoilt (a value of another type, or one
    on or past a bound), one required left out or one stranger added: so a check the quick acceptance forgot shows
    as an instance it accepts and the reference refuses."""
    schema = draw(plain_roots)
    props = schema["properties"]
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=4))
    instance = {k: draw(fitting(props.get(k, True))) for k in sorted({*keys, *schema["required"]})}
    assume(Reference(schema, format_checker=FORMAT_CHECKER).is_valid(instance))
    spoil = draw(st.sampled_from(["none", "value", "value", "missing", "stranger"]))
    if spoil == "value" and instance:
        key = draw(st.sampled_from(sorted(instance)))
        instance[key] = draw(st.one_of(tricky, edges(props.get(key, True))))
    elif spoil == "missing" and instance:
        del instance[draw(st.sampled_from(sorted(instance)))]
    elif spoil == "stranger":
        instance["zz"] = draw(tricky)
    return schema, instance


@settings(
    max_examples=800,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(plain_schema_and_instance())
def test_the_quick_acceptance_only_ever_accepts_what_the_reference_does(case: tuple[Any, dict[str, Any]]) -> None:
    schema, instance = case
    accept = quick_accept(schema)
    if accept is None or not accept(instance):
        return
    assert Reference(schema, format_checker=FORMAT_CHECKER).is_valid(instance), (schema, instance)
    v = ArgumentValidator(schema)
    assert v.normalize(instance) == instance and v.problems(instance) == []


@st.composite
def leaf_and_value(draw: st.DrawFn) -> tuple[Any, Any]:
    leaf = draw(plain_leaves)
    return leaf, draw(st.one_of(edges(leaf), tricky, fitting(leaf)))


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(leaf_and_value(), st.booleans())
def test_each_plain_argument_is_accepted_only_when_the_reference_accepts_it(
    case: tuple[Any, Any], required: bool
) -> None:
    leaf, value = case
    schema = {"type": "object", "properties": {"a": leaf}, "required": ["a"] if required else []}
    accept = quick_accept(schema)
    assert accept is not None
    if accept({"a": value}):
        assert Reference(schema, format_checker=FORMAT_CHECKER).is_valid({"a": value}), (leaf, value)


def test_the_quick_acceptance_takes_plain_arguments_and_leaves_every_doubt_to_the_full_check() -> None:
    schema = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "maxLength": 5, "description": "what to say"},
            "times": {"type": "integer", "minimum": 1, "maximum": 3},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "loud": {"type": "boolean"},
            "ratio": {"type": "number", "exclusiveMaximum": 1},
            "odd": {"type": "string", "pattern": "^a"},  # not a plain leaf: its presence defers
        },
        "required": ["text"],
        "additionalProperties": False,
    }
    accept = quick_accept(schema)
    assert accept is not None

    class Text(str):
        pass

    accepted: list[dict[str, Any]] = [
        {"text": "hi"},
        {"text": "hello", "times": 3, "unit": "f", "loud": False, "ratio": 0.5},
        {"text": "", "ratio": -2},
    ]
    declined: list[dict[str, Any]] = [
        {},  # required missing
        {"text": "hi", "zz": 1},  # not an argument of the tool
        {"text": 5},
        {"text": "toolong"},
        {"text": "hi", "times": True},  # a bool is no integer
        {"text": "hi", "times": 2.0},  # an integer to JSON Schema: the full check says so
        {"text": "hi", "times": 4},
        {"text": "hi", "unit": "k"},
        {"text": "hi", "ratio": 1},
        {"text": "hi", "ratio": float("nan")},
        {"text": Text("hi")},  # a str subclass: the full check decides
        {"text": "hi", "odd": "abc"},
    ]
    assert [args for args in accepted if not accept(args)] == []
    assert [args for args in declined if accept(args)] == []
    v = ArgumentValidator(schema)
    assert v.check({"text": "hi", "times": 2.0}) == {"text": "hi", "times": 2.0}  # deferred, then accepted
    assert v.check({"text": "hi", "odd": "abc"}) == {"text": "hi", "odd": "abc"}
    assert quick_accept({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}) is not None
    assert quick_accept({"type": "object", "minProperties": 1}) is None
    assert quick_accept({"type": "array"}) is None

"""One generated function that accepts the commonest arguments at once: an object of plain scalar arguments.

Why it exists: nearly every tool call's arguments are valid, and nearly every tool takes an object of strings,
numbers and booleans with a few bounds. The compiled checks (``engine.tools.fast_schema``) take a Python call per
level and per argument to say so; for such a schema this module writes one function that walks the arguments
once with plain comparisons. It only ever answers "valid" when the compiled checks would find nothing: anything
it does not take exactly (a subclass of ``str``, the float 2.0 for an integer, a property whose schema is more
than a plain leaf) answers False, and the compiled checks run and name every violation. Tested against the JSON
Schema reference on generated schemas (tests/engine/tools/test_validator_agreement.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.tools.schema_rules import _ANNOTATIONS

Accept = Callable[[dict[str, Any]], bool]

_TOP_KEYS = frozenset({"type", "properties", "required", "additionalProperties"}) | _ANNOTATIONS
_LEAF_KEYS = frozenset({"type", "minLength", "maxLength", "enum"}) | _ANNOTATIONS
_BOUNDS = (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<"))
_NUMBER_KEYS = frozenset({"type", *(k for k, _ in _BOUNDS)}) | _ANNOTATIONS
#: The exact types each JSON type is taken as here (``bool`` is not an integer; a float never is one here).
_EXACT = {"string": "t is str", "integer": "t is int", "number": "t is int or t is float", "boolean": "t is bool"}


def quick_accept(schema: Mapping[str, Any] | bool) -> Accept | None:
    """The acceptance function for ``schema`` (one ``engine.tools.fast_schema`` compiles), or None when it is not an
    object schema of plain properties this module writes code for."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object" or not set(schema) <= _TOP_KEYS:
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True) is False
    if not isinstance(props, Mapping) or not isinstance(required, list):
        return None
    env: dict[str, Any] = {}
    lines = ["def accept(v):", "    for k, x in v.items():"]
    branch = "if"
    for i, (name, sub) in enumerate(props.items()):
        env[f"_k{i}"] = name
        lines.append(f"        {branch} k == _k{i}:")
        branch = "elif"
        lines.extend(f"            {line}" for line in _leaf_lines(sub, i, env))
    if props:
        lines.append("        else:")
        lines.append("            return False" if closed else "            pass")
    elif closed:
        lines.append("        return False")
    else:
        lines.append("        break")
    for i, name in enumerate(required):
        env[f"_r{i}"] = name
    lines.append("    return " + (" and ".join(f"_r{i} in v" for i in range(len(required))) or "True"))
    exec("\n".join(lines) + "\n", env)  # the source is built above from fixed text and names bound in env
    accept: Accept = env["accept"]
    return accept


def _leaf_lines(sub: Any, i: int, env: dict[str, Any]) -> list[str]:
    """The statements that check one argument ``x``: nothing left to say, or ``return False``."""
    if sub is True:
        return ["pass"]
    if not isinstance(sub, Mapping):
        return ["return False"]
    t = sub.get("type")
    if not isinstance(t, str):
        return ["return False"]
    if t == "null" and set(sub) <= _ANNOTATIONS | {"type"}:
        return ["if x is not None:", "    return False"]
    if t not in _EXACT:
        return ["return False"]
    out = ["t = type(x)", f"if not ({_EXACT[t]}):", "    return False"]
    if t == "string":
        return _string_lines(sub, i, env, out)
    if not set(sub) <= (_NUMBER_KEYS if t in ("integer", "number") else _ANNOTATIONS | {"type"}):
        return ["return False"]
    for j, (key, op) in enumerate(_BOUNDS):
        if key in sub:
            env[f"_b{i}_{j}"] = sub[key]
            out += [f"if not x {op} _b{i}_{j}:", "    return False"]  # NaN compares false: it goes back
    return out


def _string_lines(sub: Mapping[str, Any], i: int, env: dict[str, Any], out: list[str]) -> list[str]:
    """``out`` (the type check) with a string's enum and length checks, or ``return False`` for any other key."""
    if not set(sub) <= _LEAF_KEYS:
        return ["return False"]
    if "enum" in sub:
        enum = sub["enum"]
        if not isinstance(enum, list) or not all(type(e) is str for e in enum):
            return ["return False"]
        env[f"_e{i}"] = frozenset(enum)
        out += [f"if x not in _e{i}:", "    return False"]
    lo, hi = sub.get("minLength"), sub.get("maxLength")
    if lo is not None or hi is not None:
        out.append("n = len(x)")
    if lo is not None:
        env[f"_lo{i}"] = lo
        out += [f"if n < _lo{i}:", "    return False"]
    if hi is not None:
        env[f"_hi{i}"] = hi
        out += [f"if n > _hi{i}:", "    return False"]
    return out

"""Argument validation for tool calls: one set of rules, every violation named, formats anchored on the whole value.

The rules are JSON Schema Draft 2020-12 as implemented by ``jsonschema`` (the reference), with the project's two
choices applied to every schema alike: ``pattern`` follows ECMA-262 (``$`` only at the very end, as JSON Schema
specifies) and ``format`` uses one shared checker (``FORMAT_CHECKER``: the library's checks plus the stricter
email, uri/url and phone ones below).

Optional null means absent: a model often sends ``null`` for an optional argument it has no value for. Before
validation, ``normalize`` removes every such key whose schema does not allow null (through ``properties`` and
``items``, not inside ``anyOf``/``$ref``); the tool never sees it. This is the only place that rule lives.

Speed: schemas using only the common keywords (``_FAST_KEYWORDS``, with well-typed values) are compiled once
into small closures (a few microseconds per call); anything else is validated by the reference directly. The
fast path must agree with the reference on every instance (tests/engine/tools/test_validator_agreement.py).

Arguments are bounded (engine.tools.limits) before they are parsed or validated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from jsonschema.exceptions import SchemaError

from engine.tools.limits import DEFAULT_LIMITS, LimitExceeded, Limits, check_text, check_value, clip, text_needs_walk

Check = Callable[[Any, str, list[str]], None]

#: Problems listed in one rejection message (the rest are counted) and the longest one listed.
MAX_PROBLEMS_SHOWN = 10
MAX_PROBLEM_CHARS = 300

_ANNOTATIONS = frozenset({"description", "default", "title", "examples", "$schema", "$comment"})
_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})
_FAST_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
    }
    | _ANNOTATIONS
)

_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")
_PHONE = re.compile(r"\+?[0-9][0-9 ().\-]{4,22}[0-9]")


def _is_url(v: str) -> bool:
    if any(c.isspace() for c in v):
        return False
    parts = urlsplit(v)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


FORMATS: dict[str, Callable[[str], bool]] = {
    "email": lambda v: _EMAIL.fullmatch(v) is not None,
    "uri": _is_url,
    "url": _is_url,
    "phone": lambda v: _PHONE.fullmatch(v) is not None,
}


def _format_checker() -> FormatChecker:
    checker = FormatChecker()
    for name, fn in FORMATS.items():
        checker.checks(name)(lambda v, fn=fn: not isinstance(v, str) or fn(v))
    return checker


#: The one format checker both paths use.
FORMAT_CHECKER = _format_checker()


@lru_cache(maxsize=1024)
def js_pattern(p: str) -> re.Pattern[str]:
    """A JSON Schema ``pattern`` compiled with ECMA-262's ``$`` (end of input only, not before a final newline)."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", p))


def _ecma_pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        rx = js_pattern(patrn)
    except re.error:
        yield ValidationError(f"the schema's pattern {clip(patrn)!r} is not a valid regular expression")
        return
    if not rx.search(instance):
        yield ValidationError(f"does not match pattern {clip(patrn)}")


#: The reference: Draft 2020-12 with the project's pattern semantics.
Reference = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})


class ArgumentError(ValueError):
    """Arguments that do not fit the tool's schema; ``problems`` names every violation."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = [clip(p, MAX_PROBLEM_CHARS) for p in problems[:MAX_PROBLEMS_SHOWN]]
        if len(problems) > MAX_PROBLEMS_SHOWN:
            shown.append(f"and {len(problems) - MAX_PROBLEMS_SHOWN:,} more problems")
        super().__init__("; ".join(shown))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def parse_arguments(raw: str | Mapping[str, Any] | None, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Arguments arrive as a JSON string (OpenAI, Deepgram) or an object. Bounded first (``limits``), then
    parsed; anything out of bounds, malformed or not an object raises ``ArgumentError``."""
    if raw is None or raw == "":
        return {}
    try:
        if isinstance(raw, Mapping):
            check_value(raw, limits)
            return dict(raw)
        if not isinstance(raw, str):
            raise ArgumentError([f"arguments must be a JSON object, got {type(raw).__name__}"])
        check_text(raw, limits)
        value = _DECODER.decode(raw)
        if text_needs_walk(raw, limits):
            check_value(value, limits)
    except LimitExceeded as e:
        raise ArgumentError([str(e)]) from None
    except json.JSONDecodeError as e:
        raise ArgumentError([f"arguments are not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"]) from None
    except ValueError as e:  # NaN/Infinity, integers beyond Python's digit limit
        if isinstance(e, ArgumentError):
            raise
        raise ArgumentError([f"arguments are not valid JSON: {clip(str(e))}"]) from None
    except RecursionError:  # unreachable behind check_text; kept so no input can crash a call
        raise ArgumentError(["arguments are nested too deeply"]) from None
    if not isinstance(value, dict):
        raise ArgumentError([f"arguments must be a JSON object, got {_kind(value)}"])
    return value


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _canon(v: Any) -> Any:
    """A hashable key under which two JSON values are equal exactly when JSON Schema says so (1 == 1.0, 1 != true)."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int | float):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list | tuple):
        return ("l", tuple(_canon(x) for x in v))
    if isinstance(v, Mapping):
        return ("o", frozenset((k, _canon(x)) for k, x in v.items()))
    if v is None:
        return ("z",)
    return ("?", repr(v))


def _echo(v: Any) -> str:
    return clip(json.dumps(v, default=str, ensure_ascii=True), 60)


def _noop(v: Any, path: str, out: list[str]) -> None:
    return None


def _never(v: Any, path: str, out: list[str]) -> None:
    out.append(f"{path or 'arguments'}: is not allowed")
    raise _Stop


def _compile(schema: Mapping[str, Any] | bool) -> Check:
    if schema is True:
        return _noop
    if schema is False:
        return _never
    assert isinstance(schema, Mapping)
    checks: list[Check] = []
    t = schema.get("type")
    types = [t] if isinstance(t, str) else list(t) if isinstance(t, list) else []
    if types:
        fns = [_TYPE_CHECKS[x] for x in types]
        label = " or ".join(types)
        if len(fns) == 1:
            only = fns[0]

            def check_type(v: Any, path: str, out: list[str]) -> None:
                if not only(v):
                    out.append(f"{path or 'arguments'}: expected {label}, got {_kind(v)}")
                    raise _Stop

        else:

            def check_type(v: Any, path: str, out: list[str]) -> None:
                if not any(f(v) for f in fns):
                    out.append(f"{path or 'arguments'}: expected {label}, got {_kind(v)}")
                    raise _Stop

        checks.append(check_type)
    if "enum" in schema:
        allowed = list(schema["enum"])
        keys = {_canon(a) for a in allowed}

        def check_enum(v: Any, path: str, out: list[str]) -> None:
            if _canon(v) not in keys:
                out.append(f"{path}: must be one of {clip(json.dumps(allowed), 200)}, got {_echo(v)}")

        checks.append(check_enum)
    if "const" in schema:
        const = schema["const"]
        const_key = _canon(const)

        def check_const(v: Any, path: str, out: list[str]) -> None:
            if _canon(v) != const_key:
                out.append(f"{path}: must be {clip(json.dumps(const), 200)}")

        checks.append(check_const)
    if "pattern" in schema:
        rx = js_pattern(schema["pattern"])
        raw = clip(schema["pattern"])

        def check_pattern(v: Any, path: str, out: list[str]) -> None:
            if isinstance(v, str) and not rx.search(v):
                out.append(f"{path}: does not match pattern {raw}")

        checks.append(check_pattern)
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMAT_CHECKER.checkers:

        def check_format(v: Any, path: str, out: list[str]) -> None:
            if isinstance(v, str) and not FORMAT_CHECKER.conforms(v, fmt):
                out.append(f"{path}: is not a valid {fmt}")

        checks.append(check_format)
    for key, op, word in (
        ("minimum", lambda v, b: v >= b, ">="),
        ("maximum", lambda v, b: v <= b, "<="),
        ("exclusiveMinimum", lambda v, b: v > b, ">"),
        ("exclusiveMaximum", lambda v, b: v < b, "<"),
    ):
        if key in schema:
            checks.append(_bound(schema[key], op, word))
    for key, is_min, items in (
        ("minLength", True, False),
        ("maxLength", False, False),
        ("minItems", True, True),
        ("maxItems", False, True),
    ):
        if key in schema:
            checks.append(_length(int(schema[key]), is_min, items))
    if schema.get("uniqueItems") is True:

        def check_unique(v: Any, path: str, out: list[str]) -> None:
            if isinstance(v, list) and len({_canon(x) for x in v}) != len(v):
                out.append(f"{path}: items must be unique")

        checks.append(check_unique)
    if "items" in schema:
        item_check = _compile(schema["items"])

        def check_items(v: Any, path: str, out: list[str]) -> None:
            if isinstance(v, list):
                for i, x in enumerate(v):
                    _run(item_check, x, f"{path}[{i}]", out)

        checks.append(check_items)
    props = schema.get("properties")
    if props is not None or "required" in schema or schema.get("additionalProperties") is False:
        prop_checks = {k: _compile(s) for k, s in (props or {}).items()}
        required = list(schema.get("required", []))
        closed = schema.get("additionalProperties") is False

        def check_object(v: Any, path: str, out: list[str]) -> None:
            if not isinstance(v, dict):
                return
            for r in required:
                if r not in v:
                    out.append(f"{_join(path, r)}: is required")
            for k, x in v.items():
                pc = prop_checks.get(k)
                if pc is not None:  # a key of the schema: short, no need to clip it
                    _run(pc, x, f"{path}.{k}" if path else k, out)
                elif closed:
                    out.append(f"{_join(path, k)}: is not an argument of this tool")

        checks.append(check_object)

    if len(checks) == 1:
        return checks[0]

    def run_all(v: Any, path: str, out: list[str]) -> None:
        for c in checks:
            c(v, path, out)

    return run_all


class _Stop(Exception):
    """A type mismatch ends checks on that value (the other messages would be noise)."""


def _run(check: Check, v: Any, path: str, out: list[str]) -> None:
    try:
        check(v, path, out)
    except _Stop:
        pass


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _bound(b: float, op: Callable[[Any, Any], bool], word: str) -> Check:
    def check(v: Any, path: str, out: list[str]) -> None:
        if _num(v) and not op(v, b):
            out.append(f"{path}: must be {word} {b:g}")

    return check


def _length(n: int, is_min: bool, items: bool) -> Check:
    unit = "items" if items else "characters"
    kind = list if items else str

    def check(v: Any, path: str, out: list[str]) -> None:
        if isinstance(v, kind):
            if is_min and len(v) < n:
                out.append(f"{path}: must have at least {n} {unit}")
            elif not is_min and len(v) > n:
                out.append(f"{path}: must have at most {n} {unit}")

    return check


def _join(path: str, key: str) -> str:
    key = clip(key, 40)
    return key if not path else f"{path}.{key}"


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(v), type(v).__name__)


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _fast_value_ok(key: str, v: Any) -> bool:
    """Keyword values the fast path handles exactly as the reference does (anything odd goes to the reference)."""
    if key == "type":
        names = [v] if isinstance(v, str) else v if isinstance(v, list) else None
        return bool(names) and all(isinstance(n, str) and n in _TYPES for n in names)  # type: ignore[union-attr]
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _num(v)
    if key in ("minLength", "maxLength", "minItems", "maxItems"):
        return _is_count(v)
    if key == "required":
        return isinstance(v, list) and all(isinstance(r, str) for r in v)
    if key == "enum":
        return isinstance(v, list)
    if key == "pattern":
        if not isinstance(v, str):
            return False
        try:
            js_pattern(v)
        except re.error:
            return False
        return True
    if key == "format":
        return isinstance(v, str)
    if key in ("additionalProperties", "uniqueItems"):
        return isinstance(v, bool)
    if key == "properties":
        return isinstance(v, Mapping) and all(isinstance(k, str) and _uses_only_fast(s) for k, s in v.items())
    if key == "items":
        return _uses_only_fast(v)
    return True  # const, annotations


def _uses_only_fast(schema: Any) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping) or not set(schema) <= _FAST_KEYWORDS:
        return False
    return all(_fast_value_ok(k, v) for k, v in schema.items())


# Null plan: per property, (drop when null, plan for an object value, plan for the items of an array value).
_NullPlan = dict[str, tuple[bool, "_NullPlan | None", "_NullPlan | None"]]


def _null_plan(schema: Any, reference: Any) -> _NullPlan | None:
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return None
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    plan: _NullPlan = {}
    for name, sub in schema["properties"].items():
        drop = name not in required and not reference.evolve(schema=sub).is_valid(None)
        child = _null_plan(sub, reference)
        items = _null_plan(sub.get("items"), reference) if isinstance(sub, Mapping) else None
        if drop or child or items:
            plan[name] = (drop, child, items)
    return plan or None


def _drop_nulls(args: dict[str, Any], plan: _NullPlan) -> dict[str, Any]:
    out: dict[str, Any] | None = None
    for k, v in args.items():
        spec = plan.get(k)
        if spec is None:
            continue
        drop, child, items = spec
        if v is None:
            if drop:
                if out is None:
                    out = dict(args)
                del out[k]
        elif child is not None and isinstance(v, dict):
            nv = _drop_nulls(v, child)
            if nv is not v:
                if out is None:
                    out = dict(args)
                out[k] = nv
        elif items is not None and isinstance(v, list):
            nl = [_drop_nulls(x, items) if isinstance(x, dict) else x for x in v]
            if any(a is not b for a, b in zip(nl, v, strict=True)):
                if out is None:
                    out = dict(args)
                out[k] = nl
    return out if out is not None else args


class ArgumentValidator:
    """Validates one tool's arguments; build once per schema (see ``validator_for``)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self.fast = False
        self._fast: Check | None = None
        self._reference: Any = None
        self._nulls: _NullPlan | None = None
        #: Set when the schema itself is unusable (a server's mistake): every call is rejected with this.
        self.broken: str | None = None
        try:
            Reference.check_schema(dict(schema), format_checker=None)  # a pattern Python cannot compile fails later
            reference = Reference(dict(schema), format_checker=FORMAT_CHECKER)
            self.fast = _uses_only_fast(schema)
            self._fast = _compile(schema) if self.fast else None
            self._reference = None if self.fast else reference
            self._nulls = _null_plan(schema, reference)
        except SchemaError as e:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{clip(str(p), 40)}" for p in e.absolute_path)
            self._break(f"{clip(e.message, 120)} at schema{where}")
        except Exception as e:  # an unresolvable $ref, an unknown type ...: never a crash at registration
            self._break(f"{type(e).__name__}: {clip(str(e).splitlines()[0] if str(e) else '', 120)}")

    def _break(self, why: str) -> None:
        self.fast, self._fast, self._reference, self._nulls = False, None, None, None
        self.broken = f"the tool's input schema is unusable ({why}), so the engine cannot check its arguments"

    def normalize(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments the tool receives: optional nulls its schema does not allow removed (see module doc)."""
        d = args if isinstance(args, dict) else dict(args)
        return _drop_nulls(d, self._nulls) if self._nulls is not None else d

    def _problems(self, args: dict[str, Any]) -> list[str]:
        out: list[str] = []
        if self._fast is not None:
            _run(self._fast, args, "", out)
            return out
        if self.broken is not None:
            return [self.broken]
        try:
            errors = sorted(self._reference.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
        except Exception as e:  # a $ref to nowhere, a keyword of the wrong type deep in the schema
            return [f"the tool's input schema cannot be checked ({type(e).__name__}: {clip(str(e), 120)})"]
        for err in errors:
            where = "".join(
                f"[{p}]" if isinstance(p, int) else f".{clip(str(p), 40)}" for p in err.absolute_path
            ).lstrip(".")
            out.append(f"{where or 'arguments'}: {err.message}")
        return out

    def problems(self, args: Mapping[str, Any]) -> list[str]:
        return self._problems(self.normalize(args))

    def check(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Normalized arguments, or ``ArgumentError`` naming every violation."""
        normalized = self.normalize(args)
        problems = self._problems(normalized)
        if problems:
            raise ArgumentError(problems)
        return normalized

    def validate(self, args: Mapping[str, Any]) -> None:
        self.check(args)


@lru_cache(maxsize=4096)
def _cached(schema_json: str) -> ArgumentValidator:
    return ArgumentValidator(json.loads(schema_json))


def validator_for(schema: Mapping[str, Any]) -> ArgumentValidator:
    return _cached(json.dumps(schema, sort_keys=True, default=str))

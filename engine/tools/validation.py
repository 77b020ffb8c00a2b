"""Argument validation for tool calls: one set of rules, every violation named, formats anchored on the whole value.

The rules are JSON Schema Draft 2020-12 as implemented by ``jsonschema`` (the reference), with the project's two
choices applied to every schema alike: ``pattern`` follows ECMA-262 (``$`` only at the very end, as JSON Schema
specifies) and ``format`` uses one shared checker (``FORMAT_CHECKER``: the library's checks plus the stricter
email, uri/url and phone ones below).

Optional null means absent: a model often sends ``null`` for an optional argument it has no value for. Before
validation, ``normalize`` removes every such key whose schema does not allow null (through ``properties`` and
``items``, not inside ``anyOf``/``$ref``); the tool never sees it. This is the only place that rule lives.

Speed: schemas using only the common keywords (``_FAST_KEYWORDS``, with well-typed values) are compiled once
into small closures (``engine.tools.fast_schema``, a few microseconds per call); anything else is validated by the
reference directly (``engine.tools.schema_rules`` holds the rules both follow). The
fast path must agree with the reference on every instance (tests/engine/tools/test_validator_agreement.py).

Arguments are bounded (engine.tools.limits) before they are parsed or validated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jsonschema.exceptions import SchemaError

from engine.bounds.json_text import needs_repair, valid_json
from engine.tools.fast_schema import Check, _compile, _kind, _run, _uses_only_fast
from engine.tools.limits import DEFAULT_LIMITS, LimitExceeded, Limits, check_text, check_value, clip, text_needs_walk
from engine.tools.quick_schema import Accept, quick_accept
from engine.tools.schema_rules import FORMAT_CHECKER, Reference

#: Problems listed in one rejection message (the rest are counted) and the longest one listed.
MAX_PROBLEMS_SHOWN = 10
MAX_PROBLEM_CHARS = 300


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
    parsed; anything out of bounds, malformed or not an object raises ``ArgumentError``. A string's lone
    surrogates (``"\\ud800"``) come back as U+FFFD (``engine.bounds.json_text.valid_json``); an object was made valid
    where it was parsed (the provider's socket, the HTTP body, the text loop)."""
    # A dict, the common case, is never compared with "" nor ABC-checked (a Python-level call).
    if type(raw) is not dict and (raw is None or raw == ""):
        return {}
    try:
        if type(raw) is dict or isinstance(raw, Mapping):
            check_value(raw, limits)
            return dict(raw)
        if not isinstance(raw, str):
            raise ArgumentError([f"arguments must be a JSON object, got {type(raw).__name__}"])
        check_text(raw, limits)
        value = _DECODER.decode(raw)
        if text_needs_walk(raw, limits):
            check_value(value, limits)
        if needs_repair(raw):  # a "\ud800" escape: keys and values made valid text before anything sees them
            value = valid_json(value)
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
        #: Accepts the commonest valid arguments in one generated function (engine.tools.quick_schema).
        self._quick: Accept | None = None
        self._reference: Any = None
        self._nulls: _NullPlan | None = None
        #: The null plan only names top-level keys: arguments holding no null at all need no walk.
        self._flat_nulls = False
        #: Set when the schema itself is unusable (a server's mistake): every call is rejected with this.
        self.broken: str | None = None
        try:
            Reference.check_schema(dict(schema), format_checker=None)  # a pattern Python cannot compile fails later
            reference = Reference(dict(schema), format_checker=FORMAT_CHECKER)
            self.fast = _uses_only_fast(schema)
            self._fast = _compile(schema) if self.fast else None
            self._quick = quick_accept(schema) if self.fast else None
            self._reference = None if self.fast else reference
            self._nulls = _null_plan(schema, reference)
            self._flat_nulls = self._nulls is not None and all(
                child is None and items is None for _, child, items in self._nulls.values()
            )
        except SchemaError as e:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{clip(str(p), 40)}" for p in e.absolute_path)
            self._break(f"{clip(e.message, 120)} at schema{where}")
        except Exception as e:  # an unresolvable $ref, an unknown type ...: never a crash at registration
            self._break(f"{type(e).__name__}: {clip(str(e).splitlines()[0] if str(e) else '', 120)}")

    def _break(self, why: str) -> None:
        self.fast, self._fast, self._reference, self._nulls, self._flat_nulls = False, None, None, None, False
        self._quick = None
        self.broken = f"the tool's input schema is unusable ({why}), so the engine cannot check its arguments"

    def normalize(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments the tool receives: optional nulls its schema does not allow removed (see module doc)."""
        d = args if isinstance(args, dict) else dict(args)
        nulls = self._nulls
        if nulls is None or (self._flat_nulls and None not in d.values()):
            return d
        return _drop_nulls(d, nulls)

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

    def violations(self, value: Mapping[str, Any]) -> list[str]:
        """What is wrong with ``value`` as it is, no optional null removed first (a tool's output, not arguments)."""
        quick = self._quick
        if quick is not None and type(value) is dict and quick(value):
            return []
        return self._problems(value if isinstance(value, dict) else dict(value))

    def check(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Normalized arguments, or ``ArgumentError`` naming every violation."""
        fast = self._fast
        if fast is not None and type(args) is dict:
            # Arguments the compiled check passes as they are hold no null that ``normalize`` would drop (such a null
            # fails its own schema), so they are already normalized: the common case skips the walk for nulls.
            quick = self._quick
            if quick is not None and quick(args):
                return args
            problems: list[str] = []
            _run(fast, args, "", problems)
            if not problems:
                return args
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

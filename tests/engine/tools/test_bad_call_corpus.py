"""A generated corpus of bad tool calls through the one execution path: every one rejected with a named reason.

Over 1,000 calls (seeded, so a failure reproduces): wrong types and values, missing and extra keys, nesting from 10
to 10,000 levels (as JSON text and as already-parsed objects), sizes up to 10 MB, unicode (lone surrogates, RTL
overrides, zero-width characters, NUL, full-width look-alikes), malformed JSON, and names outside the call's
context (not shown, unknown, empty, look-alikes, 1 MB and 10 MB long, not even text). They go through
``Engine.execute_tool`` to recording tools (an in-process tool on the compiled fast path, one whose schema needs
the JSON Schema reference, and a real stdio MCP server that writes down every call it receives). Asserted: each
result is ``rejected`` with a message that starts with the reason and names what was wrong, the message is
bounded, no exception escapes, nothing was executed, and the rejection metrics stay a handful of series.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.app import Engine
from engine.config.models import Settings
from engine.events import ToolCompleted, ToolRequested
from engine.sessions.session import CallSession
from engine.tools.base import FunctionTool, Tool, ToolDefinition, ToolExecutionContext, ToolResult

SEED = 20261123
ROOT = Path(__file__).resolve().parents[3]
RECORDING_SERVER = str(ROOT / "tests" / "fixtures" / "mcp_servers" / "recording_server.py")
MB = 1024 * 1024
REASON = re.compile(r"^(not shown|unavailable|invalid arguments for [a-z_]+): ")

FAST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": 200},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "flag": {"type": "boolean"},
        "mode": {"enum": ["a", "b", "c"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 5, "uniqueItems": True},
        "where": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "mail": {"type": "string", "format": "email"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "note": {"type": "string"},
        "data": {"type": "object"},
    },
    "required": ["text"],
    "additionalProperties": False,
}
RICH_SCHEMA: dict[str, Any] = {
    **FAST_SCHEMA,
    "$defs": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
    "properties": {**FAST_SCHEMA["properties"], "v": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/code"}]}},
}

# Values that break each property of the in-process tools' schema (optional nulls are not here: they mean absent).
WRONG_FAST: dict[str, list[Any]] = {
    "text": [5, 1.5, True, None, [], {}, ["a"], "", "x" * 201, "\x00" * 201],
    "count": ["3", 3.5, True, 0, 11, -1, [3], {"n": 3}, "３", "٣", 1e300],
    "ratio": ["0.5", True, 2, -0.1, [0.5], 1.0000001],
    "flag": ["true", 1, 0, "yes", [True], "\x00"],
    "mode": ["d", "A", 1, True, ["a"], "", "a\u200b", "ａ"],
    "tags": ["a", [1], ["x" * 21], ["a", "a"], ["a"] * 6, {"0": "a"}, [None], [["a"]]],
    "where": ["Bern", [], {}, {"city": 5}, {"city": "x", "zip": 1}, {"city": None}, {"\u202ecity": "x"}],
    "mail": ["nobody", "a@localhost", 5, "a@b.ch\nBcc: x@y.z", "a\u202e@b", "@b.ch", "a b@c.ch"],
    "code": ["abc", "ABCD", "AB", 123, "ABC\n", "\u202eABC", "ＡＢＣ", "A\u200bBC", "ABC\x00"],
    "note": [5, [], {}, True, 1.5],
    "data": ["x", 5, [], True, 1.5],
}
WRONG_MCP: dict[str, list[Any]] = {
    "text": [5, 1.5, True, None, [], {}, ["a"]],
    "count": ["3", 3.5, True, [3], {"n": 3}, "３", "٣"],
    "where": ["Bern", [], {"city": 5}, {"city": None}, {"city": ["x"]}],
    "tags": ["a", [1], [None], [["a"]], {"0": "a"}],
    "data": ["x", 5, [], True, 1.5],
}
ODD_KEYS = [
    "zz",
    "Text",
    "text ",
    " text",
    "te\u200bxt",
    "\u202etext",
    "\x00",
    "\ud800",
    "\udfff",
    "t\u0301ext",
    "ｔｅｘｔ",
    "tеxt",
    "__proto__",
    "constructor",
    "$ref",
    "..",
    "a.b",
    "[0]",
    "",
    "k" * 1000,
]
ODD_NAMES = [
    "",
    " ",
    "record ",
    " record",
    "RECORD",
    "rеcord",
    "rec\u200bord",
    "\u202erecord",
    "record\x00",
    "\ud800",
    "re\udfffcord",
    "mcp_x_y",
    "../record",
    "record;rm -rf /",
    "r" * 64,
    "r" * 65,
    "n" * MB,
    "🙂",
    "record\n",
]
NOT_TEXT_NAMES: list[Any] = [None, 5, ["record"], b"record"]
MALFORMED_JSON = [
    '{"text": "a"',
    '{"text": "a",}',
    "{'text': 'a'}",
    '{"text": NaN}',
    '{"text": "a", "count": Infinity}',
    '{"text": "a", "count": -Infinity}',
    "[1, 2]",
    "null",
    "5",
    '"text"',
    "true",
    '{"text": "a"} x',
    "\ufeff{}",
    '{"text": "a\x00"}',
    '{"text": "\x1f"}',
    "{text: 1}",
    '{"text": "a" "count": 1}',
    "}",
    "{",
    "{{}}",
    '{"text": "a", "count": 1' + "0" * 5000 + "}",
    '{"text": "\\ud800", "count": "x"}',
    '{"text": "\\x41"}',
]


@dataclass(frozen=True)
class Case:
    label: str  # what is wrong, for the failure report
    name: Any
    args: Any
    expect: str  # a regex the rejection message must match (it names what was wrong)


@dataclass
class Target:
    tool: str
    hidden: str  # registered but not shown on the call
    wrong: dict[str, list[Any]]
    closed: bool  # extra keys are invalid
    valid: Callable[[random.Random], dict[str, Any]]
    deep_key: str = "data"  # a free-form object: only the depth bound can refuse what goes in it
    long_key: str = "note"  # a string without maxLength: only the string bound can refuse a long one
    names: list[str] = field(default_factory=list)


def valid_fast(rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {"text": rng.choice(["hello", "Grüße", "مرحبا", "\u05e9\u05dc\u05d5\u05dd", "😀"])}
    extras = {
        "count": rng.randint(1, 10),
        "ratio": rng.random(),
        "flag": rng.random() < 0.5,
        "mode": rng.choice("abc"),
        "tags": ["x", "y"],
        "where": {"city": "Bern"},
        "mail": "a@b.ch",
        "code": "ABC",
        "note": "n",
        "data": {},
    }
    for key in rng.sample(sorted(extras), rng.randint(0, 4)):
        args[key] = extras[key]
    return args


def valid_mcp(rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {"text": rng.choice(["hello", "Grüße", "😀"])}
    if rng.random() < 0.5:
        args["count"] = rng.randint(1, 5)
    return args


def deep(levels: int, kind: str) -> Any:
    value: Any = 1
    for i in range(levels):
        value = {"a": value} if kind == "dict" or (kind == "mixed" and i % 2) else [value]
    return value


def deep_text(levels: int, kind: str) -> str:
    """The JSON text of ``deep(levels, kind)``, built without a (recursive) encoder."""
    opens = "".join('{"a": ' if kind == "dict" or (kind == "mixed" and i % 2) else "[" for i in range(levels))
    closes = "".join("}" if o == "{" else "]" for o in reversed(opens.replace('"a": ', "").replace(" ", "")))
    return opens + "1" + closes


def with_deep(rng: random.Random, args: dict[str, Any], key: str, levels: int, kind: str) -> Any:
    """``args`` with ``key`` holding a ``levels``-deep value, as an object or as JSON text."""
    if rng.random() < 0.5:
        return {**args, key: deep(levels, kind)}
    rest = json.dumps({k: v for k, v in args.items() if k != key})
    return rest[:-1] + (", " if len(rest) > 2 else "") + json.dumps(key) + ": " + deep_text(levels, kind) + "}"


def as_call(rng: random.Random, args: dict[str, Any]) -> Any:
    """Half as JSON text (as OpenAI sends them), half as an object (as Anthropic, MCP clients, the CLI)."""
    if rng.random() < 0.5:
        return args
    return json.dumps(args, ensure_ascii=rng.random() < 0.5)


def corpus(rng: random.Random, t: Target, scale: int = 1) -> Iterator[Case]:
    for part in (_wrong_values, _missing_and_extra, _deep, _big, _malformed, _bad_names):
        yield from part(rng, t, scale)


def _wrong_values(rng: random.Random, t: Target, scale: int) -> Iterator[Case]:
    """Wrong types and values, one violation per call on otherwise valid arguments."""
    for _ in range(scale):
        for key, values in t.wrong.items():
            for v in values:
                args = t.valid(rng)
                args[key] = v
                yield Case(f"{key}={v!r:.40}", t.tool, as_call(rng, args), re.escape(key))


def _missing_and_extra(rng: random.Random, t: Target, scale: int) -> Iterator[Case]:
    """Missing required keys, a required key inside an object, and extra keys (odd ones too)."""
    for _ in range(20 * scale):
        args = t.valid(rng)
        del args["text"]
        yield Case("missing text", t.tool, as_call(rng, args), "text")
    yield Case("no arguments", t.tool, None, "text")
    yield Case("empty text", t.tool, "", "text")
    if t.closed:
        for _ in range(10 * scale):
            args = t.valid(rng)
            args["where"] = {}
            yield Case("where without city", t.tool, as_call(rng, args), "city")
        # Extra keys (odd ones too) are not arguments of the tool.
        for _ in range(3 * scale):
            for key in ODD_KEYS:
                args = t.valid(rng)
                args[key] = rng.choice([1, "x", None, [], {}])
                yield Case(f"extra key {key!r:.30}", t.tool, as_call(rng, args), "not an argument|Additional propert")


def _deep(rng: random.Random, t: Target, scale: int) -> Iterator[Case]:
    """Nesting from 10 to 10,000 levels: beyond the bound in a free-form object, within it where a string belongs."""
    for _ in range(60 * scale):
        levels = int(10 ** rng.uniform(1, 4))
        kind = rng.choice(["dict", "list", "mixed"])
        args = t.valid(rng)
        if levels >= 64:  # the arguments object is level 1: 64 levels below it are one too many
            call = with_deep(rng, args, t.deep_key, levels, kind)
            yield Case(f"depth {levels} {kind}", t.tool, call, r"nested more than 64 levels deep")
        else:
            yield Case(f"depth {levels} {kind} as text", t.tool, with_deep(rng, args, "text", levels, kind), "text")
    for levels in (1_000, 10_000):
        yield Case(f"bare brackets {levels}", t.tool, "[" * levels + "]" * levels, "nested more than 64")
        yield Case(f"open brackets {levels}", t.tool, '{"text": ' + "[" * levels, "nested more than 64")


def _big(rng: random.Random, t: Target, scale: int) -> Iterator[Case]:
    """Sizes: long strings, many keys, big texts; a few at 10 MB."""
    for n in (65_537, 100_000, 1_000_000):
        args = t.valid(rng)
        args[t.long_key if t.long_key in t.wrong or t.closed else "text"] = "s" * n
        yield Case(f"string of {n}", t.tool, args, "a string of")
        yield Case(f"string of {n} as text", t.tool, json.dumps(args), "a string of|characters of JSON")
    args = t.valid(rng)
    args[t.deep_key] = {f"k{i}": i for i in range(200_000)}
    yield Case("200,000 keys", t.tool, args, "characters of JSON")
    yield Case("200,000 keys as text", t.tool, json.dumps(args), "characters of JSON")
    ten = "x" * (10 * MB)
    yield Case("10 MB string", t.tool, {"text": "a", t.deep_key: {"s": ten}}, "a string of 10,485,760")
    yield Case("10 MB of JSON", t.tool, json.dumps({"text": ten}), "10,485,7.. characters of JSON")
    yield Case("10 MB of brackets", t.tool, "[" * (10 * MB), "characters of JSON")
    yield Case("10 MB key", t.tool, {"text": "a", ten: 1}, "a key of 10,485,760")


def _malformed(rng: random.Random, t: Target, scale: int) -> Iterator[Case]:
    """Malformed JSON text."""
    for _ in range(2 * scale):
        for text in MALFORMED_JSON:
            yield Case(f"malformed {text[:30]!r}", t.tool, text, "not valid JSON|must be a JSON object|text|count")
        for _ in range(20):
            junk = "".join(
                chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0xD7FF), 0xD800, 0xFEFF]))
                for _ in range(rng.randint(1, 40))
            )
            if junk.strip() in ("", "null"):
                junk = "{" + junk
            yield Case(f"junk {junk[:20]!r}", t.tool, junk, "not valid JSON|must be a JSON object")


def _bad_names(rng: random.Random, t: Target, scale: int) -> Iterator[Case]:
    """Names outside the context."""
    for _ in range(2 * scale):
        for name in [*ODD_NAMES, *t.names]:
            yield Case(f"name {name[:30]!r}", name, as_call(rng, t.valid(rng)), "not offered on this call")
        for name in NOT_TEXT_NAMES:
            yield Case(f"name {name!r}", name, {}, "must be text|not offered")
        yield Case("hidden tool", t.hidden, as_call(rng, t.valid(rng)), "not offered on this call")
        for _ in range(15):
            name = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_0123456789") for _ in range(rng.randint(1, 80)))
            yield Case(f"unknown {name}", name, t.valid(rng), "not offered on this call")
    yield Case("10 MB name", "n" * (10 * MB), {"text": "a"}, "not offered on this call")
    yield Case("shown but gone", "ghost", {"text": "a"}, "no longer available")


async def run_corpus(engine: Engine, session: CallSession, cases: list[Case]) -> list[str]:
    """Send every case; return a description of each one that was not rejected properly (empty: all good)."""
    failures: list[str] = []
    for c in cases:
        try:
            r = await engine.execute_tool(session, c.name, c.args)
        except BaseException as e:  # the point: nothing may escape
            failures.append(f"{c.label}: raised {type(e).__name__}: {str(e)[:200]}")
            continue
        if r.status != "rejected":
            failures.append(f"{c.label}: {r.status} {r.message[:200]!r}")
        elif not REASON.match(r.message) or not re.search(c.expect, r.message):
            failures.append(f"{c.label}: reason {r.message[:300]!r} does not match {c.expect!r}")
        elif len(r.message) > 4_000:
            failures.append(f"{c.label}: a message of {len(r.message):,} characters")
    return failures


def rejection_series(engine: Engine) -> list[str]:
    text = engine.metrics.render().decode()
    return re.findall(r"^ai_agent_mcp_tool_rejections_total\{(.*)\} \S+$", text, re.M)


def recording_tool(name: str, schema: dict[str, Any], ran: list[dict[str, Any]]) -> FunctionTool:
    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        ran.append(args)
        return ToolResult.success("recorded")

    return FunctionTool(ToolDefinition(name, "Records every call.", input_schema=schema), run)


async def test_a_thousand_bad_calls_to_in_process_tools_are_all_rejected() -> None:
    ran: list[dict[str, Any]] = []
    tools: list[Tool] = [
        recording_tool("record", FAST_SCHEMA, ran),
        recording_tool("record_rich", RICH_SCHEMA, ran),
        recording_tool("hidden_record", FAST_SCHEMA, ran),
    ]
    engine = Engine(Settings.model_validate({"engine": {"http": {"enabled": False}}}), extra_tools=tools)
    assert engine.registry.get("record").validator.fast  # type: ignore[union-attr]
    assert not engine.registry.get("record_rich").validator.fast  # type: ignore[union-attr]
    session = CallSession(call_id="corpus", context="c", provider="p")
    session.shown_tools = frozenset({"record", "record_rich", "ghost"})
    ran_events = engine.bus.subscribe(types={ToolRequested.type, ToolCompleted.type})

    rng = random.Random(SEED)
    cases: list[Case] = []
    for tool in ("record", "record_rich"):
        target = Target(tool, "hidden_record", WRONG_FAST, True, valid_fast, names=["record_Rich", "hidden_record "])
        cases.extend(corpus(rng, target, scale=2))
    assert len(cases) >= 1_000, len(cases)
    labels = " ".join(c.label for c in cases)
    for what in ("depth 1", "10 MB", "\\u202e", "\\u200b", "\\x00", "\\ud800", "name", "missing", "extra key"):
        assert what in labels, what

    failures = await run_corpus(engine, session, cases)
    assert not failures, f"{len(failures)} of {len(cases)} bad calls not rejected properly:\n" + "\n".join(
        failures[:20]
    )
    assert ran == [] and ran_events.drain() == []
    series = rejection_series(engine)
    assert len(series) <= 9, series  # (record, record_rich, hidden_record, (unknown)) x 3 reasons at most
    assert all(re.search(r'tool="(record|record_rich|hidden_record|\(unknown\))"', s) for s in series), series

    # The recording tools do run when a call is good (so "nothing ran" above means something).
    ok = await engine.execute_tool(session, "record", {"text": "fine", "count": None})
    assert ok.status == "success" and ran == [{"text": "fine"}]


async def test_bad_calls_never_reach_a_real_mcp_server(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    record.touch()
    settings = Settings.model_validate(
        {
            "engine": {"http": {"enabled": False}, "tool_timeout_ms": 5000},
            "mcp": {
                "servers": {
                    "rec": {
                        "transport": "stdio",
                        "command": [sys.executable, RECORDING_SERVER, "--record", str(record)],
                        "connect_timeout_ms": 15000,
                    }
                }
            },
        }
    )
    engine = Engine(settings, serve_http=False)
    await engine.start()
    try:
        entry = engine.registry.get("mcp_rec_record")
        assert entry is not None and not entry.validator.fast
        session = CallSession(call_id="corpus-mcp", context="c", provider="p")
        session.shown_tools = frozenset({"mcp_rec_record", "ghost"})
        rng = random.Random(SEED + 1)
        target = Target(
            "mcp_rec_record", "mcp_rec_hidden", WRONG_MCP, False, valid_mcp, deep_key="data", long_key="text"
        )
        cases = [c for c in corpus(rng, target) if "10 MB" not in c.label or rng.random() < 0.5]
        cases = rng.sample(cases, min(len(cases), 250))
        failures = await run_corpus(engine, session, cases)
        assert not failures, "\n".join(failures[:20])
        assert record.read_text() == "", "a bad call reached the server"
        assert len(rejection_series(engine)) <= 3

        ok = await engine.execute_tool(session, "mcp_rec_record", {"text": "fine", "where": None})
        assert ok.status == "success", ok.message
        assert [json.loads(line)["text"] for line in record.read_text().splitlines()] == ["fine"]
    finally:
        await engine.stop()

"""No part is handed the Engine (issue 35 item 1): the composition root builds the voice calls' host from parts.

The softphone, telephony and the voice driver factory (``engine.realtime.driver.voice_call``) used to be handed the
``Engine`` itself as their ``RealtimeHost``: through it a part could reach every other part. Now the wiring
(engine/components.py) hands them ``VoiceParts`` (engine/realtime/voice_host.py), made of the call manager, the bus,
the turn timing book, the recorder's audio tap and the elicitation desk.

The first check builds an engine (with and without its HTTP server) and walks each part it holds one level deep
(its attributes, and the items of its lists, tuples and dicts): none may be the engine. The second reads the source:
no call in engine/, console/ or tests/ hands the engine (``engine``, or ``self`` inside ``class Engine``) to a voice
driver, the softphone or telephony.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.app import Engine
from tests.engine.core.helpers import settings_with

ROOT = Path(__file__).resolve().parents[2]
#: The engine's types: ``Wired`` is the Engine as the wiring (engine/components.py) reads it.
ENGINE = {"Engine", "Wired"}
#: What is handed a voice call's host (as any argument).
TAKES_A_HOST = {"voice_call", "Softphone", "Telephony", "StasisApp", "VoiceCall", "RealtimeVoiceCall", "is_realtime"}


def _held(obj: object) -> list[tuple[str, object]]:
    """What ``obj`` holds one level down: its attributes, and the items of those that are lists, tuples or dicts."""
    try:
        attrs = dict(vars(obj))
    except TypeError:  # no __dict__ (slots, builtins)
        return []
    held: list[tuple[str, object]] = []
    for name, value in attrs.items():
        held.append((name, value))
        if isinstance(value, (list, tuple)):
            held += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif isinstance(value, dict):
            held += [(f"{name}[{k!r}]", v) for k, v in value.items()]
    return held


@pytest.mark.parametrize("serve_http", [False, True], ids=["headless", "http"])
def test_no_part_of_the_engine_holds_the_engine(tmp_path: Path, serve_http: bool) -> None:
    engine = Engine(settings_with(tmp_path, [], [], engine={"http": {"enabled": True}}), serve_http=serve_http)
    engine.softphone()  # made on first use; it opens no device until a call starts
    parts = [(f"engine.{name}", part) for name, part in _held(engine) if part is not engine]
    holders = [
        f"{where} ({type(part).__name__}).{attr}"
        for where, part in parts
        for attr, value in _held(part)
        if value is engine
    ]
    assert holders == []
    voice = engine.voice_parts
    assert engine.softphone().host is voice
    telephony = next(c for c in engine.components if c.name == "telephony")
    assert vars(telephony)["_host"] is voice


def _hands_the_engine(tree: ast.Module) -> list[str]:
    found: list[str] = []

    def visit(node: ast.AST, in_engine: bool, hosts: frozenset[str]) -> None:
        if isinstance(node, ast.ClassDef):
            in_engine = node.name == "Engine"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # a parameter typed as a host is no engine
            params = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            typed = {a.arg for a in params if a.annotation is not None and ast.unparse(a.annotation) not in ENGINE}
            hosts = hosts | typed
        if isinstance(node, ast.Call):
            f = node.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            for arg in [*node.args, *(k.value for k in node.keywords)] if called in TAKES_A_HOST else []:
                if isinstance(arg, ast.Name) and arg.id not in hosts:
                    if arg.id == "engine" or (in_engine and arg.id == "self"):
                        found.append(f"{node.lineno}: {called}(... {arg.id} ...)")
        for child in ast.iter_child_nodes(node):
            visit(child, in_engine, hosts)

    visit(tree, False, frozenset())
    return found


def test_no_code_in_the_engine_or_its_tests_hands_the_engine_to_a_voice_part() -> None:
    """The tests too: a test that builds a driver on the Engine tests a wiring the product never uses (and kept
    the facade's forwards alive for it)."""
    roots = [ROOT / "engine", ROOT / "console", ROOT / "tests"]
    sources = {p: p.read_text(encoding="utf-8") for root in roots for p in sorted(root.rglob("*.py"))}
    calling = {p: text for p, text in sources.items() if any(f"{name}(" in text for name in TAKES_A_HOST)}
    assert len(calling) >= 5  # the softphone's, telephony's, the driver's, the CLI's callers at least
    bad = [f"{p.relative_to(ROOT)}:{hit}" for p, text in calling.items() for hit in _hands_the_engine(ast.parse(text))]
    assert bad == []

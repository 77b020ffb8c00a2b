"""``@modelcontextprotocol/server-everything``'s ``trigger-elicitation-request`` (a real, independent peer, over
stdio) put to a caller: text calls through the real engine, the caller's words handed to ``Engine.caller_answered``
as a voice driver does. The form's one required field is ``name`` (title "String", description "Your full, legal
name"): the caller is asked for it by that title and description, not only with the server's generic message; the
engine listens with open dictation (no yes/no grammar that would turn "john smith" into "yes please"), reads the
answer back and the server receives ``{"name": "john smith"}`` with the defaults of the optional fields it did not
ask (SEP-1034). "No thanks" declines the question and "never mind" cancels it, and the server says so."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app import Engine
from engine.config import load_settings
from engine.events import ElicitationResolved, ElicitationWaiting, ToolCompleted
from tests.engine.mcp.helpers import EVERYTHING_BIN, wait_for
from tests.engine.mcp.test_real_peers import needs_everything

TOOL = "mcp_ev_trigger_elicitation_request"
MESSAGE = "Please provide inputs for the following fields:"
#: The defaults of the form's optional fields (SEP-1034), which an accepted answer carries.
EVERYTHING_DEFAULTS = {
    "firstLine": "It was a dark and stormy night.",
    "integer": 42,
    "number": 3.14,
    "untitledSingleSelectEnum": "Monica",
    "untitledMultipleSelectEnum": ["Guitar"],
    "titledSingleSelectEnum": "hero-1",
    "titledMultipleSelectEnum": ["fish-1"],
    "legacyTitledEnum": "pet-1",
}


@pytest.fixture
async def engine(tmp_path: Path) -> Any:
    script = {
        "greeting": "Form line.",
        "intents": [
            {
                "name": "form",
                "patterns": [r"\bform\b"],
                "examples": ["the form"],
                "reply": "{result}",
                "tools": [{"name": TOOL}],
            }
        ],
        "fallback": "Say form.",
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(script))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "engine": {"http": {"enabled": False}, "tool_timeout_ms": 5000},
                "providers": {"s": {"type": "scripted", "script": "s.yaml"}},
                "mcp": {"servers": {"ev": {"command": [str(EVERYTHING_BIN), "stdio"], "connect_timeout_ms": 60_000}}},
                "contexts": {
                    "phone": {
                        "provider": "s",
                        "tools": ["mcp_ev_*"],
                        "elicitation": {"ask": "caller", "timeout_ms": 30_000},
                    }
                },
            }
        )
    )
    e = Engine(load_settings(cfg), config_path=cfg)
    async with e:
        await wait_for(lambda: e.registry.get(TOOL) is not None, 30)
        yield e


async def form_turn(engine: Engine, answers: list[str]) -> tuple[str, list[ElicitationWaiting], ElicitationResolved]:
    """One turn that runs the tool, the caller answering each question the engine waits for, in order; returns
    what the tool gave back (reply, message and data), the waits and the resolution."""
    call = await engine.start_call("phone")
    sub = engine.bus.subscribe(types={ElicitationWaiting.type, ElicitationResolved.type, ToolCompleted.type})
    waited: list[ElicitationWaiting] = []
    resolved: list[ElicitationResolved] = []
    completed: list[ToolCompleted] = []

    async def caller() -> None:
        async for ev in sub:
            if isinstance(ev, ElicitationWaiting) and ev.who == "caller":
                waited.append(ev)
                assert engine.caller_answered(call.call_id, answers.pop(0))
            elif isinstance(ev, ElicitationResolved):
                resolved.append(ev)
            elif isinstance(ev, ToolCompleted):
                completed.append(ev)
                return

    task = asyncio.create_task(caller())
    try:
        reply = await asyncio.wait_for(engine.user_said(call.call_id, "the form please"), 60)
        await asyncio.wait_for(task, 10)
    finally:
        sub.close()
        task.cancel()
    await engine.end_call(call.call_id, "caller hung up")
    (done,) = resolved
    (tool,) = completed
    return f"{reply.text}\n{tool.message}\n{tool.data}", waited, done


@needs_everything
async def test_the_caller_is_asked_for_the_name_and_the_server_gets_it(engine: Engine) -> None:
    reply, waited, done = await form_turn(engine, ["john smith", "yes"])
    asked, check = waited
    assert asked.prompt.startswith(MESSAGE) and "Your full, legal name" in asked.prompt
    # open dictation: a grammar of yes/no answers would hear any name as one of them
    assert not {"yes", "yes please", "no"} & set(asked.expect)
    assert asked.prompt == f"{MESSAGE} String: Your full, legal name?"
    assert check.prompt == "I heard john smith. Is that right?"
    # the optional fields are not asked: each one with a default carries it (SEP-1034); "check" has none
    assert (done.action, done.by, done.content) == ("accept", "caller", {"name": "john smith", **EVERYTHING_DEFAULTS})
    assert "- Name: john smith" in reply and "Agreed to terms" not in reply
    assert "- Favorite Integer: 42" in reply and "- Pet Type" not in reply  # it reports no legacyTitledEnum


@needs_everything
@pytest.mark.parametrize(
    ("said", "action", "server_says"),
    [
        ("no thanks", "decline", "User declined to provide the requested information"),
        ("never mind", "cancel", "User cancelled the elicitation dialog"),
    ],
)
async def test_the_caller_declines_or_cancels_by_voice(
    engine: Engine, said: str, action: str, server_says: str
) -> None:
    reply, waited, done = await form_turn(engine, [said])
    assert len(waited) == 1  # no read-back: the answer was the refusal itself
    assert (done.action, done.by, done.content) == (action, "caller", {})
    assert server_says in reply

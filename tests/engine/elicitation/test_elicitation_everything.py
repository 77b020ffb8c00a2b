"""``@modelcontextprotocol/server-everything``'s elicitation tools (a real, independent peer, over stdio): its
``trigger-elicitation-request`` (a 13-field form with formats, ranges, enums, titled enums and multi-selects) is
answered by the operator and reaches the server whole; declined by a context's policy; its URL-mode tool shows the
link to the operator."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app import Engine
from engine.config import load_settings
from engine.events import ElicitationRequested, ElicitationWaiting
from engine.sessions.session import CallSession
from tests.engine.mcp.helpers import EVERYTHING_BIN, wait_for
from tests.engine.mcp.test_real_peers import needs_everything

TOOL = "mcp_ev_trigger_elicitation_request"


@pytest.fixture
async def engine(tmp_path: Path) -> Any:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"greeting": "Hi.", "intents": [], "fallback": "what?"}))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "engine": {"http": {"enabled": False}, "tool_timeout_ms": 5000},
                "providers": {"s": {"type": "scripted", "script": "s.yaml"}},
                "mcp": {"servers": {"ev": {"command": [str(EVERYTHING_BIN), "stdio"], "connect_timeout_ms": 60_000}}},
                "contexts": {
                    "desk": {"provider": "s", "tools": ["mcp_ev_*"], "elicitation": "operator"},
                    "quiet": {"provider": "s", "tools": ["mcp_ev_*"]},
                },
            }
        )
    )
    e = Engine(load_settings(cfg), config_path=cfg)
    async with e:
        # everything registers its elicitation tools once it knows the client can answer (then lists them again)
        await wait_for(lambda: e.registry.get(TOOL) is not None, 30)
        yield e


def on_call(engine: Engine, context: str) -> CallSession:
    session = CallSession(call_id=f"call-{context}", context=context, provider="s")
    session.shown_tools = frozenset(engine.registry.names())
    return session


@needs_everything
async def test_the_operator_answers_everythings_form(engine: Engine) -> None:
    engine.attach_elicitation_operator("test")
    sub = engine.bus.subscribe(types={ElicitationRequested.type, ElicitationWaiting.type})
    running = asyncio.create_task(engine.execute_tool(on_call(engine, "desk"), TOOL, {}))
    asked: Any = await asyncio.wait_for(anext(aiter(sub)), 30)
    assert asked.message == "Please provide inputs for the following fields:"
    assert len(asked.schema["properties"]) >= 10
    waiting: Any = await asyncio.wait_for(anext(aiter(sub)), 30)
    (pending,) = engine.pending_elicitations()
    kinds = {f.name: f.kind for f in pending.fields}
    assert kinds["untitledMultipleSelectEnum"] == kinds["titledMultipleSelectEnum"] == "multi"
    assert kinds["titledSingleSelectEnum"] == kinds["legacyTitledEnum"] == "enum"
    with pytest.raises(ValueError, match="'String with email format' must be a valid email"):
        engine.answer_elicitation(waiting.elicitation_id, "accept", {"name": "Ada", "email": "ada-at-home"})
    answer = {
        "name": "Ada Lovelace",
        "check": True,
        "email": "ada@example.test",
        "birthdate": "1815-12-10",
        "integer": 7,
        "untitledMultipleSelectEnum": ["Piano", "Violin"],
        "titledSingleSelectEnum": "hero-3",
        "legacyTitledEnum": "pet-2",
    }
    engine.answer_elicitation(waiting.elicitation_id, "accept", answer)
    r = await running
    assert r.status == "success"
    for line in (
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Email: ada@example.test",
        "- Birthdate: 1815-12-10",
        "- Favorite Integer: 7",
        '"Piano"',
        '"hero-3"',
    ):
        assert line in r.message or line in str(r.data), line


@needs_everything
async def test_everythings_question_declined_by_policy(engine: Engine) -> None:
    r = await engine.execute_tool(on_call(engine, "quiet"), TOOL, {})
    assert "User declined to provide the requested information" in r.message

"""Tools that ask mid-call (MCP elicitation) on a real fixture server, in both protocol eras: declined by the
context's policy, answered by the operator through the engine's API (the console's form calls the same), declined
when nobody answers in time, when no operator is attached, and when the server asks with a form no one can show.
The tool's own 1 s timeout does not run while the question waits (the operator answers after it would have)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app import Engine
from engine.events import ElicitationRequested, ElicitationResolved, ElicitationWaiting
from engine.sessions.session import CallSession
from tests.engine.elicitation.helpers import ERAS, settings_at, write_config


@pytest.fixture
async def engine(tmp_path: Path) -> Any:
    cfg = write_config(tmp_path)
    e = Engine(settings_at(cfg), config_path=cfg)
    async with e:
        yield e


async def next_event(sub: Any) -> Any:
    return await anext(aiter(sub))


async def drain(sub: Any) -> list[Any]:
    return [e async for e in sub]


def on_call(engine: Engine, context: str) -> CallSession:
    session = CallSession(call_id=f"call-{context}", context=context, provider="s")
    session.shown_tools = frozenset(engine.registry.names())
    return session


async def answer_when_asked(engine: Engine, sub: Any, action: str, content: dict[str, Any] | None) -> Any:
    async for ev in sub:
        if isinstance(ev, ElicitationWaiting) and ev.who == "operator":
            await asyncio.sleep(1.3)  # longer than the tool's own timeout: its clock must be stopped meanwhile
            engine.answer_elicitation(ev.elicitation_id, action, content)
            return ev


@pytest.mark.parametrize("era", list(ERAS))
async def test_the_operator_answers_a_number_and_a_confirmation(engine: Engine, era: str) -> None:
    detach = engine.attach_elicitation_operator("test")
    sub = engine.bus.subscribe(types={ElicitationWaiting.type})
    log = engine.bus.subscribe(types={ElicitationRequested.type, ElicitationResolved.type})
    session = on_call(engine, "desk")
    answering = asyncio.create_task(answer_when_asked(engine, sub, "accept", {"guests": 4}))
    r = await engine.execute_tool(session, f"mcp_{era}_book_table", {})
    assert (r.status, r.message) == ("success", 'accept {"guests":4}')
    waiting = await answering
    assert waiting.call_id == "call-desk"
    answering = asyncio.create_task(answer_when_asked(engine, sub, "accept", {"confirm": True}))
    r = await engine.execute_tool(session, f"mcp_{era}_cancel_order", {"order": "A7"})
    assert r.message == 'accept {"confirm":true}'
    await answering
    answering = asyncio.create_task(answer_when_asked(engine, sub, "decline", None))
    r = await engine.execute_tool(session, f"mcp_{era}_book_table", {})
    assert r.message == "decline"
    await answering
    detach()
    log.close()
    events = [ev async for ev in log]
    asked = [ev for ev in events if isinstance(ev, ElicitationRequested)]
    assert [a.server for a in asked] == [era] * 3
    assert asked[0].exposed_name == f"mcp_{era}_book_table" and asked[0].ask == "operator"
    assert asked[0].message == "How many guests should I book the table for?"
    assert asked[0].schema["properties"]["guests"]["maximum"] == 12
    done = [(ev.action, ev.by, ev.content) for ev in events if isinstance(ev, ElicitationResolved)]
    assert done == [
        ("accept", "operator", {"guests": 4}),
        ("accept", "operator", {"confirm": True}),
        ("decline", "operator", {}),
    ]


@pytest.mark.parametrize("era", list(ERAS))
async def test_an_answer_that_does_not_fit_the_form_is_refused(engine: Engine, era: str) -> None:
    engine.attach_elicitation_operator("test")
    sub = engine.bus.subscribe(types={ElicitationWaiting.type})
    session = on_call(engine, "desk")
    running = asyncio.create_task(engine.execute_tool(session, f"mcp_{era}_book_table", {}))
    ev = await next_event(sub)
    with pytest.raises(ValueError, match="'Guests' must be at most 12"):
        engine.answer_elicitation(ev.elicitation_id, "accept", {"guests": 40})
    with pytest.raises(ValueError, match="'Guests' is required"):
        engine.answer_elicitation(ev.elicitation_id, "accept", {})
    engine.answer_elicitation(ev.elicitation_id, "accept", {"guests": 12})
    assert (await running).message == 'accept {"guests":12}'
    with pytest.raises(ValueError, match="no pending question"):
        engine.answer_elicitation(ev.elicitation_id, "decline")


@pytest.mark.parametrize("era", list(ERAS))
async def test_declined_by_policy_by_timeout_without_operator_and_for_a_nested_form(engine: Engine, era: str) -> None:
    sub = engine.bus.subscribe(types={ElicitationResolved.type})
    r = await engine.execute_tool(on_call(engine, "quiet"), f"mcp_{era}_book_table", {})
    assert r.message == "decline"
    r = await engine.execute_tool(on_call(engine, "desk"), f"mcp_{era}_book_table", {})  # nobody attached
    assert r.message == "decline"
    engine.attach_elicitation_operator("test")
    r = await engine.execute_tool(on_call(engine, "hasty"), f"mcp_{era}_cancel_order", {"order": "B2"})
    assert r.message == "decline"
    r = await engine.execute_tool(on_call(engine, "desk"), f"mcp_{era}_bad_schema", {})
    assert r.message == 'answered {"action":"decline"}'
    sub.close()
    why = [(ev.by, ev.reason) for ev in await drain(sub)]
    assert why == [
        ("policy", "the context 'quiet' declines questions"),
        ("engine", "no operator is attached to answer it"),
        ("timeout", "no answer within 0.3 seconds"),
        (
            "engine",
            f"server '{era}', tool 'bad_schema' asked with a form that cannot be shown: property 'address' "
            "is a nested object; only flat primitive properties (string, number, integer, boolean, enum) "
            "can be asked",
        ),
    ]


@pytest.mark.parametrize("era", list(ERAS))
async def test_a_call_without_a_call_is_declined_and_a_link_goes_to_the_operator(engine: Engine, era: str) -> None:
    name = f"mcp_{era}_book_table"
    r = await engine.executor.execute(None, name, {}, allowed=frozenset({name}))
    assert r.message == "decline"
    engine.attach_elicitation_operator("test")
    sub = engine.bus.subscribe(types={ElicitationRequested.type, ElicitationWaiting.type})
    running = asyncio.create_task(engine.execute_tool(on_call(engine, "desk"), f"mcp_{era}_sign_up", {}))
    asked = await next_event(sub)
    assert (asked.mode, asked.url) == ("url", "https://example.test/sign-up?code=abc")
    waiting = await next_event(sub)
    (pending,) = engine.pending_elicitations()
    assert pending.url == asked.url and pending.elicitation_id == waiting.elicitation_id
    engine.answer_elicitation(waiting.elicitation_id, "accept")
    assert (await running).message == "accept"


async def test_a_secret_in_a_question_never_leaves_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "sk-ELICIT-CANARY-5e1f"
    monkeypatch.setenv("ELICIT_CANARY", canary)
    cfg = write_config(tmp_path)
    data = yaml.safe_load(cfg.read_text())
    data["tools"] = {"email": {"password": "${ELICIT_CANARY}"}}
    cfg.write_text(yaml.safe_dump(data))
    engine = Engine(settings_at(cfg), config_path=cfg)
    async with engine:
        engine.attach_elicitation_operator("test")
        kinds = {ElicitationRequested.type, ElicitationWaiting.type, ElicitationResolved.type}
        sub, log = engine.bus.subscribe(types=kinds), engine.bus.subscribe(types=kinds)
        running = asyncio.create_task(
            engine.execute_tool(on_call(engine, "desk"), "mcp_new_cancel_order", {"order": canary})
        )
        await next_event(sub)
        waiting = await next_event(sub)
        (pending,) = engine.pending_elicitations()
        assert canary not in pending.message and "Do you really want to cancel order" in pending.message
        engine.answer_elicitation(waiting.elicitation_id, "accept", {"confirm": True})
        assert (await running).message == 'accept {"confirm":true}'
        log.close()
        seen = [ev.to_json() for ev in await drain(log)]
    assert len(seen) == 3 and not any(canary in line for line in seen)

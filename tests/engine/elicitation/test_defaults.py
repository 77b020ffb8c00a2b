"""SEP-1034: an accepted answer carries the schema's ``default`` for every field it leaves out (string, integer,
number, boolean, single- and multi-select enums); what the answer gives wins over the default; a default that does
not fit its field is left out with a log line, never sent. ``accept_defaults`` (``ava-engine mcp call
--accept-defaults``) answers a form with its defaults alone, and declines, naming them, when a required field has
none. Run on the desk itself with the operator's answer (the console form's route) and without anyone answering."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp.types as types
import pytest

from engine.config import load_settings
from engine.core.metrics import Metrics
from engine.elicitation.desk import ElicitationDesk
from engine.elicitation.route import Asker
from engine.events import ElicitationResolved, ElicitationWaiting, EventBus
from engine.redaction.redactor import Redactor
from engine.sessions.session import CallSession
from engine.tools.base import ToolExecutionContext

#: One field of each kind SEP-1034 gives a default to, plus one with none.
FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "minimum": 0, "maximum": 130, "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}], "default": "l"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "default": ["a", "c"]},
        "verified": {"type": "boolean", "default": True},
        "note": {"type": "string"},
    },
    "required": [],
}
ALL_DEFAULTS = {
    "name": "John Doe",
    "age": 30,
    "score": 95.5,
    "status": "active",
    "size": "l",
    "tags": ["a", "c"],
    "verified": True,
}


@pytest.fixture
def desk(tmp_path: Any) -> ElicitationDesk:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "engine: {http: {enabled: false}}\n"
        "providers: {s: {type: scripted, script: s.yaml}}\n"
        "contexts:\n"
        "  desk: {provider: s, elicitation: {ask: operator, timeout_ms: 20000}}\n"
        "  quiet: {provider: s}\n"
    )
    (tmp_path / "s.yaml").write_text("greeting: Hi.\nintents: []\nfallback: what?\n")
    settings = load_settings(cfg)
    return ElicitationDesk(EventBus(), Metrics(), lambda: settings, Redactor())


def asker(context: str) -> Asker:
    session = CallSession(call_id=f"call-{context}", context=context, provider="s")
    ctx = ToolExecutionContext(call_id=session.call_id, session=session, config=None, emit=lambda _: None)
    ctx.tool_call_id = "t1"
    return Asker("srv", "mcp_srv_ask", "ask", ctx)


def form_question(schema: dict[str, Any]) -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(message="Please accept with defaults", requested_schema=schema)


async def operator_answers(desk: ElicitationDesk, schema: dict[str, Any], content: dict[str, Any]) -> Any:
    """The question asked on a context whose questions go to the operator, who accepts with ``content``."""
    detach = desk.attach("test")
    waiting = desk.bus.subscribe(types={ElicitationWaiting.type})
    asking = asyncio.create_task(desk.elicit("srv", asker("desk"), 1, form_question(schema)))
    ev = await asyncio.wait_for(waiting.get(), 10)
    assert isinstance(ev, ElicitationWaiting)
    desk.answer(ev.elicitation_id, "accept", content)
    result = await asyncio.wait_for(asking, 10)
    waiting.close()
    detach()
    return result


async def test_omitted_fields_of_every_kind_get_their_default(desk: ElicitationDesk) -> None:
    result = await operator_answers(desk, FORM, {})
    assert result.action == "accept"
    assert result.content == ALL_DEFAULTS  # "note" has no default: it stays out


async def test_what_the_answer_gives_wins_over_the_default(desk: ElicitationDesk) -> None:
    given = {"name": "Ann", "age": 41, "status": "pending", "tags": ["b"], "verified": False, "note": "hi"}
    result = await operator_answers(desk, FORM, given)
    assert result.content == {**ALL_DEFAULTS, **given}


async def test_a_default_that_does_not_fit_its_field_is_left_out_and_logged(
    desk: ElicitationDesk, caplog: pytest.LogCaptureFixture
) -> None:
    bad = {
        "age": {"type": "integer", "default": "thirty"},
        "score": {"type": "number", "maximum": 100, "default": 250},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "unknown"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["z"]},
        "verified": {"type": "boolean", "default": "yes"},
        "mail": {"type": "string", "format": "email", "default": "not an address"},
        "name": {"type": "string", "default": "fine"},
    }
    caplog.set_level(logging.WARNING, logger="engine.elicitation")
    result = await operator_answers(desk, {"type": "object", "properties": bad}, {})
    assert (result.action, result.content) == ("accept", {"name": "fine"})
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for field in ("age", "score", "status", "tags", "verified", "mail"):
        assert f"field {field!r}" in logged, logged
    assert "server 'srv', tool 'ask'" in logged


async def test_accept_defaults_answers_with_the_defaults_alone(desk: ElicitationDesk) -> None:
    desk.accept_defaults = True
    resolved = desk.bus.subscribe(types={ElicitationResolved.type})
    result = await desk.elicit("srv", asker("quiet"), 1, form_question(FORM))  # a context that declines
    assert (result.action, result.content) == ("accept", ALL_DEFAULTS)
    done = resolved.get_nowait()
    assert isinstance(done, ElicitationResolved) and (done.action, done.by) == ("accept", "operator")
    assert "defaults" in done.reason


async def test_accept_defaults_declines_naming_the_required_fields_without_one(desk: ElicitationDesk) -> None:
    desk.accept_defaults = True
    schema = {**FORM, "required": ["name", "note", "age"]}
    schema["properties"] = {**FORM["properties"], "age": {"type": "integer", "default": "x"}}
    resolved = desk.bus.subscribe(types={ElicitationResolved.type})
    result = await desk.elicit("srv", asker("quiet"), 1, form_question(schema))
    assert (result.action, result.content) == ("decline", None)
    done = resolved.get_nowait()
    assert isinstance(done, ElicitationResolved) and done.action == "decline"
    assert "'note'" in done.reason and "'age'" in done.reason and "'name'" not in done.reason
    assert "server 'srv', tool 'ask'" in done.reason


async def test_accept_defaults_declines_a_link(desk: ElicitationDesk) -> None:
    desk.accept_defaults = True
    params = types.ElicitRequestURLParams(message="Open it", url="https://example.test/x", elicitation_id="e1")
    resolved = desk.bus.subscribe(types={ElicitationResolved.type})
    result = await desk.elicit("srv", asker("quiet"), 1, params)
    assert result.action == "decline"
    done = resolved.get_nowait()
    assert (
        isinstance(done, ElicitationResolved)
        and "asked to open a link: the form's defaults answer forms only" in done.reason
    )

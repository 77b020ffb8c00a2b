"""A server behind the endpoint that asks for input mid-call: its question goes to the endpoint's 2026 client (MRTR).

The server is the conformance fixture's ``upstream_mrtr.py`` (2026-07-28, in process); the client is the SDK's, as
an agent calling the engine would use it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    InputResponses,
    TextContent,
)
from mcp_endpoint_helpers import TOKEN, endpoint_settings
from upstream_mrtr import SERVER_ID, server_config

from engine.app import Engine
from engine.config.models import Settings
from engine.http.server import HttpServer

ELICIT = f"{SERVER_ID}_elicitation"
STATE = f"{SERVER_ID}_request_state"


def settings() -> Settings:
    mrtr = server_config()
    base = endpoint_settings(expose=[t["expose_as"] for t in mrtr["tools"]], share=[SERVER_ID])
    data = base.model_dump(mode="json", exclude_unset=True)
    data["engine"]["mcp_server"]["auth_token"] = TOKEN
    data["mcp"] = {"servers": {SERVER_ID: mrtr}}
    return Settings.model_validate(data)


@pytest.fixture
async def url() -> AsyncIterator[str]:
    engine = Engine(settings(), serve_http=True)
    await engine.start()
    try:
        http = next(c for c in engine.components if isinstance(c, HttpServer))
        yield f"{http.url}{engine.settings.engine.mcp_server.path}"
    finally:
        await engine.stop()


@asynccontextmanager
async def client(url: str, mode: str = "2026-07-28", **kw: Any) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, **kw) as c:
            yield c


async def alice(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Alice", "ok": True})


async def paris(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris"), model="m")


def text(result: Any) -> str:
    assert isinstance(result, CallToolResult), result
    return " ".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_a_2026_client_answers_the_servers_question_itself(url: str) -> None:
    asked: list[str] = []

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return await alice(context, params)

    async with client(url, elicitation_callback=answer) as c:
        result = await c.call_tool(ELICIT, {})
    assert text(result) == "Hello, Alice!" and not result.is_error
    assert asked == ["What is your name?"]


async def test_the_request_state_is_sealed_by_the_endpoint_and_a_changed_one_refused(url: str) -> None:
    async with client(url, elicitation_callback=alice) as c:
        first = await c.session.call_tool(STATE, {}, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and first.request_state
        assert first.request_state != "round-1"  # the server's plain state never reaches the client as it is
        answers: InputResponses = {"confirm": ElicitResult(action="accept", content={"ok": True})}
        done = await c.session.call_tool(
            STATE, {}, input_responses=answers, request_state=first.request_state, allow_input_required=True
        )
        assert "state-ok" in text(done)
        with pytest.raises(MCPError) as refused:
            await c.session.call_tool(
                STATE, {}, input_responses=answers, request_state=first.request_state + "x", allow_input_required=True
            )
    assert refused.value.error.code == INVALID_PARAMS


async def test_only_questions_the_client_can_answer_reach_it_else_minus_32021(url: str) -> None:
    async with client(url, sampling_callback=paris) as c:  # declares sampling, not elicitation
        both = await c.session.call_tool(f"{SERVER_ID}_capabilities", {}, allow_input_required=True)
        assert isinstance(both, InputRequiredResult)
        assert {k: r.method for k, r in (both.input_requests or {}).items()} == {"summary": "sampling/createMessage"}
    async with client(url) as c:  # declares nothing
        with pytest.raises(MCPError) as refused:
            await c.session.call_tool("test_missing_capability", {}, allow_input_required=True)
    assert refused.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.error.data == {"requiredCapabilities": {"sampling": {}}}


async def test_a_prompt_that_asks_is_answered_by_the_client_too(url: str) -> None:
    async def context(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"context": "a quiet evening"})

    async with client(url, elicitation_callback=context) as c:
        got = await c.get_prompt(f"{SERVER_ID}_prompt")
    content = got.messages[0].content
    assert isinstance(content, TextContent) and content.text == "Use this context: a quiet evening"


async def test_a_handshake_era_client_gets_no_question(url: str) -> None:
    """2025 clients have no round trip: the engine's elicitation desk answers (here, with no call to ask on, no)."""
    async with client(url, mode="legacy", elicitation_callback=alice) as c:
        result = await c.call_tool(f"{SERVER_ID}_sampling", {})
    assert result.is_error and "Paris" not in text(result)

"""A 2026-07-28 MCP server behind the conformance engine whose tools and prompt ask their caller for input (MRTR).

Why it exists: the engine's endpoint passes a server's ``InputRequiredResult`` (SEP-2322) on to the endpoint's own
2026 client, who answers it, and the answers back to the server. The suite's ``input-required-result-*`` and
``server-stateless`` scenarios drive fixed tool names (``test_input_required_result_elicitation`` …); this server,
configured as server ``test_input_required_result`` (so its prompt ``prompt`` is exposed as
``test_input_required_result_prompt``), asks the way those scenarios describe. It asks whatever it needs without
looking at anyone's capabilities: keeping the questions to what the endpoint's client declared is the engine's job.
Its ``requestState`` is plain text (``round-1``); integrity is the endpoint's seal, which it must not rely on a
server behind it for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp.types as t
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

SERVER_ID = "test_input_required_result"
TOOLS = (
    "elicitation",
    "sampling",
    "list_roots",
    "request_state",
    "multiple_inputs",
    "multi_round",
    "tampered_state",
    "capabilities",
    "missing_capability",
    "streaming_elicitation",
)
#: The tools the stateless scenario calls by other names.
EXPOSED_AS = {"missing_capability": "test_missing_capability", "streaming_elicitation": "test_streaming_elicitation"}


def _elicit(message: str, field: str, kind: str = "string") -> t.ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return t.ElicitRequest(params=t.ElicitRequestFormParams(message=message, requested_schema=schema))


def _sample(text: str, max_tokens: int) -> t.CreateMessageRequest:
    message = t.SamplingMessage(role="user", content=t.TextContent(type="text", text=text))
    return t.CreateMessageRequest(params=t.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens))


def _ask(requests: dict[str, Any], state: str | None = None) -> t.InputRequiredResult:
    return t.InputRequiredResult(input_requests=requests, request_state=state)


def _text(text: str) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(type="text", text=text)])


def _answer(responses: dict[str, Any], key: str, field: str) -> str | None:
    """The accepted elicitation answer's ``field`` under ``key``, or None when it is missing."""
    got = responses.get(key)
    if isinstance(got, t.ElicitResult) and got.action == "accept" and got.content is not None:
        value = got.content.get(field)
        return str(value) if value is not None else None
    return None


_Result = t.CallToolResult | t.InputRequiredResult


def _run(name: str, responses: dict[str, Any], state: str | None) -> _Result:
    tool = _TOOLS.get(name)
    if tool is None:
        raise MCPError(t.INVALID_PARAMS, f"Unknown tool: {name}")
    return tool(name, responses, state)


def _greeting(name: str, responses: dict[str, Any], state: str | None) -> _Result:
    who = _answer(responses, "user_name", "name")
    return _text(f"Hello, {who}!") if who else _ask({"user_name": _elicit("What is your name?", "name")})


def _sampling(name: str, responses: dict[str, Any], state: str | None) -> _Result:
    got = responses.get("capital_question")
    if isinstance(got, t.CreateMessageResult) and isinstance(got.content, t.TextContent):
        return _text(f"The model said: {got.content.text}")
    return _ask({"capital_question": _sample("What is the capital of France?", 100)})


def _roots(name: str, responses: dict[str, Any], state: str | None) -> _Result:
    got = responses.get("client_roots")
    if isinstance(got, t.ListRootsResult):
        return _text("Roots: " + ", ".join(str(r.uri) for r in got.roots))
    return _ask({"client_roots": t.ListRootsRequest()})


def _request_state(name: str, responses: dict[str, Any], state: str | None) -> _Result:
    if state == "round-1" and _answer(responses, "confirm", "ok") is not None:
        return _text("state-ok: confirmed")
    if state is not None:
        raise MCPError(t.INVALID_PARAMS, f"requestState {state!r} is not one this server minted")
    return _ask({"confirm": _elicit("Please confirm", "ok", "boolean")}, "round-1")


def _multiple_inputs(name: str, responses: dict[str, Any], state: str | None) -> _Result:
    wanted = {
        "user_name": _elicit("What is your name?", "name"),
        "greeting": _sample("Generate a greeting", 50),
        "client_roots": t.ListRootsRequest(),
    }
    missing = {k: v for k, v in wanted.items() if k not in responses}
    return _text("All three answered.") if not missing and state == "all" else _ask(missing or wanted, "all")


def _multi_round(name: str, responses: dict[str, Any], state: str | None) -> _Result:
    if state == "round-2" and _answer(responses, "step2", "color"):
        return _text(f"Favourite colour: {_answer(responses, 'step2', 'color')}")
    if state in ("round-1", "round-2") and _answer(responses, "step1", "name"):
        return _ask({"step2": _elicit("Step 2: What is your favorite color?", "color")}, "round-2")
    return _ask({"step1": _elicit("Step 1: What is your name?", "name")}, "round-1")


def _summary(name: str, responses: dict[str, Any], state: str | None) -> _Result:
    """Asks for a model's answer (and, for ``capabilities``, a person's)."""
    if isinstance(responses.get("summary"), t.CreateMessageResult):
        return _text("Summarised.")
    asks: dict[str, Any] = {"summary": _sample("Summarise the day", 50)}
    if name == "capabilities":
        asks["approval"] = _elicit("Approve the summary?", "ok", "boolean")
    return _ask(asks)


_TOOLS: dict[str, Callable[[str, dict[str, Any], str | None], _Result]] = {
    "elicitation": _greeting,
    "streaming_elicitation": _greeting,
    "sampling": _sampling,
    "list_roots": _roots,
    "request_state": _request_state,
    "tampered_state": _request_state,
    "multiple_inputs": _multiple_inputs,
    "multi_round": _multi_round,
    "capabilities": _summary,
    "missing_capability": _summary,
}


def build() -> Server[Any]:
    """The server (a factory: a fresh one for every start)."""
    empty: dict[str, Any] = {"type": "object", "properties": {}}

    async def list_tools(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
        return t.ListToolsResult(
            tools=[t.Tool(name=n, description=f"Asks for input ({n}).", input_schema=empty) for n in TOOLS]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: t.CallToolRequestParams
    ) -> t.CallToolResult | t.InputRequiredResult:
        return _run(params.name, dict(params.input_responses or {}), params.request_state)

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
    ) -> t.ListPromptsResult:
        return t.ListPromptsResult(prompts=[t.Prompt(name="prompt", description="A prompt that asks for context.")])

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams
    ) -> t.GetPromptResult | t.InputRequiredResult:
        if params.name != "prompt":
            raise MCPError(t.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        context = _answer(dict(params.input_responses or {}), "user_context", "context")
        if context is None:
            return _ask({"user_context": _elicit("What context should the prompt use?", "context")})
        text = t.TextContent(type="text", text=f"Use this context: {context}")
        return t.GetPromptResult(messages=[t.PromptMessage(role="user", content=text)])

    return Server(
        "conformance-mrtr-upstream",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def server_config() -> dict[str, Any]:
    """``mcp.servers.test_input_required_result``: this server in process, spoken to in 2026-07-28 (MRTR needs it)."""
    return {
        "transport": "inprocess",
        "target": "upstream_mrtr:build",
        "mode": "auto",  # server/discover: its capabilities (a pinned version adopts none), then 2026-07-28
        "tools": [{"name": n, "expose_as": EXPOSED_AS.get(n, f"{SERVER_ID}_{n}")} for n in TOOLS],
    }

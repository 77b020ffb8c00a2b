"""An MCP server the conformance engine proxies: the suite's resources, prompts, completion and logging tool.

Why it exists: the engine's own endpoint serves no resources or prompts of its own; it passes on those of the MCP
servers configured behind it (``mcp.servers``). The conformance suite asks for fixed names (``test_simple_prompt``,
``test://static-text`` …), so this lowlevel SDK server, configured as server ``test`` (in process, legacy mode),
serves ``simple_prompt`` (exposed as ``test_simple_prompt``), the ``test://`` resources, a template, completion
and a tool that logs — and the endpoint tests use it as the server behind the endpoint. Its ``trigger_*_change``
tools change its own tool, prompt or resource list (an ``extra`` one comes or goes) and say so with
``notifications/*/list_changed``, as a server whose lists change at run time does.
"""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from typing import Any

import mcp.types as t
from engine_fixture import red_pixel_png, short_wav
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning

TEXT = "This is the content of the static text resource."
TEMPLATE = "test://template/{id}/data"
WATCHED = "test://watched-resource"

RESOURCES = [
    t.Resource(uri="test://static-text", name="static-text", description="A static text.", mime_type="text/plain"),
    t.Resource(uri="test://static-binary", name="static-binary", description="A 1x1 PNG.", mime_type="image/png"),
    t.Resource(
        uri=WATCHED,
        name="watched",
        description="A resource that changes.",
        mime_type="text/plain",
        annotations=t.Annotations(audience=["user"], priority=0.5),
    ),
]
PROMPTS = [
    t.Prompt(name="simple_prompt", description="A simple prompt without arguments."),
    t.Prompt(
        name="prompt_with_arguments",
        description="A prompt with two arguments.",
        arguments=[
            t.PromptArgument(name="arg1", description="First test argument", required=True),
            t.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    t.Prompt(
        name="prompt_with_embedded_resource",
        description="A prompt embedding a resource.",
        arguments=[t.PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True)],
    ),
    t.Prompt(name="prompt_with_image", description="A prompt with an image."),
]
COMPLETIONS = ["paris", "park", "party"]
#: The tools that change a list (the conformance suite calls two of them: ``test_trigger_tool_change`` …).
CHANGING = ("trigger_tool_change", "trigger_prompt_change", "trigger_resource_change")
#: The tool that comes and goes, under the name the engine gives it (not configured: it is not always listed).
EXTRA_TOOL = "mcp_test_extra_tool"


def _user(content: Any) -> t.PromptMessage:
    return t.PromptMessage(role="user", content=content)


async def _log(ctx: ServerRequestContext[Any], level: t.LoggingLevel, text: str) -> None:
    with warnings.catch_warnings():  # logging: deprecated by 2026-07-28, what this handshake-era server speaks
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        sending = ctx.session.send_log_message(level, text, logger="upstream", related_request_id=ctx.request_id)
    await sending


def build() -> Server[Any]:
    """The server (a factory: a fresh one for every start)."""
    s = _Upstream()
    return Server(
        "conformance-upstream",
        version="1.0.0",
        on_list_resources=s.list_resources,
        on_list_resource_templates=s.list_templates,
        on_read_resource=s.read,
        on_subscribe_resource=s.subscribe,
        on_unsubscribe_resource=s.unsubscribe,
        on_list_prompts=s.list_prompts,
        on_get_prompt=s.get_prompt,
        on_completion=s.complete,
        on_list_tools=s.list_tools,
        on_call_tool=s.call_tool,
    )


class _Upstream:
    """One server's state (subscriptions, which extras are listed) and its request handlers."""

    def __init__(self) -> None:
        self.png = red_pixel_png()
        self.subscribed: set[str] = set()
        self.extra: dict[str, bool] = {"tool": False, "prompt": False, "resource": False}  # trigger_*_change
        self.extra_resource = t.Resource(uri="test://extra-resource", name="extra", mime_type="text/plain")

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
    ) -> t.ListResourcesResult:
        return t.ListResourcesResult(resources=RESOURCES + ([self.extra_resource] if self.extra["resource"] else []))

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
    ) -> t.ListResourceTemplatesResult:
        template = t.ResourceTemplate(
            uri_template=TEMPLATE, name="template", description="Data by id.", mime_type="application/json"
        )
        return t.ListResourceTemplatesResult(resource_templates=[template])

    async def read(self, ctx: ServerRequestContext[Any], params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        uri = str(params.uri)
        if uri == "test://static-text":
            return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/plain", text=TEXT)])
        if uri == "test://static-binary":
            return t.ReadResourceResult(
                contents=[t.BlobResourceContents(uri=uri, mime_type="image/png", blob=self.png)]
            )
        if uri == WATCHED:
            return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/plain", text="v1")])
        m = re.fullmatch(r"test://template/([^/]+)/data", uri)
        if m:
            body = json.dumps({"id": m[1], "templateTest": True, "data": f"Data for ID: {m[1]}"}, separators=(",", ":"))
            return t.ReadResourceResult(
                contents=[t.TextResourceContents(uri=uri, mime_type="application/json", text=body)]
            )
        raise MCPError(t.INVALID_PARAMS, "Resource not found", {"uri": uri})

    async def subscribe(self, ctx: ServerRequestContext[Any], params: t.SubscribeRequestParams) -> t.EmptyResult:
        self.subscribed.add(str(params.uri))
        return t.EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any], params: t.UnsubscribeRequestParams) -> t.EmptyResult:
        self.subscribed.discard(str(params.uri))
        return t.EmptyResult()

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
    ) -> t.ListPromptsResult:
        extra_prompt = t.Prompt(name="extra_prompt", description="Comes and goes.")
        return t.ListPromptsResult(prompts=PROMPTS + ([extra_prompt] if self.extra["prompt"] else []))

    async def get_prompt(self, ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams) -> t.GetPromptResult:
        args = params.arguments or {}
        if params.name == "simple_prompt":
            messages = [_user(t.TextContent(type="text", text="This is a simple prompt for testing."))]
        elif params.name == "prompt_with_arguments":
            text = f"Prompt with arguments: arg1='{args.get('arg1', '')}', arg2='{args.get('arg2', '')}'"
            messages = [_user(t.TextContent(type="text", text=text))]
        elif params.name == "prompt_with_embedded_resource":
            res = t.TextResourceContents(
                uri=args.get("resourceUri", "test://example-resource"),
                mime_type="text/plain",
                text="Embedded resource content for testing.",
            )
            messages = [
                _user(t.EmbeddedResource(type="resource", resource=res)),
                _user(t.TextContent(type="text", text="Please process the embedded resource above.")),
            ]
        elif params.name == "prompt_with_image":
            messages = [
                _user(t.ImageContent(type="image", data=self.png, mime_type="image/png")),
                _user(t.TextContent(type="text", text="Please analyze the image above.")),
            ]
        else:
            raise MCPError(t.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        return t.GetPromptResult(messages=messages)

    async def complete(self, ctx: ServerRequestContext[Any], params: t.CompleteRequestParams) -> t.CompleteResult:
        prefix = params.argument.value
        values = [v for v in COMPLETIONS if v.startswith(prefix)]
        return t.CompleteResult(completion=t.Completion(values=values, total=len(values), has_more=False))

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
    ) -> t.ListToolsResult:
        empty: dict[str, Any] = {"type": "object", "properties": {}}
        return t.ListToolsResult(
            tools=[
                t.Tool(
                    name="tool_with_logging",
                    description="Logs three times.",
                    input_schema=empty,
                    annotations=t.ToolAnnotations(read_only_hint=True, title="Logger"),
                ),
                t.Tool(name="logging_tool", description="Logs three times.", input_schema=empty),
                t.Tool(name="touch_watched", description="Changes the watched resource.", input_schema=empty),
                t.Tool(name="picture", description="Sends a picture and a sound.", input_schema=empty),
                t.Tool(name="steps", description="Reports progress twice.", input_schema=empty),
                *(
                    t.Tool(name=f"trigger_{kind}_change", description=f"Changes the {kind} list.", input_schema=empty)
                    for kind in ("tool", "prompt", "resource")
                ),
                *(
                    [t.Tool(name="extra_tool", description="Comes and goes.", input_schema=empty)]
                    if self.extra["tool"]
                    else []
                ),
            ]
        )

    async def call_tool(self, ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> t.CallToolResult:
        if params.name in ("tool_with_logging", "logging_tool"):  # the 2025 scenario's name, the 2026 one's
            for i, text in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
                if i:
                    await asyncio.sleep(0.05)
                await _log(ctx, "info", text)
            await _log(ctx, "debug", "too fine to pass on")
            return t.CallToolResult(content=[t.TextContent(type="text", text="Logged three messages.")])
        if params.name == "touch_watched":
            if WATCHED in self.subscribed:
                await ctx.session.send_resource_updated(WATCHED)
            return t.CallToolResult(
                content=[t.TextContent(type="text", text=f"Touched ({len(self.subscribed)} watching).")]
            )
        if params.name == "picture":
            return t.CallToolResult(
                content=[
                    t.TextContent(type="text", text="A red pixel and a click."),
                    t.ImageContent(type="image", data=self.png, mime_type="image/png"),
                    t.AudioContent(type="audio", data=short_wav(), mime_type="audio/wav"),
                ]
            )
        if params.name == "steps":
            for i in (1, 2):
                await ctx.session.report_progress(i, 2, f"step {i}")
            return t.CallToolResult(content=[t.TextContent(type="text", text="Two steps done.")])
        m = re.fullmatch(r"trigger_(tool|prompt|resource)_change", params.name)
        if m:
            kind = m[1]
            self.extra[kind] = not self.extra[kind]
            if kind == "tool":
                await ctx.session.send_tool_list_changed()
            elif kind == "prompt":
                await ctx.session.send_prompt_list_changed()
            else:
                await ctx.session.send_resource_list_changed()
            state = "added" if self.extra[kind] else "removed"
            return t.CallToolResult(content=[t.TextContent(type="text", text=f"extra {kind} {state}")])
        if params.name == "extra_tool":
            return t.CallToolResult(content=[t.TextContent(type="text", text="Here for now.")])
        raise MCPError(t.INVALID_PARAMS, f"Unknown tool: {params.name}")


def server_config(named: bool = True) -> dict[str, Any]:
    """``mcp.servers.test``: this server in process, handshake era (it logs unasked), its tools named as the suite
    names them (``test_tool_with_logging``) when ``named`` (a second copy of the server must not claim them too)."""
    names = ("tool_with_logging", "logging_tool", "touch_watched", "steps", "picture", *CHANGING) if named else ()
    return {
        "transport": "inprocess",
        "target": "upstream:build",
        "mode": "legacy",
        "tools": [{"name": n, "expose_as": f"test_{n}"} for n in names],
    }

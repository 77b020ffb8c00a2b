"""Builders shared by the core engine tests: settings with a scripted context and in-process tools."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from engine.app import Engine
from engine.config.models import Settings
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult


def settings_with(tmp_path: Path, intents: list[dict[str, Any]], tools: list[str], **extra: Any) -> Settings:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"greeting": "hi", "intents": intents, "fallback": "what?"}))
    raw: dict[str, Any] = {
        "providers": {"s": {"type": "scripted", "script": str(script)}},
        "contexts": {"c": {"provider": "s", "tools": tools}},
    }
    raw.update(extra)
    return Settings.model_validate(raw)


def echo_tool(name: str = "echo", delay: float = 0.0, fail: Exception | None = None) -> FunctionTool:
    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        if delay:
            await asyncio.sleep(delay)
        if fail is not None:
            raise fail
        return ToolResult.success(f"echo {args.get('text', '')}", {"args": args})

    return FunctionTool(
        ToolDefinition(
            name=name,
            description="Echo the text back.",
            parameters=(ToolParameter("text", "string", "what to echo", required=True),),
        ),
        run,
    )


def engine_with(settings: Settings, *tools: FunctionTool) -> Engine:
    return Engine(settings, extra_tools=list(tools))

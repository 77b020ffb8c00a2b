"""Anthropic Messages (``POST {base_url}/v1/messages``), streamed over SSE.

Rendered from the canonical history per request (reference/wire-formats.md §4): the system prompt goes in the
top-level ``system``; each tool round is an assistant message of ``tool_use`` blocks (object arguments) followed
by ONE user message whose ``tool_result`` blocks come first (``is_error`` for failed calls); consecutive
same-role messages are merged so roles alternate, and a conversation that opens with the greeting gets a short
user turn in front (the API wants the user to speak first). Withheld tools are sent with ``tool_choice: none``
because a request whose history holds ``tool_use`` blocks must still define tools.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import aiohttp

from engine.providers.base import ProviderError, Turn
from engine.providers.http import sse_events
from engine.providers.ids import provider_call_id
from engine.providers.rendering import RenderedTools
from engine.providers.textloop import (
    CALL_OPENED,
    HttpRequest,
    ModelOutput,
    RawCall,
    TextProvider,
    ToolMode,
    ToolRound,
    alternating_turns,
    call_arguments_object,
    emit_text,
    result_text,
    segments,
)
from engine.sessions.history import HistoryItem, Message
from engine.usage import report as usage

API_VERSION = "2023-06-01"


def _is_tool_result(block: dict[str, Any]) -> bool:
    return block.get("type") == "tool_result"  # a user message that carries tool results must have them first


class AnthropicProvider(TextProvider):
    type = "anthropic"
    default_base_url = "https://api.anthropic.com"

    def messages(self, history: Sequence[HistoryItem], tools: RenderedTools) -> tuple[list[dict[str, Any]], list[str]]:
        raw: list[dict[str, Any]] = []
        system: list[str] = []
        for seg in segments(history):
            if isinstance(seg, Message):
                if seg.role == "system":
                    system.append(seg.text)
                elif seg.text:
                    raw.append({"role": seg.role, "content": [{"type": "text", "text": seg.text}]})
                continue
            assert isinstance(seg, ToolRound)
            raw.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": provider_call_id(self.type, c.id),
                            "name": tools.names.provider_name(c.name),
                            "input": call_arguments_object(c),
                        }
                        for c in seg.calls
                    ],
                }
            )
            blocks: list[dict[str, Any]] = []
            for r in seg.results:
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": provider_call_id(self.type, r.call_id),
                    "content": result_text(r),
                }
                if r.status != "success":
                    block["is_error"] = True
                blocks.append(block)
            raw.append({"role": "user", "content": blocks})
        opener = {"type": "text", "text": CALL_OPENED}
        return alternating_turns(raw, "content", opener, leading=_is_tool_result), system

    def build_request(
        self, turn: Turn, history: Sequence[HistoryItem], tools: RenderedTools, mode: ToolMode, state: dict[str, Any]
    ) -> HttpRequest:
        messages, system = self.messages(history, tools)
        if turn.system_prompt:
            system.insert(0, turn.system_prompt)
        payload: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens or int(self.config.options.get("default_max_tokens", 1024)),
            "messages": messages,
        }
        if system:
            payload["system"] = "\n\n".join(system)
        if mode != "off":
            payload["tools"] = tools.tools
            payload["tool_choice"] = {"type": mode}
        payload.update(self.sampling())
        if self.stream:
            payload["stream"] = True
        headers = self.json_headers("x-api-key", self.api_key, {"anthropic-version": API_VERSION})
        return HttpRequest(f"{self.base_url}/v1/messages", payload, headers, self.stream)

    async def read_response(self, resp: aiohttp.ClientResponse, turn: Turn, stream: bool) -> ModelOutput:
        if not stream:
            data = await resp.json(content_type=None)
            text = "".join(b.get("text", "") for b in data.get("content", []) if b.get("type") == "text")
            calls = [
                RawCall(b["name"], b.get("input") or {}, b.get("id"))
                for b in data.get("content", [])
                if b.get("type") == "tool_use"
            ]
            await emit_text(turn, text)
            return ModelOutput(text, calls, data.get("stop_reason") or "", usage.anthropic(data.get("usage")))
        parts: list[str] = []
        blocks: dict[int, dict[str, Any]] = {}
        finish = ""
        used: dict[str, Any] = {}  # message_start's usage, updated by message_delta's (cumulative) counts
        async for event, data in sse_events(resp):
            ev = json.loads(data)
            kind = ev.get("type", event)
            if kind == "error":
                err = ev.get("error") or {}
                raise ProviderError(self.name, f"{err.get('message', 'stream error')} ({err.get('type', 'error')})")
            if kind == "message_start":
                used.update((ev.get("message") or {}).get("usage") or {})
            elif kind == "content_block_start":
                block = ev["content_block"]
                blocks[ev["index"]] = {
                    "type": block["type"],
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "json": "",
                }
                if block.get("type") == "text" and block.get("text"):
                    parts.append(block["text"])
                    await emit_text(turn, block["text"])
            elif kind == "content_block_delta":
                delta = ev["delta"]
                if delta.get("type") == "text_delta":
                    parts.append(delta["text"])
                    await emit_text(turn, delta["text"])
                elif delta.get("type") == "input_json_delta":
                    blocks[ev["index"]]["json"] += delta.get("partial_json", "")
            elif kind == "message_delta":
                finish = (ev.get("delta") or {}).get("stop_reason") or finish
                used.update({k: v for k, v in (ev.get("usage") or {}).items() if v is not None})
            elif kind == "message_stop":
                break
        calls = [
            RawCall(b["name"], b["json"] or "{}", b["id"]) for _, b in sorted(blocks.items()) if b["type"] == "tool_use"
        ]
        return ModelOutput("".join(parts), calls, finish, usage.anthropic(used) if used else None)

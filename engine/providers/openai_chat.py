"""OpenAI Chat Completions (``POST {base_url}/chat/completions``), streamed over SSE.

Also the adapter for everything that speaks the same API: Azure OpenAI (``options.auth_header: api-key`` and
``options.query: {api-version: …}``), OpenRouter, vLLM, LM Studio, Ollama's ``/v1``. Requests are rendered from
the canonical history each time: an assistant message carrying ``tool_calls`` (JSON-string arguments) followed
by one ``tool`` message per call (reference/wire-formats.md §1).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import aiohttp

from engine.providers.base import Turn
from engine.providers.http import sse_events
from engine.providers.ids import provider_call_id
from engine.providers.rendering import RenderedTools
from engine.providers.textloop import (
    HttpRequest,
    ModelOutput,
    RawCall,
    TextProvider,
    ToolMode,
    ToolRound,
    call_arguments_json,
    emit_text,
    result_text,
    segments,
)
from engine.sessions.history import HistoryItem, Message
from engine.usage import report as usage


def auth_headers(provider: TextProvider) -> dict[str, str]:
    """Bearer auth by default; ``options.auth_header`` names another header (Azure: ``api-key``)."""
    header = str(provider.config.options.get("auth_header", "Authorization"))
    key = provider.api_key
    return provider.json_headers(header, f"Bearer {key}" if header.lower() == "authorization" else key)


def with_query(provider: TextProvider, url: str) -> str:
    query = provider.config.options.get("query")
    if isinstance(query, dict) and query:
        return url + ("&" if "?" in url else "?") + urlencode({str(k): str(v) for k, v in query.items()})
    return url


def said_before(out: list[dict[str, Any]]) -> str | None:
    """The assistant's words just before a tool round, taken off ``out`` to share the round's message (the API's
    own shape: one assistant message with ``content`` and ``tool_calls``)."""
    last = out[-1] if out else None
    if last is not None and last["role"] == "assistant" and not last.get("tool_calls") and last.get("content"):
        out.pop()
        return str(last["content"])
    return None


class OpenAIChatProvider(TextProvider):
    type = "openai_chat"
    default_base_url = "https://api.openai.com/v1"

    def messages(self, turn: Turn, history: Sequence[HistoryItem], tools: RenderedTools) -> list[dict[str, Any]]:
        role = str(self.config.options.get("system_role", "system"))
        out: list[dict[str, Any]] = []
        if turn.system_prompt:
            out.append({"role": role, "content": turn.system_prompt})
        for seg in segments(history):
            if isinstance(seg, Message):
                out.append({"role": role if seg.role == "system" else seg.role, "content": seg.text})
                continue
            assert isinstance(seg, ToolRound)
            out.append(
                {
                    "role": "assistant",
                    "content": said_before(out),
                    "tool_calls": [
                        {
                            "id": provider_call_id(self.type, c.id),
                            "type": "function",
                            "function": {
                                "name": tools.names.provider_name(c.name),
                                "arguments": call_arguments_json(c),
                            },
                        }
                        for c in seg.calls
                    ],
                }
            )
            for r in seg.results:
                out.append(
                    {"role": "tool", "tool_call_id": provider_call_id(self.type, r.call_id), "content": result_text(r)}
                )
        return out

    def build_request(
        self, turn: Turn, history: Sequence[HistoryItem], tools: RenderedTools, mode: ToolMode, state: dict[str, Any]
    ) -> HttpRequest:
        payload: dict[str, Any] = {"model": self.config.model, "messages": self.messages(turn, history, tools)}
        if mode != "off":
            payload["tools"] = tools.tools
            payload["tool_choice"] = mode
            if mode == "auto" and tools.strict_originals:
                payload["parallel_tool_calls"] = False  # strict arguments are not guaranteed for parallel calls
        payload.update(self.sampling())
        if self.config.max_tokens is not None:
            payload["max_completion_tokens"] = self.config.max_tokens
        if self.stream:
            payload["stream"] = True
            if self.config.options.get("stream_usage", True):  # the last chunk then carries ``usage``
                payload["stream_options"] = {"include_usage": True}
        url = with_query(self, f"{self.base_url}/chat/completions")
        return HttpRequest(url, payload, auth_headers(self), self.stream)

    async def read_response(self, resp: aiohttp.ClientResponse, turn: Turn, stream: bool) -> ModelOutput:
        if not stream:
            data = await resp.json(content_type=None)
            self.raise_embedded_error(data)
            choice = (data.get("choices") or [{}])[0]
            msg = choice.get("message") or {}
            calls = [
                RawCall(tc["function"]["name"], tc["function"].get("arguments"), tc.get("id"))
                for tc in msg.get("tool_calls") or []
                if tc.get("type", "function") == "function"
            ]
            text = msg.get("content") or ""
            await emit_text(turn, text)
            return ModelOutput(text, calls, choice.get("finish_reason") or "", usage.openai_chat(data.get("usage")))
        parts: list[str] = []
        acc: dict[int, dict[str, Any]] = {}
        finish = ""
        used = None
        async for _event, data in sse_events(resp):
            if data.strip() == "[DONE]":
                break
            chunk = json.loads(data)
            self.raise_embedded_error(chunk)
            used = usage.openai_chat(chunk.get("usage")) or used
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    parts.append(delta["content"])
                    await emit_text(turn, delta["content"])
                for tc in delta.get("tool_calls") or []:
                    slot = acc.setdefault(int(tc.get("index", len(acc))), {"id": None, "name": "", "args": ""})
                    slot["id"] = tc.get("id") or slot["id"]
                    fn = tc.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["args"] += fn.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
        calls = [RawCall(s["name"], s["args"], s["id"]) for _, s in sorted(acc.items())]
        return ModelOutput("".join(parts), calls, finish, used)

"""OpenAI Responses (``POST {base_url}/responses``), streamed over SSE, stateless (``store: false``).

The whole input is rendered from the canonical history on every request instead of chaining
``previous_response_id``, so switching provider or restarting a turn never depends on server-side state
(reference/wire-formats.md §2): each tool round is its ``function_call`` items followed by one
``function_call_output`` per call with the same ``call_id``. Tools are flat (``{type, name, parameters,
strict}``) and ``strict`` is always sent explicitly because Responses defaults to strict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import aiohttp

from engine.providers.base import ProviderError, Turn
from engine.providers.http import sse_events
from engine.providers.ids import provider_call_id
from engine.providers.openai_chat import auth_headers, with_query
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


class OpenAIResponsesProvider(TextProvider):
    type = "openai_responses"
    default_base_url = "https://api.openai.com/v1"

    def input_items(self, history: Sequence[HistoryItem], tools: RenderedTools) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for seg in segments(history):
            if isinstance(seg, Message):
                out.append({"role": "developer" if seg.role == "system" else seg.role, "content": seg.text})
                continue
            assert isinstance(seg, ToolRound)
            for c in seg.calls:
                out.append(
                    {
                        "type": "function_call",
                        "call_id": provider_call_id(self.type, c.id),
                        "name": tools.names.provider_name(c.name),
                        "arguments": call_arguments_json(c),
                    }
                )
            for r in seg.results:
                out.append(
                    {
                        "type": "function_call_output",
                        "call_id": provider_call_id(self.type, r.call_id),
                        "output": result_text(r),
                    }
                )
        return out

    def build_request(
        self, turn: Turn, history: Sequence[HistoryItem], tools: RenderedTools, mode: ToolMode, state: dict[str, Any]
    ) -> HttpRequest:
        payload: dict[str, Any] = {
            "model": self.config.model,
            "input": self.input_items(history, tools),
            "store": bool(self.config.options.get("store", False)),
        }
        if turn.system_prompt:
            payload["instructions"] = turn.system_prompt
        if mode != "off":
            payload["tools"] = tools.tools
            payload["tool_choice"] = mode
            if mode == "auto" and tools.strict_originals:
                payload["parallel_tool_calls"] = False
        payload.update(self.sampling())
        if self.config.max_tokens is not None:
            payload["max_output_tokens"] = self.config.max_tokens
        if self.stream:
            payload["stream"] = True
        return HttpRequest(with_query(self, f"{self.base_url}/responses"), payload, auth_headers(self), self.stream)

    async def _item(self, item: dict[str, Any], turn: Turn, out: ModelOutput, emit: bool) -> None:
        if item.get("type") == "function_call":
            out.calls.append(RawCall(item.get("name", ""), item.get("arguments"), item.get("call_id")))
        elif item.get("type") == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    out.text += part.get("text", "")
                    if emit:
                        await emit_text(turn, part.get("text", ""))

    async def read_response(self, resp: aiohttp.ClientResponse, turn: Turn, stream: bool) -> ModelOutput:
        out = ModelOutput()
        if not stream:
            data = await resp.json(content_type=None)
            self.raise_embedded_error(data)
            for item in data.get("output") or []:
                await self._item(item, turn, out, emit=True)
            out.finish = data.get("status", "")
            out.usage = usage.openai_responses(data.get("usage"))
            return out
        streamed = ""
        async for event, data in sse_events(resp):
            ev = json.loads(data)
            kind = ev.get("type", event)
            if kind == "response.output_text.delta":
                streamed += ev.get("delta", "")
                await emit_text(turn, ev.get("delta", ""))
            elif kind == "response.output_item.done":
                await self._item(ev.get("item") or {}, turn, out, emit=False)
            elif kind in ("response.completed", "response.incomplete"):
                out.finish = (ev.get("response") or {}).get("status", kind)
                out.usage = usage.openai_responses((ev.get("response") or {}).get("usage"))
                break
            elif kind == "response.failed":
                self.raise_embedded_error(ev.get("response") or {})
                raise ProviderError(self.name, "response failed")
            elif kind == "error":
                raise ProviderError(self.name, str(ev.get("message") or ev))
        out.text = out.text or streamed
        return out

"""Ollama's native chat API (``POST {base_url}/api/chat``), streamed as newline-delimited JSON.

Rendered per request from the canonical history (reference/wire-formats.md §9): an assistant message with
``tool_calls`` (object arguments) followed by one ``tool`` message per call, in call order, naming the tool in
``tool_name``. Ollama has no ``tool_choice``, so withheld tools are simply left out of the request. A local
server needs no key; ``api_key`` (ollama.com) is sent as a bearer token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiohttp

from engine.providers.base import ProviderError, Turn
from engine.providers.http import ndjson_lines
from engine.providers.openai_chat import said_before
from engine.providers.rendering import RenderedTools
from engine.providers.textloop import (
    HttpRequest,
    ModelOutput,
    RawCall,
    TextProvider,
    ToolMode,
    ToolRound,
    call_arguments_object,
    emit_text,
    result_text,
    segments,
)
from engine.sessions.history import HistoryItem, Message
from engine.usage import report as usage


class OllamaProvider(TextProvider):
    type = "ollama"
    default_base_url = "http://127.0.0.1:11434"

    def tool_mode(self, tools: RenderedTools, allowed: bool) -> ToolMode:
        return "auto" if tools.count and allowed else "off"

    def messages(self, turn: Turn, history: Sequence[HistoryItem], tools: RenderedTools) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if turn.system_prompt:
            out.append({"role": "system", "content": turn.system_prompt})
        for seg in segments(history):
            if isinstance(seg, Message):
                out.append({"role": seg.role, "content": seg.text})
                continue
            assert isinstance(seg, ToolRound)
            out.append(
                {
                    "role": "assistant",
                    "content": said_before(out) or "",
                    "tool_calls": [
                        {"function": {"name": tools.names.provider_name(c.name), "arguments": call_arguments_object(c)}}
                        for c in seg.calls
                    ],
                }
            )
            for r in seg.results:
                out.append({"role": "tool", "tool_name": tools.names.provider_name(r.name), "content": result_text(r)})
        return out

    def build_request(
        self, turn: Turn, history: Sequence[HistoryItem], tools: RenderedTools, mode: ToolMode, state: dict[str, Any]
    ) -> HttpRequest:
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": self.messages(turn, history, tools),
            "stream": self.stream,
        }
        if mode == "auto":
            payload["tools"] = tools.tools
        options: dict[str, Any] = dict(self.config.options.get("model_options") or {})
        if self.config.temperature is not None:
            options["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            options["num_predict"] = self.config.max_tokens
        if options:
            payload["options"] = options
        if "keep_alive" in self.config.options:
            payload["keep_alive"] = self.config.options["keep_alive"]
        headers = self.json_headers("Authorization", f"Bearer {self.api_key}")
        return HttpRequest(f"{self.base_url}/api/chat", payload, headers, self.stream)

    async def _chunk(self, data: dict[str, Any], turn: Turn, out: ModelOutput) -> None:
        if isinstance(data.get("error"), str):
            raise ProviderError(self.name, data["error"])
        msg = data.get("message") or {}
        if msg.get("content"):
            out.text += msg["content"]
            await emit_text(turn, msg["content"])
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function") or {}
            out.calls.append(RawCall(fn.get("name", ""), fn.get("arguments") or {}, tc.get("id")))
        if data.get("done"):
            out.finish = data.get("done_reason") or "stop"
            out.usage = usage.ollama(data)

    async def read_response(self, resp: aiohttp.ClientResponse, turn: Turn, stream: bool) -> ModelOutput:
        out = ModelOutput()
        if not stream:
            await self._chunk(await resp.json(content_type=None), turn, out)
            return out
        async for data in ndjson_lines(resp):
            await self._chunk(data, turn, out)
            if data.get("done"):
                break
        return out

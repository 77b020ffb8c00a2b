"""Google Gemini ``generateContent`` (``{base_url}/models/{model}:streamGenerateContent?alt=sse``).

Rendered per request from the canonical history (reference/wire-formats.md §5): tool rounds are a ``model``
content of ``functionCall`` parts (object arguments; the model's ``thoughtSignature``, kept with the call in the
canonical history, echoed back unchanged in every later request — also after the call moved to another provider
and back) and one ``user`` content of ``functionResponse`` parts in the same order, with the
result under ``output`` or, for failures, ``error``. Declarations use ``parametersJsonSchema`` (full JSON
Schema) unless ``options.gemini_schema: openapi`` asks for the legacy OpenAPI subset. The key travels in the
``x-goog-api-key`` header, never in the URL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import aiohttp

from engine.providers.base import Turn
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
    segments,
)
from engine.sessions.history import HistoryItem, Message, ToolResultItem
from engine.usage import report as usage


class GeminiProvider(TextProvider):
    type = "gemini"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"

    def contents(
        self,
        history: Sequence[HistoryItem],
        tools: RenderedTools,
        signatures: Mapping[str, str] | None = None,
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """Contents and system texts; ``signatures`` (canonical id -> signature) adds to what the calls carry."""
        raw: list[dict[str, Any]] = []
        system: list[str] = []
        for seg in segments(history):
            if isinstance(seg, Message):
                if seg.role == "system":
                    system.append(seg.text)
                elif seg.text:
                    raw.append({"role": "model" if seg.role == "assistant" else "user", "parts": [{"text": seg.text}]})
                continue
            assert isinstance(seg, ToolRound)
            parts: list[dict[str, Any]] = []
            for c in seg.calls:
                part: dict[str, Any] = {
                    "functionCall": {
                        "id": provider_call_id(self.type, c.id),
                        "name": tools.names.provider_name(c.name),
                        "args": call_arguments_object(c),
                    }
                }
                sig = c.meta_for(self.type).get("thoughtSignature") or (signatures or {}).get(c.id)
                if isinstance(sig, str):  # echoed on the part that carried it, in every later request
                    part["thoughtSignature"] = sig
                parts.append(part)
            raw.append({"role": "model", "parts": parts})
            raw.append({"role": "user", "parts": [self.function_response(r, tools) for r in seg.results]})
        return alternating_turns(raw, "parts", {"text": CALL_OPENED}), system

    def function_response(self, r: ToolResultItem, tools: RenderedTools) -> dict[str, Any]:
        key = "output" if r.status == "success" else "error"
        return {
            "functionResponse": {
                "id": provider_call_id(self.type, r.call_id),
                "name": tools.names.provider_name(r.name),
                "response": {key: r.payload()},
            }
        }

    def build_request(
        self, turn: Turn, history: Sequence[HistoryItem], tools: RenderedTools, mode: ToolMode, state: dict[str, Any]
    ) -> HttpRequest:
        contents, system = self.contents(history, tools)
        if turn.system_prompt:
            system.insert(0, turn.system_prompt)
        payload: dict[str, Any] = {"contents": contents}
        if system:
            payload["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
        if mode != "off":
            payload["tools"] = tools.tools
            payload["toolConfig"] = {"functionCallingConfig": {"mode": mode.upper()}}
        gen: dict[str, Any] = {}
        if self.config.temperature is not None:
            gen["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            gen["maxOutputTokens"] = self.config.max_tokens
        if gen:
            payload["generationConfig"] = gen
        model = str(self.config.model)
        model = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        method = "streamGenerateContent?alt=sse" if self.stream else "generateContent"
        url = f"{self.base_url}/{quote(model, safe='/')}:{method}"
        return HttpRequest(url, payload, self.json_headers("x-goog-api-key", self.api_key), self.stream)

    async def _chunk(self, data: dict[str, Any], turn: Turn, out: ModelOutput) -> None:
        self.raise_embedded_error(data)
        out.usage = usage.gemini(data.get("usageMetadata")) or out.usage  # each chunk's counts are the running ones
        for cand in (data.get("candidates") or [])[:1]:
            for part in (cand.get("content") or {}).get("parts") or []:
                if "functionCall" in part:
                    fc = part["functionCall"]
                    extra = {"thoughtSignature": part["thoughtSignature"]} if "thoughtSignature" in part else {}
                    out.calls.append(RawCall(fc.get("name", ""), fc.get("args") or {}, fc.get("id"), extra))
                elif isinstance(part.get("text"), str) and not part.get("thought"):
                    out.text += part["text"]
                    await emit_text(turn, part["text"])
            out.finish = cand.get("finishReason") or out.finish

    async def read_response(self, resp: aiohttp.ClientResponse, turn: Turn, stream: bool) -> ModelOutput:
        out = ModelOutput()
        if not stream:
            await self._chunk(await resp.json(content_type=None), turn, out)
            return out
        async for _event, data in sse_events(resp):
            await self._chunk(json.loads(data), turn, out)
        return out

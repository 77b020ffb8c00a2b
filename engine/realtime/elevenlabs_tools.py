"""ElevenLabs Agents: the REST side — client tools pushed from the engine's tool view, the signed URL, the agent.

Why it exists: an ElevenLabs agent learns its tools from its stored configuration, not from the conversation
socket (reference/wire-formats.md §8.1). So that nobody maintains schemas by hand in a dashboard, the adapter
renders the call's tool view as client tools (``type: client``, ``expects_response: true``, a
``response_timeout_secs`` a little longer than the engine's own timeout so the engine's error result arrives
first, ``pre_tool_speech: force`` for slow tools — ElevenLabs' own way of talking before a slow tool —, and
``interruption_mode: disable_during_tool`` for tools that are not idempotent, because ElevenLabs has no
per-call cancel) and keeps them in the tools API (``/v1/convai/tools``; the legacy inline
``conversation_config.agent.prompt.tools`` was removed by ElevenLabs in July 2025), linked to the agent by
``prompt.tool_ids``. Pushing is idempotent: a tool is created or patched only when the agent's tool of that name
differs from the rendering, and the agent is patched only when its list of tool ids changes (or when it does not
yet send the client events the adapter reads, e.g. ``interruption``); the agent's non-client tools (webhooks,
system tools) are left alone. Every request sends the key as ``xi-api-key`` and
every failure becomes one ``ProviderError`` without it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp

from engine.providers.base import ProviderError
from engine.providers.http import HttpClient, HttpSettings
from engine.providers.rendering import RenderedTools, render_tools
from engine.tools.base import ToolDefinition
from engine.tools.view import ToolView

DEFAULT_BASE_URL = "https://api.elevenlabs.io"
#: The engine's default tool timeout (``engine.tool_timeout_ms``) when a tool declares none.
DEFAULT_TOOL_TIMEOUT_MS = 10_000
#: Seconds ElevenLabs waits beyond the engine's timeout, so the engine's own (error) result is what it hears.
TIMEOUT_MARGIN_S = 5
#: The budget layer's default ``slow_response_threshold_ms``: above it a tool is slow and the agent speaks first.
SLOW_THRESHOLD_MS = 1500
#: Server events the adapter needs the agent to send (``conversation.client_events``; an agent sends only those).
CLIENT_EVENTS = (
    "audio",
    "interruption",
    "user_transcript",
    "agent_response",
    "agent_response_complete",
    "client_tool_call",
    "ping",
)
_HINTS = {
    401: "authentication failed (check the API key)",
    403: "access denied (the key lacks the Agents or tools permission)",
    404: "not found (check agent_id and base_url)",
    422: "ElevenLabs rejected the request",
    429: "rate limit or quota exceeded",
}


#: ``options`` an elevenlabs_agent provider takes, with their defaults (all numbers >= 0).
OPTIONS = {"retry_backoff_ms": 500.0, "reconnect_attempts": 3.0, "reconnect_backoff_ms": 500.0}


def provider_options(name: str, options: Mapping[str, Any]) -> dict[str, float]:
    """``providers.<name>.options`` checked (unknown keys and values that are not numbers >= 0 are named)."""
    if unknown := sorted(set(options) - set(OPTIONS)):
        raise ValueError(f"providers.{name}.options: unknown {unknown} (known: {', '.join(OPTIONS)})")
    out: dict[str, float] = {}
    for key, default in OPTIONS.items():
        value = options.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"providers.{name}.options.{key}: a number >= 0, not {value!r}")
        out[key] = float(value)
    return out


def response_timeout_s(d: ToolDefinition | None) -> int:
    ms = (d.timeout_ms or d.latency.max_duration_ms) if d is not None else None
    return max(1, min(120, math.ceil((ms or DEFAULT_TOOL_TIMEOUT_MS) / 1000) + TIMEOUT_MARGIN_S))


def is_slow(d: ToolDefinition) -> bool:
    expected = d.latency.estimated_duration_ms
    return expected is not None and expected > (d.slow_response_threshold_ms or SLOW_THRESHOLD_MS)


def client_tools(view: ToolView) -> tuple[RenderedTools, list[dict[str, Any]]]:
    """The view rendered by the project's renderer for ``elevenlabs_agent``, with the per-tool settings above."""
    rendered = render_tools("elevenlabs_agent", view)
    defs = {d.name: d for d in view.definitions()}
    out: list[dict[str, Any]] = []
    for tool in rendered.tools:
        d = defs.get(rendered.names.exposed_name(str(tool["name"])))
        cfg = {**tool, "response_timeout_secs": response_timeout_s(d)}
        if d is not None:
            cfg["pre_tool_speech"] = "force" if is_slow(d) else "auto"
            cfg["interruption_mode"] = "allow" if d.latency.idempotent else "disable_during_tool"
        out.append(cfg)
    return rendered, out


def covers(actual: Any, wanted: Any) -> bool:
    """Whether ``actual`` (as ElevenLabs returns it, with its defaults filled in) says everything ``wanted`` says."""
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(k in actual and covers(actual[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(wanted)
            and all(covers(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


@dataclass(frozen=True, slots=True)
class SyncResult:
    """The agent's client tools after a push: their ids and what had to change."""

    tool_ids: tuple[str, ...]
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    agent_patched: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.agent_patched)


class ElevenLabsRest:
    """The few REST calls the adapter makes, with ``xi-api-key`` auth and clear, key-free errors."""

    def __init__(self, provider: str, base_url: str, api_key: str, settings: HttpSettings) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.http = HttpClient(provider, settings, (api_key,))

    async def aclose(self) -> None:
        await self.http.aclose()

    async def call(
        self, method: str, path: str, query: Mapping[str, str] | None = None, body: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        url = self.base_url + path + (f"?{urlencode(query)}" if query else "")
        headers = {"xi-api-key": self.api_key, "Accept": "application/json"}

        async def read(resp: aiohttp.ClientResponse) -> dict[str, Any]:
            data = await resp.json(content_type=None)
            if not isinstance(data, dict):
                raise ProviderError(self.provider, f"{method} {path}: expected a JSON object from ElevenLabs")
            return data

        try:
            return await self.http.request(method, url, body, headers, read)
        except ProviderError as e:
            hint = _HINTS.get(e.status or 0)
            if hint is None:
                raise
            detail = str(e).split(": ", 1)[-1]
            raise ProviderError(self.provider, f"{hint}: {method} {path}: {detail}", e.status) from None
        except ValueError as e:  # a 2xx body that is not JSON
            raise ProviderError(self.provider, f"{method} {path}: unreadable answer ({e})") from None

    async def signed_url(self, agent_id: str) -> str:
        data = await self.call("GET", "/v1/convai/conversation/get-signed-url", {"agent_id": agent_id})
        url = data.get("signed_url")
        if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
            raise ProviderError(self.provider, "the signed-URL answer carries no WebSocket URL")
        return url

    async def agent(self, agent_id: str) -> dict[str, Any]:
        return await self.call("GET", f"/v1/convai/agents/{agent_id}")

    async def check(self, agent_id: str) -> dict[str, Any]:
        """The key, the agent and the conversation permission, proven without opening a conversation: the agent
        and a signed URL (``ProviderError`` naming the failing step otherwise, never the key)."""
        agent = await self.agent(agent_id)
        await self.signed_url(agent_id)
        conv = agent.get("conversation_config")
        conv = conv if isinstance(conv, Mapping) else {}
        asr, tts = conv.get("asr"), conv.get("tts")
        return {
            "agent_id": agent_id,
            "agent_name": agent.get("name"),
            "input_format": asr.get("user_input_audio_format") if isinstance(asr, Mapping) else None,
            "output_format": tts.get("agent_output_audio_format") if isinstance(tts, Mapping) else None,
            "client_tools": len(prompt_of(agent).get("tool_ids") or []),
        }

    async def agent_client_tools(self, agent_id: str) -> list[dict[str, Any]]:
        """The client tools linked to the agent (every page)."""
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(100):  # at most 100 pages of tools
            query = {"used_by_agent_id": agent_id, "types": "client", "page_size": "100"}
            if cursor:
                query["cursor"] = cursor
            data = await self.call("GET", "/v1/convai/tools", query)
            out.extend(t for t in data.get("tools") or [] if isinstance(t, dict))
            cursor = data.get("next_cursor") if data.get("has_more") else None
            if not cursor:
                break
        return out

    async def sync_tools(
        self, agent_id: str, agent: Mapping[str, Any], configs: Sequence[dict[str, Any]]
    ) -> SyncResult:
        """Make the agent's client tools exactly ``configs`` (create, patch, link, unlink only what differs)."""
        existing = {
            str(t["tool_config"].get("name")): t
            for t in await self.agent_client_tools(agent_id)
            if isinstance(t.get("tool_config"), dict) and isinstance(t.get("id"), str)
        }
        ids: list[str] = []
        created: list[str] = []
        updated: list[str] = []
        for cfg in configs:
            name = str(cfg["name"])
            have = existing.get(name)
            if have is None:
                made = await self.call("POST", "/v1/convai/tools", body={"tool_config": cfg})
                if not isinstance(made.get("id"), str):
                    raise ProviderError(self.provider, f"creating client tool {name!r} returned no id")
                ids.append(made["id"])
                created.append(name)
                continue
            if not covers(have["tool_config"], cfg):
                await self.call("PATCH", f"/v1/convai/tools/{have['id']}", body={"tool_config": cfg})
                updated.append(name)
            ids.append(str(have["id"]))
        current = [str(i) for i in prompt_of(agent).get("tool_ids") or []]
        ours = {str(t["id"]) for t in existing.values()}
        wanted = [i for i in current if i not in ours] + ids  # the agent's other tools stay, in their order
        config: dict[str, Any] = {}
        if set(wanted) != set(current):
            config["agent"] = {"prompt": {"tool_ids": wanted}}
        events = client_events(agent)
        if missing := [e for e in CLIENT_EVENTS if e not in events]:
            config["conversation"] = {"client_events": events + missing}
        if config:
            await self.call("PATCH", f"/v1/convai/agents/{agent_id}", body={"conversation_config": config})
        return SyncResult(tuple(ids), tuple(created), tuple(updated), bool(config))


def prompt_of(agent: Mapping[str, Any]) -> Mapping[str, Any]:
    """``conversation_config.agent.prompt`` of an agent answer (empty when absent)."""
    node: Any = agent
    for key in ("conversation_config", "agent", "prompt"):
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def client_events(agent: Mapping[str, Any]) -> list[str]:
    """``conversation_config.conversation.client_events`` of an agent answer (the events it sends)."""
    conv = agent.get("conversation_config")
    conv = conv.get("conversation") if isinstance(conv, Mapping) else None
    events = conv.get("client_events") if isinstance(conv, Mapping) else None
    return [str(e) for e in events] if isinstance(events, list) else []


def allowed_overrides(agent: Mapping[str, Any]) -> Mapping[str, Any]:
    """``platform_settings.overrides.conversation_config_override`` (which fields a client may override)."""
    node: Any = agent
    for key in ("platform_settings", "overrides", "conversation_config_override"):
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def override_allowed(allowed: Mapping[str, Any], *path: str) -> bool:
    node: Any = allowed
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node is True

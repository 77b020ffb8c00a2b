"""The tool loop every request/response provider shares, and the canonical history cut into provider-ready pieces.

An adapter only says how to build one request from (history, tools, tool mode) and how to read one response
into text and tool calls. This module runs the loop around that: render tools from the view (cached by view
key), send, execute every call of a response through one ``gateway.call_tools`` (concurrently, recorded in the
canonical history), send again, until the model answers in text. Tool rounds are capped by
``max_tool_rounds``; after two rounds where every call failed the model must answer without tools. Nothing
conversational is kept between turns: each request is rendered from ``turn.live_history()``.
"""

from __future__ import annotations

import inspect
import json
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import aiohttp

from engine.bounds.json_text import valid_json, valid_text
from engine.config.models import ProviderConfig
from engine.events import Event, ToolsOmitted
from engine.providers.base import Provider, ProviderError, ProviderSession, ToolCallRequest, Turn, TurnReply
from engine.providers.http import HttpClient, HttpSettings
from engine.providers.rendering import RenderedTools, ToolRenderer
from engine.providers.rendering.strict import strip_added_nulls
from engine.sessions.history import HistoryItem, Message, ToolCallItem, ToolResultItem
from engine.sessions.session import CallSession
from engine.tools.view import ToolView
from engine.usage.report import UsageReport

ToolMode = Literal["auto", "none", "off"]  # off: no tools in the request at all
ERROR_ROUNDS_BEFORE_NO_TOOLS = 2
INTERRUPTED = "no result: the call was interrupted"
#: The user turn put in front of a conversation that opens with the agent's greeting (for APIs that want the
#: user to speak first).
CALL_OPENED = "(The call is connected.)"


@dataclass(slots=True)
class RawCall:
    """A tool call as the provider sent it (provider name, arguments as sent, the provider's id)."""

    name: str
    arguments: str | dict[str, Any] | None
    provider_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ModelOutput:
    text: str = ""
    calls: list[RawCall] = field(default_factory=list)
    finish: str = ""
    usage: UsageReport | None = None


@dataclass(frozen=True, slots=True)
class HttpRequest:
    url: str
    payload: dict[str, Any]
    headers: dict[str, str]
    stream: bool = False


@dataclass(slots=True)
class ToolRound:
    """The calls of one model response (a ``group``) and their results, in call order."""

    calls: list[ToolCallItem]
    results: list[ToolResultItem]


Segment = Message | ToolRound


def segments(history: Sequence[HistoryItem]) -> list[Segment]:
    """Messages and tool rounds in order; a call without a result gets an "interrupted" error result (every
    provider requires each call answered) and a result whose call was trimmed away is dropped."""
    out: list[Segment] = []
    results = {i.call_id: i for i in history if isinstance(i, ToolResultItem)}
    for item in history:
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, ToolCallItem):
            last = out[-1] if out else None
            if not (isinstance(last, ToolRound) and last.calls[-1].group == item.group):
                last = ToolRound([], [])
                out.append(last)
            last.calls.append(item)
            res = results.get(item.id) or ToolResultItem(item.id, item.name, "error", INTERRUPTED)
            last.results.append(res)
    return out


def result_text(result: ToolResultItem) -> str:
    """A result as one JSON string (providers without a structured result field)."""
    return json.dumps(result.payload(), ensure_ascii=False, default=str)


def call_arguments_json(call: ToolCallItem) -> str:
    """Arguments as a JSON string; arguments the engine could not parse are sent back as the model wrote them."""
    if set(call.arguments) == {"_raw"} and isinstance(call.arguments["_raw"], str):
        return call.arguments["_raw"]
    return json.dumps(call.arguments, ensure_ascii=False, default=str)


def call_arguments_object(call: ToolCallItem) -> dict[str, Any]:
    if set(call.arguments) == {"_raw"}:
        return {}
    return dict(call.arguments)


def alternating_turns(
    entries: Sequence[dict[str, Any]],
    key: str,
    opener: dict[str, Any],
    leading: Callable[[dict[str, Any]], bool] | None = None,
) -> list[dict[str, Any]]:
    """Entries (``{"role", key: [blocks]}``) as APIs with strict turns take them (Anthropic, Gemini): a user turn
    holding ``opener`` in front when the conversation opens with the agent, and consecutive entries of one role
    merged into one (their block lists joined; blocks for which ``leading`` holds go first)."""
    if entries and entries[0]["role"] != "user":
        entries = [{"role": "user", key: [opener]}, *entries]
    out: list[dict[str, Any]] = []
    for entry in entries:
        if out and out[-1]["role"] == entry["role"]:
            blocks = out[-1][key] + entry[key]
            if leading is not None:
                blocks = [b for b in blocks if leading(b)] + [b for b in blocks if not leading(b)]
            out[-1][key] = blocks
        else:
            out.append({"role": entry["role"], key: list(entry[key])})
    return out


class TextProvider(Provider):
    """Base of the REST providers: tool rendering with a per-view cache, HTTP settings, the session loop."""

    default_base_url = ""

    def __init__(self, name: str, config: ProviderConfig, base_dir: Path | None = None) -> None:
        super().__init__(name, config)
        self.required("model")
        opts = config.options
        mode = opts.get("gemini_schema", "json_schema")
        if mode not in ("json_schema", "openapi"):
            raise ValueError(f"providers.{name}.options.gemini_schema: 'json_schema' or 'openapi', not {mode!r}")
        self.renderer = ToolRenderer(self.type, strict=config.strict_tools, gemini_schema=mode)
        self.base_url = (config.base_url or self.default_base_url).rstrip("/")
        self.stream = bool(opts.get("stream", True))
        self.http_settings = HttpSettings(
            timeout_s=config.timeout_ms / 1000,
            max_retries=config.max_retries,
            backoff_s=float(opts.get("retry_backoff_ms", 500)) / 1000,
            max_retry_after_s=float(opts.get("max_retry_after_s", 60)),
        )

    @property
    def api_key(self) -> str:
        return self.config.api_key.get_secret_value() if self.config.api_key is not None else ""

    def extra_headers(self) -> dict[str, str]:
        return {k: v.get_secret_value() for k, v in self.config.headers.items()}

    def json_headers(self, auth_header: str, auth_value: str, fixed: Mapping[str, str] | None = None) -> dict[str, str]:
        """A JSON request's headers: the content type, ``fixed`` ones (an API version), the credential under
        ``auth_header`` when a key is configured, then the config's own ``headers``, which win."""
        headers = {"Content-Type": "application/json", **(fixed or {})}
        if self.api_key:
            headers[auth_header] = auth_value
        headers.update(self.extra_headers())
        return headers

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]:
        return self.renderer.render(view).tools

    def open_session(self, session: CallSession) -> ProviderSession:
        secrets = (self.api_key, *self.extra_headers().values())
        return TextSession(self, HttpClient(self.name, self.http_settings, secrets))

    def sampling(self) -> dict[str, Any]:
        return {k: v for k, v in (("temperature", self.config.temperature),) if v is not None}

    def raise_embedded_error(self, data: Any) -> None:
        """A response body (or stream chunk) that carries ``{"error": {"message": …}}`` instead of an answer."""
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            raise ProviderError(self.name, str(data["error"].get("message") or data["error"]))

    # -------------------------------------------------------------------------------------------- adapter API

    @abstractmethod
    def build_request(
        self, turn: Turn, history: Sequence[HistoryItem], tools: RenderedTools, mode: ToolMode, state: dict[str, Any]
    ) -> HttpRequest:
        """One request from the history snapshot; ``state`` lives for one turn (e.g. Gemini signatures)."""

    @abstractmethod
    async def read_response(self, resp: aiohttp.ClientResponse, turn: Turn, stream: bool) -> ModelOutput:
        """Text and tool calls of one response (streamed text deltas go to ``turn.on_text``)."""

    def remember(self, state: dict[str, Any], calls: Sequence[RawCall], results: Sequence[ToolResultItem]) -> None:
        """Keep per-call provider data (keyed by canonical id) for the rest of the turn."""
        return None

    def tool_mode(self, tools: RenderedTools, allowed: bool) -> ToolMode:
        if tools.count == 0:
            return "off"
        return "auto" if allowed else "none"


def valid_output(out: ModelOutput) -> None:
    """The model's words and tool calls made valid text (``engine.bounds.json_text``), in place: every text adapter's
    reply passes here, so a lone surrogate a provider sent never reaches the history, an event or a tool."""
    out.text = valid_text(out.text)
    for c in out.calls:
        c.name = valid_text(c.name)
        if not isinstance(c.arguments, str):  # a string is parsed (and made valid) by parse_arguments
            c.arguments = valid_json(c.arguments)


async def emit_text(turn: Turn, text: str) -> None:
    if turn.on_text is not None and text:
        res = turn.on_text(valid_text(text))
        if inspect.isawaitable(res):
            await res


class EventSink(Protocol):
    def publish(self, event: Event) -> None: ...


def event_sink(turn: Turn) -> EventSink | None:
    """The bus behind the turn's tool gateway (the engine's gateway runs tools through an executor that has one);
    None for gateways without one (tests, tools-less turns)."""
    bus = getattr(getattr(turn.tools, "executor", None), "bus", None)
    return bus if callable(getattr(bus, "publish", None)) else None


def record_turn_items(turn: Turn, provider_type: str, out: ModelOutput, results: Sequence[ToolResultItem]) -> None:
    """Attach each call's opaque provider data (``RawCall.extra``, e.g. Gemini's ``thoughtSignature``) to the
    recorded call, keyed by provider type, so every later request to that provider type echoes it."""
    history = turn.session.history
    for call, res in zip(out.calls, results, strict=False):
        if call.extra:
            history.annotate_call(res.call_id, provider_type, call.extra)


class TextSession(ProviderSession):
    """One call on a REST provider: runs the tool loop per turn; holds only its HTTP client."""

    def __init__(self, provider: TextProvider, http: HttpClient) -> None:
        self.provider = provider
        self.http = http
        self._omitted_reported: set[tuple[object, ...]] = set()

    def _report_omitted(self, turn: Turn, tools: RenderedTools) -> None:
        """Tools left out of the request are not shown to the call (a call to one is rejected as for any tool
        the model was not shown); one ``tools.omitted`` event per view whose tools did not all fit."""
        if not tools.omitted or tools.limit is None:
            return
        turn.session.shown_tools = turn.view.names - frozenset(tools.omitted)
        if turn.view.key in self._omitted_reported:
            return
        self._omitted_reported.add(turn.view.key)
        sink = event_sink(turn)
        if sink is not None:
            sink.publish(
                ToolsOmitted(
                    call_id=turn.session.call_id, provider=self.provider.name, limit=tools.limit, omitted=tools.omitted
                )
            )

    async def aclose(self) -> None:
        await self.http.aclose()

    def _requests(self, out: ModelOutput, tools: RenderedTools) -> list[ToolCallRequest]:
        reqs: list[ToolCallRequest] = []
        for c in out.calls:
            args: Any = c.arguments
            original = tools.strict_originals.get(c.name)
            if original is not None:
                if isinstance(args, str):
                    try:
                        args = valid_json(json.loads(args)) if args.strip() else {}
                    except ValueError:
                        pass
                args = strip_added_nulls(args, original)
            args = tools.restore_arguments(c.name, args)  # parameter names fitted to the provider's rule
            reqs.append(ToolCallRequest(tools.names.exposed_name(c.name), args, c.provider_id))
        return reqs

    async def run_turn(self, turn: Turn) -> TurnReply:
        p = self.provider
        rounds = error_rounds = 0
        state: dict[str, Any] = {}
        used: UsageReport | None = None
        while True:
            tools = p.renderer.render(turn.view)
            self._report_omitted(turn, tools)
            allowed = rounds < p.config.max_tool_rounds and error_rounds < ERROR_ROUNDS_BEFORE_NO_TOOLS
            mode = p.tool_mode(tools, allowed)
            req = p.build_request(turn, turn.live_history(), tools, mode, state)

            async def read(resp: aiohttp.ClientResponse, stream: bool = req.stream) -> ModelOutput:
                return await p.read_response(resp, turn, stream)

            try:
                out = await self.http.post(req.url, req.payload, req.headers, read)
            except ValueError as e:  # a malformed response body
                raise ProviderError(p.name, f"unreadable response: {e}") from e
            valid_output(out)
            if out.usage is not None:
                used = out.usage if used is None else used + out.usage
            meta: dict[str, Any] = {"provider": p.name, "finish": out.finish}
            if tools.omitted:
                meta["tools_omitted"] = list(tools.omitted)
            if not out.calls or mode != "auto":
                if out.calls:
                    meta["ignored_calls"] = [c.name for c in out.calls]
                if not allowed:
                    meta["tools_withheld"] = "max_tool_rounds" if rounds >= p.config.max_tool_rounds else "errors"
                return TurnReply(out.text, tool_rounds=rounds, meta=meta, usage=used)
            if out.text:  # the words before the calls stay in the conversation (Anthropic requires them back)
                turn.session.history.add_message("assistant", out.text)
            results = await turn.tools.call_tools(self._requests(out, tools))
            record_turn_items(turn, p.type, out, results)
            p.remember(state, out.calls, results)
            rounds += 1
            error_rounds = error_rounds + 1 if all(r.status != "success" for r in results) else 0


def pick(mapping: Mapping[str, Any], *keys: str) -> Any:
    """The first present key (providers renamed fields over time)."""
    for k in keys:
        if k in mapping:
            return mapping[k]
    return None

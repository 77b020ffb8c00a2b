"""The tool contract: what a tool declares, what it receives, and what it returns.

Every tool in the product (built-in, MCP, served to other agents) is a ``Tool`` with a ``ToolDefinition`` and
returns a ``ToolResult``. The definition produces a correct JSON Schema (optional stays optional, integers stay
integers, defaults and enums kept) that providers render from and that the execution path validates against.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from engine.sessions.session import CallSession

ResultStatus = Literal["success", "error", "timeout", "rejected", "cancelled"]
ParamType = Literal["string", "number", "integer", "boolean", "array", "object"]
ParamFormat = Literal["email", "url", "phone"]
#: A ``url`` parameter's pattern beside its ``"format": "uri"``: a web address, http(s), no spaces.
WEB_URL_PATTERN = r"^https?://[^\s/?#]+[^\s]*$"


class ToolCategory(enum.StrEnum):
    TELEPHONY = "telephony"
    BUSINESS = "business"
    INFORMATION = "information"
    SYSTEM = "system"


@dataclass(slots=True)
class ToolResult:
    """What every tool returns and providers receive (shaped per provider)."""

    status: ResultStatus
    message: str
    data: Any = None
    #: Side effects the engine acts on after the result is delivered (e.g. ``will_hangup``).
    will_hangup: bool = False
    cache_hit: bool = False
    #: What the caller hears instead of ``message`` when that is raw text for the operator (an exception, a server's
    #: error, a setting's name): one short sentence (``engine.tools.speech``). Empty: ``message`` is speakable.
    spoken: str = ""

    @property
    def speech(self) -> str:
        """The message as a provider (and so the caller) receives it."""
        return self.spoken or self.message

    @classmethod
    def success(cls, message: str, data: Any = None, **kw: Any) -> ToolResult:
        return cls("success", message, data, **kw)

    @classmethod
    def error(cls, message: str, data: Any = None) -> ToolResult:
        return cls("error", message, data)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "message": self.message, "data": self.data}
        if self.will_hangup:
            out["will_hangup"] = True
        if self.cache_hit:
            out["cache_hit"] = True
        if self.spoken:
            out["spoken"] = self.spoken
        return out


@dataclass(frozen=True, slots=True)
class ToolParameter:
    """One argument of a tool, declared in Python, rendered to JSON Schema."""

    name: str
    type: ParamType
    description: str = ""
    required: bool = False
    default: Any = None
    enum: tuple[Any, ...] | None = None
    pattern: str | None = None
    format: ParamFormat | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    items: ToolParameter | None = None
    properties: tuple[ToolParameter, ...] = ()

    def to_schema(self) -> dict[str, Any]:
        s: dict[str, Any] = {"type": self.type}
        if self.description:
            s["description"] = self.description
        if self.default is not None:
            s["default"] = self.default
        if self.enum is not None:
            s["enum"] = list(self.enum)
        if self.pattern is not None:
            s["pattern"] = self.pattern
        if self.format is not None:
            s["format"] = {"email": "email", "url": "uri", "phone": "phone"}[self.format]
            if self.format == "url" and self.pattern is None:
                s["pattern"] = WEB_URL_PATTERN  # "uri" admits any scheme (data:, file:, javascript:)
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        if self.min_length is not None:
            s["minLength" if self.type == "string" else "minItems"] = self.min_length
        if self.max_length is not None:
            s["maxLength" if self.type == "string" else "maxItems"] = self.max_length
        if self.type == "array" and self.items is not None:
            s["items"] = self.items.to_schema()
        if self.type == "object" and self.properties:
            s["properties"] = {p.name: p.to_schema() for p in self.properties}
            req = [p.name for p in self.properties if p.required]
            if req:
                s["required"] = req
        return s


@dataclass(frozen=True, slots=True)
class LatencyMeta:
    """Declared latency of a tool: p50 estimate, p99/hard timeout, and whether it may be probed or cached."""

    estimated_duration_ms: int | None = None
    max_duration_ms: int | None = None
    idempotent: bool = False
    cacheable_seconds: int = 0


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """What a tool declares. ``name`` is the exposed name (unique in the registry)."""

    name: str
    description: str
    category: ToolCategory = ToolCategory.INFORMATION
    parameters: tuple[ToolParameter, ...] = ()
    #: A raw JSON schema (MCP tools); when set it wins over ``parameters``.
    input_schema: Mapping[str, Any] | None = None
    latency: LatencyMeta = field(default_factory=LatencyMeta)
    #: Where the tool comes from: "builtin" or the MCP server id.
    server: str = "builtin"
    #: The tool's own name on its server (MCP); the exposed name otherwise.
    origin_name: str = ""
    slow_response_message: str | None = None
    slow_response_threshold_ms: int | None = None
    timeout_ms: int | None = None
    #: The MCP tool annotations exactly as the server declared them (``readOnlyHint``, ``destructiveHint`` …):
    #: hints that may only add caution (engine.tools.approvals), never remove a check the config asks for.
    annotations: Mapping[str, Any] | None = None

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (an object schema)."""
        if self.input_schema is not None:
            return dict(self.input_schema)
        props = {p.name: p.to_schema() for p in self.parameters}
        s: dict[str, Any] = {"type": "object", "properties": props}
        req = [p.name for p in self.parameters if p.required]
        if req:
            s["required"] = req
        s["additionalProperties"] = False
        return s

    def declaration(self) -> dict[str, Any]:
        """The canonical declaration providers render from: name, description, input_schema."""
        return {"name": self.name, "description": self.description, "input_schema": self.schema()}


EmitFn = Callable[[Any], None]


@dataclass(slots=True)
class ToolExecutionContext:
    """What a running tool may see and do: its call, the session, config, and the event bus."""

    call_id: str
    session: CallSession | None
    config: Any
    emit: EmitFn
    channel_id: str | None = None
    #: The canonical id of this tool call (stable for the life of the call).
    tool_call_id: str = ""
    #: Set when the engine runs a calibration probe, so tools and metrics can tell.
    is_probe: bool = False
    extras: dict[str, Any] = field(default_factory=dict)

    def get_session(self) -> CallSession | None:
        return self.session

    def update_session(self, **changes: Any) -> None:
        if self.session is None:
            return
        for key, value in changes.items():
            if not hasattr(self.session, key):
                raise AttributeError(f"CallSession has no field {key!r}")
            setattr(self.session, key, value)

    def config_value(self, dotted: str, default: Any = None) -> Any:
        """Look up ``a.b.c`` in the settings (attributes or mapping keys)."""
        node: Any = self.config
        for part in dotted.split("."):
            if node is None:
                return default
            if isinstance(node, Mapping):
                node = node.get(part)
            else:
                node = getattr(node, part, None)
        return default if node is None else node


class Tool(ABC):
    """A tool the engine can run. Subclasses set ``definition`` and implement ``execute``."""

    definition: ToolDefinition

    @property
    def name(self) -> str:
        return self.definition.name

    @abstractmethod
    async def execute(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        """Run the tool with validated arguments."""


class FunctionTool(Tool):
    """A tool backed by an async function (built-ins, tests, benchmarks)."""

    def __init__(
        self,
        definition: ToolDefinition,
        fn: Callable[[dict[str, Any], ToolExecutionContext], Awaitable[ToolResult]],
    ) -> None:
        self.definition = definition
        self._fn = fn

    async def execute(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return await self._fn(args, ctx)

"""Pydantic models for the whole config file.

Every section of the YAML has a model here; unknown keys are errors (``extra="forbid"``) so a typo is
reported with its file, line and key path by the loader instead of being silently ignored. Credentials are
``SecretStr`` so they never print. Later issues deepen their sections; the top-level shape is fixed by
DESIGN.md.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

EXPOSED_NAME_RE = re.compile(r"^[a-z0-9_]{1,64}$")
SERVER_ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")

ProviderType = Literal[
    "scripted",
    "pipeline",
    "openai_chat",
    "openai_responses",
    "anthropic",
    "gemini",
    "ollama",
    "openai_realtime",
    "deepgram_agent",
    "gemini_live",
    "elevenlabs_agent",
]
TierName = Literal["fast", "standard", "deep"]
TierChoice = Literal["fast", "standard", "deep", "auto"]


class FieldError(ValueError):
    """A model-level check that blames one field (or one of several candidates).

    Raised from model validators; pydantic keeps the exception in the error's ``ctx["error"]``, and the loader
    appends ``loc`` to the model's location so the message points at the offending key's own line.
    ``candidates`` are alternative locs: the loader picks the first one that is present in the file (e.g. the
    tier the user actually wrote). ``str()`` includes the relative path, for readers that see the raw
    pydantic error.
    """

    def __init__(
        self, loc: str | tuple[str | int, ...], message: str, *candidates: tuple[str | int, ...]
    ) -> None:
        self.loc: tuple[str | int, ...] = (loc,) if isinstance(loc, str) else tuple(loc)
        self.candidates: tuple[tuple[str | int, ...], ...] = (self.loc, *candidates)
        self.message = message
        super().__init__(f"{'.'.join(str(p) for p in self.loc)}: {message}")


class Strict(BaseModel):
    """Base for every config section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# ---------------------------------------------------------------------------------------------- engine


class HttpConfig(Strict):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=8088, ge=0, le=65535)
    auth_token: SecretStr | None = None


class LoggingConfig(Strict):
    level: Literal["debug", "info", "warning", "error"] = "info"
    file: str | None = None
    json_format: bool = Field(default=False, alias="json")


class McpEndpointConfig(Strict):
    """The engine's own MCP endpoint (serves selected tools to other agents)."""

    enabled: bool = False
    path: str = "/mcp"
    expose: list[str] = Field(default_factory=list, description="Exposed names of the tools to serve.")
    auth_token: SecretStr | None = Field(
        default=None, description="Bearer token MCP clients must send (Authorization: Bearer <token>)."
    )
    requests_per_minute: int = Field(
        default=120, gt=0, description="tools/call requests accepted per rolling minute (whole endpoint)."
    )
    daily_budget: int = Field(
        default=10_000, gt=0, description="tools/call requests accepted per UTC day (whole endpoint)."
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Origin values accepted besides loopback ones; 'http://host:*' allows any port.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values accepted besides loopback ones; 'host:*' allows any port.",
    )
    timeout_ms: int | None = Field(
        default=None, gt=0, description="Longest a tools/call may run (default: the tool's own timeout)."
    )
    tool_timeouts_ms: dict[str, Annotated[int, Field(gt=0)]] = Field(
        default_factory=dict, description="Per-tool timeout overrides, by exposed name."
    )

    @field_validator("path")
    @classmethod
    def _path_absolute(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError("must start with '/'")
        return v

    @model_validator(mode="after")
    def _timeouts_for_exposed(self) -> McpEndpointConfig:
        for name in self.tool_timeouts_ms:
            if name not in self.expose:
                raise FieldError(
                    ("tool_timeouts_ms", name), f"{name!r} is not in 'expose', so it is never served"
                )
        return self


class EngineConfig(Strict):
    http: HttpConfig = Field(default_factory=HttpConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    mcp_server: McpEndpointConfig = Field(default_factory=McpEndpointConfig)
    tool_timeout_ms: int = Field(
        default=10_000, gt=0, description="Global default timeout for one tool call."
    )
    history_limit: int = Field(default=200, gt=0, description="Most history items kept per call.")
    event_queue_size: int = Field(default=1000, gt=0, description="Bounded queue per event subscriber.")


# ------------------------------------------------------------------------------------------- providers


class ProviderConfig(Strict):
    type: ProviderType
    model: str | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    script: str | None = Field(default=None, description="scripted: path of the dialog script (YAML).")
    brain: str | None = Field(
        default=None, description="pipeline: the provider that thinks (scripted or a text LLM)."
    )
    voice: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    max_tool_rounds: int = Field(default=8, gt=0)
    strict_tools: bool = False
    timeout_ms: int = Field(default=30_000, gt=0)
    max_retries: int = Field(default=3, ge=0)
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _scripted_needs_script(self) -> ProviderConfig:
        if self.type == "scripted" and not self.script:
            raise FieldError("script", "a scripted provider needs 'script' (path of its dialog YAML)")
        if self.brain is not None and self.type != "pipeline":
            raise FieldError("brain", f"'brain' only applies to a pipeline provider, not {self.type!r}")
        return self


# ---------------------------------------------------------------------------------------------- budget


class TiersConfig(Strict):
    fast: int = Field(default=500, gt=0)
    standard: int = Field(default=1500, gt=0)
    deep: int = Field(default=4000, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> TiersConfig:
        if not self.fast < self.standard:
            raise FieldError(
                "standard",
                f"tiers must grow: fast < standard < deep (fast={self.fast}, standard={self.standard})",
                ("fast",),
            )
        if not self.standard < self.deep:
            raise FieldError(
                "deep",
                f"tiers must grow: fast < standard < deep (standard={self.standard}, deep={self.deep})",
                ("standard",),
            )
        return self


class SelectorConfig(Strict):
    deep_keywords: list[str] = Field(
        default_factory=lambda: [
            "think carefully",
            "take your time",
            "think hard",
            "consider carefully",
            "in detail",
        ]
    )
    standard_keywords: list[str] = Field(
        default_factory=lambda: ["remember", "rules", "who is", "what is", "look up", "recall"]
    )
    deep_cooldown_s: float = Field(default=30.0, ge=0)
    queue_depth_fast: int = Field(default=3, gt=0)


class BudgetConfig(Strict):
    tiers: TiersConfig = Field(default_factory=TiersConfig)
    default_tier: TierChoice = "auto"
    selector: SelectorConfig = Field(default_factory=SelectorConfig)
    window: int = Field(default=100, gt=0, description="Invocations kept per tool for p50/p99.")
    min_samples: int = Field(
        default=5, gt=0, description="Measured values replace declared ones after this many."
    )
    degraded_error_rate: float = Field(default=0.3, gt=0, le=1)
    unhealthy_error_rate: float = Field(default=0.6, gt=0, le=1)
    cache_size: int = Field(default=1024, ge=0)
    slow_response_threshold_ms: int = Field(default=1500, gt=0)
    slow_response_message: str = Field(
        default="One moment while I check that.", min_length=1,
        description="Spoken when a slow tool runs (unless the tool or its server has its own message).",
    )
    estimate_multiplier: float = Field(
        default=3.0, ge=1,
        description="A tool that declares only estimated_duration_ms (p50) is tiered by estimate × this.",
    )
    health_horizon_s: float = Field(
        default=300.0, gt=0, description="Errors older than this no longer count towards a tool's health."
    )
    calibration_probes: int = Field(default=5, gt=0, le=100, description="Probes per tool when calibrating.")
    exempt_tools: list[str] = Field(
        default_factory=lambda: ["hangup_call", "transfer", "cancel_transfer"],
        description="Call-control tools (names or patterns) shown on every tier and never clamped to its budget.",
    )

    @model_validator(mode="after")
    def _rates_ordered(self) -> BudgetConfig:
        if not self.degraded_error_rate < self.unhealthy_error_rate:
            raise FieldError(
                "unhealthy_error_rate",
                f"must be greater than degraded_error_rate ({self.degraded_error_rate})",
                ("degraded_error_rate",),
            )
        return self


# ------------------------------------------------------------------------------------------------- mcp


class RestartConfig(Strict):
    enabled: bool = True
    max_restarts: int = Field(default=5, ge=0)
    backoff_ms: int = Field(default=500, gt=0)
    backoff_max_ms: int = Field(default=30_000, gt=0)
    stable_after_ms: int = Field(default=60_000, gt=0, description="Up this long resets the restart count.")

    @model_validator(mode="after")
    def _backoff_bounded(self) -> RestartConfig:
        if self.backoff_ms > self.backoff_max_ms:
            raise FieldError(
                "backoff_ms", f"must not exceed backoff_max_ms ({self.backoff_max_ms})", ("backoff_max_ms",)
            )
        return self


class ServerDefaults(Strict):
    timeout_ms: int | None = Field(default=None, gt=0)
    slow_response_threshold_ms: int | None = Field(default=None, gt=0)
    slow_response_message: str | None = None


class McpToolConfig(Strict):
    name: str
    expose_as: str | None = None
    description: str | None = None
    speech_field: str | None = None
    speech_template: str | None = None
    timeout_ms: int | None = Field(default=None, gt=0)
    estimated_duration_ms: int | None = Field(default=None, ge=0)
    max_duration_ms: int | None = Field(default=None, gt=0)
    idempotent: bool | None = None
    cacheable_seconds: int | None = Field(default=None, ge=0)
    probe_args: dict[str, Any] | None = None
    slow_response_message: str | None = None

    @field_validator("expose_as")
    @classmethod
    def _valid_exposed(cls, v: str | None) -> str | None:
        if v is not None and not EXPOSED_NAME_RE.match(v):
            raise ValueError(f"{v!r} is not a valid exposed name ([a-z0-9_], at most 64 characters)")
        return v


class McpServerConfig(Strict):
    transport: Literal["stdio", "http", "sse", "inprocess"] = "stdio"
    enabled: bool = True
    command: list[str] = Field(default_factory=list)
    cwd: str | None = None
    env: dict[str, SecretStr] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    target: str | None = Field(
        default=None, description="inprocess: 'module:attribute' of an SDK server object."
    )
    start: Literal["eager", "lazy"] = "eager"
    mode: str = Field(default="auto", description="auto, legacy, or a protocol version such as 2026-07-28.")
    connect_timeout_ms: int = Field(default=10_000, gt=0)
    restart: RestartConfig = Field(default_factory=RestartConfig)
    defaults: ServerDefaults = Field(default_factory=ServerDefaults)
    tools: list[McpToolConfig] = Field(default_factory=list)
    expose_unlisted: bool = True
    calibrate: bool = False

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerConfig:
        if self.transport == "stdio" and not self.command:
            raise FieldError("command", "a stdio server needs 'command' (a list: program and arguments)")
        if self.transport in ("http", "sse"):
            if not self.url:
                raise FieldError("url", f"an {self.transport} server needs 'url'")
            if not re.match(r"^https?://[^\s/]+", self.url):
                raise FieldError("url", f"{self.url!r} is not an http(s) URL")
        if self.transport == "inprocess" and not self.target:
            raise FieldError("target", "an inprocess server needs 'target' (module:attribute)")
        if self.mode not in ("auto", "legacy") and not re.match(r"^\d{4}-\d{2}-\d{2}$", self.mode):
            raise FieldError("mode", f"{self.mode!r} must be auto, legacy or a protocol version (YYYY-MM-DD)")
        seen: set[str] = set()
        for i, tool in enumerate(self.tools):
            if tool.name in seen:
                raise FieldError(("tools", i, "name"), f"tool {tool.name!r} is listed twice")
            seen.add(tool.name)
        return self


def _check_server_id(sid: str) -> str:
    if not SERVER_ID_RE.match(sid):
        raise ValueError(f"server id {sid!r} must match [a-z][a-z0-9_]* (at most 32 characters)")
    return sid


# Validated per key (not in a validator over the whole dict) so a bad id is reported even when a server's
# own settings have errors too.
ServerId = Annotated[str, AfterValidator(_check_server_id)]


class McpConfig(Strict):
    enabled: bool = True
    servers: dict[ServerId, McpServerConfig] = Field(default_factory=dict)


# -------------------------------------------------------------------------------------------- contexts


class ContextTierConfig(Strict):
    default: TierName = "standard"
    mode: Literal["auto", "fixed"] = "auto"


class ContextConfig(Strict):
    provider: str
    prompt: str = ""
    greeting: str | None = None
    tools: list[str] = Field(default_factory=list)
    tier: ContextTierConfig = Field(default_factory=ContextTierConfig)
    farewell: str | None = None


# -------------------------------------------------------------------------------------- built-in tools


class TransferTarget(Strict):
    description: str = ""
    destination: str


class EmailConfig(Strict):
    enabled: bool = False
    smtp_host: str = "127.0.0.1"
    smtp_port: int = Field(default=25, ge=1, le=65535)
    username: str | None = None
    password: SecretStr | None = None
    use_tls: bool = False
    from_address: str | None = None
    admin_address: str | None = None


class HangupConfig(Strict):
    farewell: str = "Thank you for calling. Goodbye!"


class BuiltinToolsConfig(Strict):
    extensions: dict[str, TransferTarget] = Field(default_factory=dict)
    email: EmailConfig = Field(default_factory=EmailConfig)
    hangup: HangupConfig = Field(default_factory=HangupConfig)


# --------------------------------------------------------------------------- audio, telephony, console


class SoftphoneConfig(Strict):
    input_device: str | int | None = None
    output_device: str | int | None = None
    sample_rate: int = Field(default=16_000, gt=0)
    vad_silence_ms: int = Field(default=600, gt=0)
    push_to_talk: bool = False
    voice: str = "en-us"
    rate: int = Field(default=170, gt=0)
    pitch: int = Field(default=50, ge=0, le=99)
    dictionary: str | None = None


class AsteriskConfig(Strict):
    enabled: bool = False
    ari_url: str = "http://127.0.0.1:8088/ari"
    username: str = "ava"
    password: SecretStr | None = None
    app_name: str = "ava"
    default_context: str | None = None


class ConsoleConfig(Strict):
    keymap: dict[str, str] = Field(default_factory=dict, description="action id -> key, e.g. tier_deep: f3")


# ------------------------------------------------------------------------------------------------ root


class Settings(Strict):
    engine: EngineConfig = Field(default_factory=EngineConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    contexts: dict[str, ContextConfig] = Field(default_factory=dict)
    tools: BuiltinToolsConfig = Field(default_factory=BuiltinToolsConfig)
    softphone: SoftphoneConfig = Field(default_factory=SoftphoneConfig)
    asterisk: AsteriskConfig = Field(default_factory=AsteriskConfig)
    console: ConsoleConfig = Field(default_factory=ConsoleConfig)

    @model_validator(mode="after")
    def _contexts_name_providers(self) -> Settings:
        known = ", ".join(sorted(self.providers)) or "none"
        for name, ctx in self.contexts.items():
            if ctx.provider not in self.providers:
                raise FieldError(
                    ("contexts", name, "provider"),
                    f"{ctx.provider!r} is not a configured provider (known: {known})",
                )
        for name, prov in self.providers.items():
            if prov.brain is not None and (prov.brain not in self.providers or prov.brain == name):
                raise FieldError(
                    ("providers", name, "brain"),
                    f"{prov.brain!r} is not another configured provider (known: {known})",
                )
        if self.asterisk.default_context is not None and self.asterisk.default_context not in self.contexts:
            contexts = ", ".join(sorted(self.contexts)) or "none"
            raise FieldError(
                ("asterisk", "default_context"),
                f"{self.asterisk.default_context!r} is not a configured context (known: {contexts})",
            )
        return self

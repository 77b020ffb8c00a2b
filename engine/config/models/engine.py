"""The ``engine:`` section: HTTP API, logging, the engine's own MCP endpoint and global engine limits.

Settings the engine process itself reads at start-up, as opposed to what it connects to (providers, MCP
servers) or what calls do (contexts, budget).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from engine.config.models.common import FieldError, Strict
from engine.config.models.scale_out import ScaleOutConfig
from engine.config.models.telemetry import TelemetryConfig

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_loopback_host(host: str) -> bool:
    """True for names and addresses that only this machine can reach (localhost, 127.0.0.0/8, ::1)."""
    name = host.strip().lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, str | None]:
    """``'Example.org:8088'`` → ``('example.org', '8088')``; IPv6 loses its brackets (``'[::1]'`` → ``'::1'``)."""
    v = value.strip().lower()
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return v, None
        rest = v[end + 1 :]
        return v[1:end], rest[1:] if rest.startswith(":") else None
    if v.count(":") == 1:
        name, _, port = v.partition(":")
        return name, port
    return v, None


def _check_host_entry(entry: str) -> str:
    if not entry or "/" in entry or "@" in entry or entry != entry.strip():
        raise ValueError(f"{entry!r} is not a Host value: write 'name', 'name:port' or 'name:*' (no scheme, no path)")
    return entry


def _check_origin_entry(entry: str) -> str:
    scheme, sep, rest = entry.partition("://")
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest or entry != entry.strip():
        raise ValueError(
            f"{entry!r} is not an origin: write 'https://name', 'http://name:port' or 'http://name:*' "
            "(scheme and host, no path or trailing '/')"
        )
    return entry


class HttpConfig(Strict):
    """The engine's HTTP API. Safe by default: loopback only, Host/Origin checked, JSON-only state changes."""

    enabled: bool = True
    host: str = Field(default="127.0.0.1", description="Address to bind; anything but loopback requires auth_token.")
    port: int = Field(default=8090, ge=0, le=65535)
    auth_token: SecretStr | None = Field(
        default=None,
        description="Bearer token required on every route but /health and /ready (Authorization: Bearer <token>).",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values accepted besides loopback names and engine.http.host "
        "('name' or 'name:*' any port, 'name:8088' that port only).",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Browser Origin values accepted ('https://ui.example', 'http://name:*'); "
        "every other request carrying an Origin header is refused.",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024, gt=0, description="Largest request body accepted (larger: HTTP 413)."
    )

    @field_validator("auth_token")
    @classmethod
    def _token_not_empty(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and not v.get_secret_value().strip():
            raise ValueError("must not be empty (leave the key out for no token, on loopback only)")
        return v

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_well_formed(cls, v: list[str]) -> list[str]:
        return [_check_host_entry(e) for e in v]

    @field_validator("allowed_origins")
    @classmethod
    def _origins_well_formed(cls, v: list[str]) -> list[str]:
        return [_check_origin_entry(e) for e in v]

    @model_validator(mode="after")
    def _token_off_loopback(self) -> HttpConfig:
        if self.enabled and self.auth_token is None and not is_loopback_host(self.host):
            raise FieldError(
                "host",
                f"binding {self.host!r} (not loopback) requires engine.http.auth_token: without it anyone who "
                "can reach this address could test-run commands; set engine.http.auth_token "
                "(e.g. ${keyring:ava_http_token}) or bind host: 127.0.0.1",
                ("auth_token",),
            )
        return self


LogLevel = Literal["debug", "info", "warning", "error"]


class LoggingConfig(Strict):
    """How the engine logs (applied by ``engine.core.logs.configure_logging``; secrets are always masked)."""

    level: LogLevel = Field(
        default="info", description="Level for the log file, and for stderr when set here (else warnings)."
    )
    file: str | None = Field(default=None, description="Log file (relative to the config file's folder; '~' expands).")
    json_format: bool = Field(default=False, alias="json", description="One JSON object per line.")
    max_bytes: int = Field(default=10_000_000, gt=0, description="Size at which the log file is rotated.")
    backup_count: int = Field(default=3, ge=0, description="Rotated log files kept (file.1, file.2, ...).")
    loggers: dict[str, LogLevel] = Field(
        default_factory=dict, description="Per-logger levels, e.g. {engine.mcp: debug, aiohttp: error}."
    )


class McpResumeConfig(Strict):
    """Resumable SSE streams of the endpoint (SEP-1699): what a session's events may cost while kept for replay.

    A handshake-era client whose stream drops reconnects with ``Last-Event-ID`` and gets what it missed; the
    events wait here, bounded per stream, in all, and in time (engine.mcp_endpoint.stream_events)."""

    enabled: bool = Field(
        default=True, description="Give streams event ids and keep their events for replay (off: no resuming)."
    )
    retry_ms: int = Field(
        default=1000, ge=100, le=600_000, description="SSE retry: how long a client waits before it reconnects."
    )
    max_events_per_stream: int = Field(
        default=256, ge=1, description="Events kept per stream (one call's, or the session's GET stream); oldest go."
    )
    max_bytes_per_stream: int = Field(
        default=1_048_576, ge=1024, description="JSON bytes kept per stream; oldest events go first."
    )
    max_events: int = Field(
        default=20_000, ge=1, description="Events kept across all sessions; the least recently written streams go."
    )
    max_bytes: int = Field(
        default=33_554_432, ge=1024, description="JSON bytes kept across all sessions (least recently written go)."
    )
    ttl_s: float = Field(
        default=300.0, gt=0, le=86_400, description="A stream not written for this long is forgotten, in seconds."
    )

    @model_validator(mode="after")
    def _totals_hold_a_stream(self) -> McpResumeConfig:
        for per, total in (("max_events_per_stream", "max_events"), ("max_bytes_per_stream", "max_bytes")):
            if getattr(self, per) > getattr(self, total):
                raise FieldError(
                    per,
                    f"{getattr(self, per)} is more than {total} ({getattr(self, total)}), the bound across all "
                    f"streams: raise {total} or lower {per}",
                )
        return self


class McpEndpointConfig(Strict):
    """The engine's own MCP endpoint (serves selected tools to other agents)."""

    enabled: bool = False
    path: str = "/mcp"
    expose: list[str] = Field(default_factory=list, description="Exposed names of the tools to serve.")
    share: list[str] = Field(
        default_factory=list,
        description="Ids of the MCP servers whose resources, prompts, completion and log messages the endpoint "
        "serves ('*': every server, and the engine's own MCP warnings too); none by default, as with tools.",
    )
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
    resume: McpResumeConfig = Field(
        default_factory=McpResumeConfig, description="Resumable SSE streams (Last-Event-ID) and their bounds."
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
                raise FieldError(("tool_timeouts_ms", name), f"{name!r} is not in 'expose', so it is never served")
        return self


class ToolArgumentsConfig(Strict):
    """Bounds on a tool call's arguments, checked before they are parsed or validated (engine.tools.limits)."""

    max_depth: int = Field(
        default=64, ge=2, le=512, description="Deepest nesting of objects and arrays (the arguments object is 1)."
    )
    max_size: int = Field(default=1_048_576, ge=1024, description="Longest argument JSON text, in characters.")
    max_string: int = Field(
        default=65_536, ge=16, description="Longest string value or key in the arguments, in characters."
    )


class ApprovalsConfig(Strict):
    """The tool approval queue (engine.tools.approvals): how long a call waits for the operator, and what the caller
    hears meanwhile. Which tools wait is the servers' ``destructiveHint`` and each context's ``approve:``."""

    timeout_ms: int = Field(
        default=20_000,
        gt=0,
        le=600_000,
        description="How long a tool call waits for the operator's approval before it is denied.",
    )
    message: str = Field(
        default="One moment, please.",
        min_length=1,
        max_length=200,
        description="Said to the caller (on a voice call) while a tool call waits for the operator.",
    )
    http: bool = Field(
        default=False,
        description="The HTTP API is an approver (GET /approvals, POST /approvals/{id}/approve|deny, with "
        "engine.http.auth_token): calls wait for it instead of being denied when no console is attached.",
    )


class EngineConfig(ScaleOutConfig):
    http: HttpConfig = Field(default_factory=HttpConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    mcp_server: McpEndpointConfig = Field(default_factory=McpEndpointConfig)
    tool_timeout_ms: int = Field(default=10_000, gt=0, description="Global default timeout for one tool call.")
    history_limit: int = Field(default=200, gt=0, description="Most history items kept per call.")
    event_queue_size: int = Field(default=1000, gt=0, description="Bounded queue per event subscriber.")
    tool_arguments: ToolArgumentsConfig = Field(default_factory=ToolArgumentsConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)

    @model_validator(mode="after")
    def _http_approver_needs_token(self) -> EngineConfig:
        if self.approvals.http and self.http.auth_token is None:
            raise FieldError(
                ("approvals", "http"),
                "answering approvals over HTTP lets tools run, so it needs engine.http.auth_token "
                "(e.g. ${keyring:ava_http_token}); set one, or leave approvals.http off",
            )
        return self

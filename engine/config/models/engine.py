"""The ``engine:`` section: HTTP API, logging, the engine's own MCP endpoint and global engine limits.

Settings the engine process itself reads at start-up, as opposed to what it connects to (providers, MCP
servers) or what calls do (contexts, budget).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from engine.config.models.common import FieldError, Strict


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

"""The ``mcp:`` section: MCP servers the engine connects to, their transports, restarts and per-tool settings.

Also owns the naming rules shared with the MCP host and console (``SERVER_ID_RE`` for server ids,
``EXPOSED_NAME_RE`` for the names tools are exposed under, ``default_exposed_name``) and the config-time half of
the naming check: an ``expose_as`` claimed twice, or equal to the default name of a tool another server lists
under ``tools:``, is a config error naming both key paths (``expose_as_conflicts``). Collisions only discovery can
see are resolved by the MCP host (``engine.mcp.naming``), never by rejecting the config.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, SecretStr, field_validator, model_validator

from engine.config.models.common import FieldError, Strict
from engine.config.models.oauth import OAuthConfig

EXPOSED_NAME_RE = re.compile(r"^[a-z0-9_]{1,64}$")
SERVER_ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_BAD_NAME_CHARS = re.compile(r"[^a-z0-9_]+")
_UNDERSCORES = re.compile(r"_+")


def normalise_name(text: str) -> str:
    """Lower-case, every run of characters outside ``[a-z0-9_]`` becomes one ``_``, no edge underscores."""
    out = _UNDERSCORES.sub("_", _BAD_NAME_CHARS.sub("_", text.strip().lower())).strip("_")
    return out or "tool"


def default_exposed_name(server_id: str, tool: str) -> str:
    """``mcp_{server_id}_{tool}``: the name a tool gets unless it collides or is too long (then it gets a hash)."""
    return f"mcp_{server_id}_{normalise_name(tool)}"


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


class ServerAuthConfig(Strict):
    oauth: OAuthConfig = Field(
        description="OAuth 2.1: a person's sign-in (`ava-engine mcp login`) or a grant without one (oauth.grant)."
    )


class McpServerConfig(Strict):
    transport: Literal["stdio", "http", "sse", "inprocess", "bundled"] = "stdio"
    enabled: bool = True
    command: list[str] = Field(default_factory=list)
    cwd: str | None = None
    env: dict[str, SecretStr] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    auth: ServerAuthConfig | None = Field(
        default=None, description="http: sign in with OAuth 2.1 (`ava-engine mcp login SERVER`)."
    )
    target: str | None = Field(
        default=None,
        description="inprocess, bundled: 'module:attribute' of an SDK server object, or of a factory returning one.",
    )
    args: list[str] | None = Field(
        default=None,
        description="inprocess, bundled: the command-line arguments the target's factory is called with.",
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
        if self.command and self.url:  # one of them would be ignored without a word
            raise FieldError((), "give either command (stdio) or url (http/sse), not both")
        if self.transport == "stdio" and not self.command:
            raise FieldError("command", "a stdio server needs 'command' (a list: program and arguments)")
        if self.transport in ("http", "sse"):
            if not self.url:
                raise FieldError("url", f"an {self.transport} server needs 'url'")
            if not re.match(r"^https?://[^\s/]+", self.url):
                raise FieldError("url", f"{self.url!r} is not an http(s) URL")
        if self.auth is not None:
            if self.transport != "http":
                raise FieldError("auth", "only an http (Streamable HTTP) server takes 'auth'")
            if any(k.lower() == "authorization" for k in self.headers):
                raise FieldError(
                    ("headers",), "an 'Authorization' header and 'auth.oauth' exclude each other: remove the header"
                )
        if self.transport in ("inprocess", "bundled") and not self.target:
            article = "an" if self.transport == "inprocess" else "a"
            raise FieldError("target", f"{article} {self.transport} server needs 'target' (module:attribute)")
        if self.args is not None and self.transport not in ("inprocess", "bundled"):
            raise FieldError(
                "args", "only inprocess and bundled servers take 'args' (a stdio server's go in 'command')"
            )
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


def _where(sid: str, index: int, key: str) -> str:
    return f"mcp.servers.{sid}.tools[{index}].{key}"


def expose_as_conflicts(servers: dict[str, McpServerConfig]) -> list[tuple[tuple[str | int, ...], str]]:
    """(loc under ``mcp``, message) for every ``expose_as`` claimed twice or equal to another tool's default name.

    Only what the config itself shows: the tools listed under ``tools:``. Each message names both key paths.
    """
    claimed: dict[str, str] = {}
    defaults: dict[str, str] = {}
    for sid, server in servers.items():
        for i, tool in enumerate(server.tools):
            if tool.expose_as is None:
                defaults.setdefault(default_exposed_name(sid, tool.name), _where(sid, i, "name"))
    out: list[tuple[tuple[str | int, ...], str]] = []
    for sid, server in servers.items():
        for i, tool in enumerate(server.tools):
            name = tool.expose_as
            if name is None:
                continue
            loc: tuple[str | int, ...] = ("servers", sid, "tools", i, "expose_as")
            prior = claimed.get(name)
            if prior is not None:
                out.append((loc, f"{name!r} is already claimed by {prior}; every expose_as must be unique"))
                continue
            claimed[name] = _where(sid, i, "expose_as")
            owner = defaults.get(name)
            if owner is not None:
                out.append(
                    (
                        loc,
                        f"{name!r} is the default exposed name of the tool at {owner}; "
                        "choose another expose_as (or give that tool an expose_as of its own)",
                    )
                )
    return out


class McpConfig(Strict):
    enabled: bool = True
    servers: dict[ServerId, McpServerConfig] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_exposed_names(self) -> McpConfig:
        conflicts = expose_as_conflicts(self.servers)
        if conflicts:
            loc, message = conflicts[0]
            raise FieldError(loc, message)
        return self

"""The ``tools:`` section: settings of the engine's built-in tools (transfer targets, email, hangup).

Distinct from per-tool settings of MCP servers, which live under ``mcp.servers.<id>.tools`` (see ``mcp``).
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from engine.config.models.common import Strict


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

"""The ``tools:`` section: settings of the engine's built-in tools (transfer targets, email, hangup).

Distinct from per-tool settings of MCP servers, which live under ``mcp.servers.<id>.tools`` (see ``mcp``).
"""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from engine.config.models.common import Strict


class TransferTarget(Strict):
    """A place calls can be transferred to: ``tools.extensions.<name>``."""

    description: str = ""
    #: The dial string originated directly (``PJSIP/6000``, ``SIP/6000``, ``PJSIP/+15551234@trunk``).
    destination: str
    #: Other words callers use for it ("agent", "human", "a person").
    aliases: list[str] = Field(default_factory=list)
    #: Seconds the target may ring before the transfer counts as not answered.
    timeout_s: int = Field(default=30, ge=1, le=300)

    @field_validator("destination")
    @classmethod
    def _direct_dial(cls, v: str) -> str:
        tech, sep, rest = v.partition("/")
        if not sep or not tech or not rest:
            raise ValueError(f"{v!r} is not a dial string like PJSIP/6000")
        if tech.lower() == "local":
            raise ValueError(
                f"{v!r} is a Local/ channel: transfers dial the target directly (PJSIP/6000), so the bridge "
                "holds exactly the caller and the agent"
            )
        return v


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

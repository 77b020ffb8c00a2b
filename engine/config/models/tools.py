"""The ``tools:`` section: settings of the engine's built-in tools (transfer targets, email, hangup).

Distinct from per-tool settings of MCP servers, which live under ``mcp.servers.<id>.tools`` (see ``mcp``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from engine.config.models.common import FieldError, Strict


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


def operator_address(v: str) -> str:
    """An address an operator wrote (config, ``ava-engine email test``): syntax only, and private or test domains
    (``mail.internal``, ``example.test``) are fine — they are the operator's own; ``ValueError`` saying why not."""
    from email_validator import EmailNotValidError, validate_email

    try:
        return validate_email(
            v, check_deliverability=False, test_environment=True, globally_deliverable=False
        ).normalized
    except EmailNotValidError as e:
        raise ValueError(f"{v!r} is not an e-mail address: {e}") from None


class EmailConfig(Strict):
    """``tools.email``: how the e-mail tools deliver (``engine.email``), and to whom the summaries go."""

    enabled: bool = False
    #: ``smtp`` (aiosmtplib) or ``resend`` (Resend's HTTP API).
    transport: Literal["smtp", "resend"] = "smtp"
    smtp_host: str = "127.0.0.1"
    smtp_port: int = Field(default=25, ge=1, le=65535)
    username: str | None = None
    password: SecretStr | None = None
    #: Implicit TLS from the first byte (SMTPS, usually port 465).
    use_tls: bool = False
    #: Upgrade a plain connection with STARTTLS (usually port 587); exclusive with ``use_tls``.
    starttls: bool = False
    #: A PEM file of CA certificates to verify the SMTP server with instead of the system's (a private CA,
    #: a self-signed server); relative to the config file.
    tls_ca_file: str | None = None
    resend_api_key: SecretStr | None = None
    #: Resend's API base (tests point it at a loopback fake).
    resend_url: str = "https://api.resend.com"
    from_address: str | None = None
    admin_address: str | None = None
    #: Send the admin a summary at the end of every call.
    summary: bool = False
    #: A folder (relative to the config file) whose ``summary.html``/``summary.txt``/``transcript.html``/
    #: ``transcript.txt``/``link.html``/``link.txt`` replace the built-in templates; files it lacks keep the
    #: built-in ones.
    templates: str | None = None
    summary_subject: str = "Call summary: {caller} on {date} ({duration})"
    transcript_subject: str = "Your call transcript from {date}"
    #: The subject of a link a tool asked the caller to open, e-mailed to them (``contexts.*.elicitation.url``).
    link_subject: str = "The link from your call on {date}"
    #: The outbox's SQLite file (relative to the config file); default: ``outbox.sqlite3`` in the user data folder.
    outbox: str | None = None
    #: Ask DNS whether a caller's domain takes mail (MX, else A/AAAA) before the read-back.
    check_domains: bool = True
    #: DNS servers (IP addresses) for that check; empty: the system's resolvers.
    nameservers: list[str] = Field(default_factory=list)
    dns_port: int = Field(default=53, ge=1, le=65535)
    #: Seconds one delivery attempt may take (connect, TLS, AUTH, DATA, or the HTTP request).
    timeout_s: float = Field(default=15.0, gt=0, le=300)
    #: Attempts before a message that keeps failing temporarily ends ``failed``; unset (the default): only
    #: ``max_age_s`` ends it.
    max_attempts: int | None = Field(default=None, ge=1, le=10000)
    #: First wait before a retry, doubled on every retry up to ``retry_max_s`` (1 min, 2, 4, ... 30 min).
    retry_first_s: float = Field(default=60.0, gt=0, le=3600)
    retry_max_s: float = Field(default=1800.0, gt=0, le=86400)
    #: A message that keeps failing temporarily ends ``failed`` this long after it became due (48 h: an outage of a
    #: day or more loses nothing).
    max_age_s: float = Field(default=48 * 3600.0, gt=0, le=30 * 86400)

    @field_validator("from_address", "admin_address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        return None if v is None else operator_address(v)

    @model_validator(mode="after")
    def _coherent(self) -> EmailConfig:
        if self.use_tls and self.starttls:
            raise FieldError(
                "starttls", "use_tls (implicit TLS) and starttls exclude each other: pick one", ("use_tls",)
            )
        if self.retry_max_s < self.retry_first_s:
            raise FieldError("retry_max_s", "retry_max_s is below retry_first_s", ("retry_first_s",))
        if not self.enabled:
            return self
        if self.from_address is None:
            raise FieldError(
                "from_address", "tools.email is enabled but has no from_address to send from", ("enabled",)
            )
        if self.transport == "resend" and self.resend_api_key is None:
            raise FieldError("resend_api_key", "transport resend needs resend_api_key", ("transport",))
        if self.password is not None and self.username is None:
            raise FieldError("username", "a password without a username: SMTP AUTH needs both", ("password",))
        if self.summary and self.admin_address is None:
            raise FieldError("admin_address", "summary is on but there is no admin_address to send it to", ("summary",))
        return self


class HangupConfig(Strict):
    farewell: str = "Thank you for calling. Goodbye!"


class BuiltinToolsConfig(Strict):
    extensions: dict[str, TransferTarget] = Field(default_factory=dict)
    email: EmailConfig = Field(default_factory=EmailConfig)
    hangup: HangupConfig = Field(default_factory=HangupConfig)

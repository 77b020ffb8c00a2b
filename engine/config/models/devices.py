"""The ``softphone:``, ``asterisk:`` and ``console:`` sections: the local audio device, telephony and the TUI.

The ways a person reaches the engine; each is optional and has defaults that work on a developer machine.
"""

from __future__ import annotations

import ipaddress
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from engine.config.models.common import FieldError, Strict


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
    ari_url: str = Field(default="http://127.0.0.1:8088/ari", description="Asterisk's ARI base URL (http.conf).")
    username: str = "ava"
    password: SecretStr | None = None
    app_name: str = Field(default="ava", description="The Stasis application the dialplan sends calls to.")
    default_context: str | None = None
    media: Literal["rtp", "websocket"] = Field(
        default="rtp", description="rtp: externalMedia over UDP; websocket: chan_websocket (Asterisk 20.16+)."
    )
    rtp_host: str = Field(
        default="127.0.0.1",
        description="The engine's address Asterisk sends the caller's RTP to (an IPv6 one in brackets: [::1]).",
    )
    rtp_port_start: int = Field(default=18000, ge=1024, le=65535)
    rtp_port_end: int = Field(default=18999, ge=1024, le=65535)
    request_timeout_s: float = Field(default=5.0, gt=0, le=60)
    #: Caller ID the engine's transfer calls carry (the AI's own identity extension).
    caller_id: str = '"AVA" <7000>'

    @field_validator("ari_url")
    @classmethod
    def _http_ari_url(cls, v: str) -> str:
        try:
            parts = urlsplit(v.strip())
            host = parts.hostname if parts.port is None or parts.port >= 0 else None
        except ValueError:  # an unclosed [ of an IPv6 host, a port that is no number
            parts, host = None, None
        if parts is None or parts.scheme not in ("http", "https") or not host:
            what = f"a {parts.scheme}: URL" if parts is not None and parts.scheme else "not one"
            raise ValueError(
                f"must be the http(s) URL of Asterisk's ARI (http.conf, with /ari), e.g. http://127.0.0.1:8088/ari;"
                f" this is {what}"
            )
        return v

    @field_validator("rtp_host")
    @classmethod
    def _sendable_rtp_host(cls, v: str) -> str:
        """The address Asterisk is told to send the caller's RTP to (and the engine listens on): never the
        unspecified address, and an IPv6 literal in brackets, as Asterisk writes ``host:port``."""
        bracketed = v.startswith("[") and v.endswith("]")
        try:
            address = ipaddress.ip_address((v[1:-1] if bracketed else v).split("%", 1)[0])
        except ValueError:
            if bracketed or ":" in v or not v.strip():
                raise ValueError(
                    f"{v!r} is neither an IP address nor a host name; write the engine's own address "
                    "as Asterisk reaches it, e.g. 127.0.0.1 or [::1]"
                ) from None
            return v  # a host name
        if address.is_unspecified:
            raise ValueError(
                f"{v!r} is the unspecified address: Asterisk would be told to send the caller's RTP there, and "
                "cannot; write the engine's own address as Asterisk reaches it (127.0.0.1 when both run on one "
                "host, else this host's address on Asterisk's network)"
            )
        if address.version == 6 and not bracketed:
            raise ValueError(f"an IPv6 address needs brackets here, as Asterisk writes host:port; write '[{v}]'")
        if address.version == 4 and bracketed:
            raise ValueError(f"brackets are for IPv6 addresses only; write '{v[1:-1]}'")
        return v

    @model_validator(mode="after")
    def _port_range(self) -> AsteriskConfig:
        if self.rtp_port_end < self.rtp_port_start:
            raise FieldError(
                "rtp_port_end", f"rtp_port_end {self.rtp_port_end} is below rtp_port_start {self.rtp_port_start}"
            )
        return self


class ConsoleConfig(Strict):
    keymap: dict[str, str] = Field(default_factory=dict, description="action id -> key, e.g. tier_deep: f3")

"""The scale-out keys of the ``engine:`` section: where live state and events go, who this engine is, its capacity.

Why apart from ``engine.py``: these keys belong together (the store URL, the engine's id, the switch for a store
that is away at start, the buffer that covers an outage, the call limit) and are read by ``engine.store`` and
``engine.calls.capacity`` only. ``EngineConfig`` inherits them, so in YAML they sit directly under ``engine:``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from pydantic import Field, field_validator

from engine.config.models.common import Strict

STORE_SCHEMES = ("redis", "rediss")
_ENGINE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
#: No ':' (it ends the environment's part of a Redis key) and nothing a SCAN pattern treats specially.
_ENVIRONMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_store_url(value: str) -> str:
    """``memory`` or ``redis://[user:password@]host:port/db`` (``rediss://`` for TLS); a clear error otherwise."""
    v = value.strip()
    if v == "memory":
        return v
    try:
        parts = urlsplit(v)
        port = parts.port
    except ValueError as e:
        raise ValueError(f"not a valid store URL ({e}); use memory or redis://[user:password@]host:port/db") from None
    if parts.scheme not in STORE_SCHEMES:
        scheme = parts.scheme or "none"
        raise ValueError(
            f"scheme {scheme!r} is not a store: use memory, redis://[user:password@]host:port/db or rediss:// (TLS)"
        )
    if not parts.hostname:
        raise ValueError("the Redis URL names no host: redis://[user:password@]host:port/db")
    if port == 0:
        raise ValueError("port 0 is not a Redis port")
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ValueError(f"the database {db!r} must be a number (redis://host:port/0)")
    if parts.query or parts.fragment:
        raise ValueError("the Redis URL takes no ?query or #fragment here; only redis://[user:password@]host:port/db")
    return v


def store_url_secrets(url: str) -> set[str]:
    """The password of a Redis URL, as written and percent-decoded (the redactor masks both)."""
    if url == "memory":
        return set()
    try:
        password = urlsplit(url).password
    except ValueError:
        return set()
    return {password, unquote(password)} if password else set()


def safe_store_url(url: str) -> str:
    """The URL without its password (``redis://user:***@host:port/db``), for logs, status and errors."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


class ScaleOutConfig(Strict):
    store: str = Field(
        default="memory",
        description="Where live call state and events go: memory (this process only), or "
        "redis://[user:password@]host:port/db / rediss:// (TLS) to share them with other engines and consoles. "
        "Put the password in the keyring: redis://:${keyring:redis_password}@host:6379/0.",
    )
    store_required: bool = Field(
        default=False,
        description="Redis unreachable at start: true refuses to start (the error says why); false runs "
        "standalone with a warning and keeps trying, buffering events (store_buffer) until it connects.",
    )
    store_buffer: int = Field(
        default=10_000,
        ge=100,
        le=1_000_000,
        description="Events held while Redis is away; they are written in order on reconnect. Past this many the "
        "oldest are dropped and counted (ai_agent_store_events_dropped_total, /health, the log).",
    )
    store_stream_maxlen: int = Field(
        default=10_000,
        ge=100,
        description="About how many events each Redis stream keeps (XADD MAXLEN ~), per engine and per call.",
    )
    heartbeat_s: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="How often the engine refreshes its registration in the store; it expires after 3 of these, "
        "so a dead engine disappears within 3 heartbeats.",
    )
    call_state_ttl_s: float = Field(
        default=300.0,
        gt=0,
        description="How long an ended call's state (its Redis hash) is kept after the call ends.",
    )
    id: str | None = Field(
        default=None,
        description="This engine's id in the store and the heartbeat (default: host name and process id).",
    )
    environment: str = Field(
        default="default",
        description="The deployment this engine belongs to (e.g. production, staging): engines of one environment "
        "share their measured tool latencies and calibration results through the store, so a new engine starts "
        "with measured latencies instead of declared ones.",
    )
    max_calls: int | None = Field(
        default=None,
        ge=1,
        description="Most live calls at once: past it new calls are refused (Asterisk callers get a busy). "
        "Unset: no limit.",
    )

    @field_validator("store")
    @classmethod
    def _store_url(cls, v: str) -> str:
        return check_store_url(v)

    @field_validator("id")
    @classmethod
    def _engine_id(cls, v: str | None) -> str | None:
        if v is not None and not _ENGINE_ID.fullmatch(v):
            raise ValueError(
                f"{v!r} is not an engine id: 1 to 64 letters, digits, '.', '_', ':' or '-', starting with a "
                "letter or digit"
            )
        return v

    @field_validator("environment")
    @classmethod
    def _environment(cls, v: str) -> str:
        if not _ENVIRONMENT.fullmatch(v):
            raise ValueError(
                f"{v!r} is not an environment name: 1 to 64 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit"
            )
        return v

    def secret_parts(self) -> set[str]:
        """Secrets inside plain-text fields (the store URL's password), for
        ``engine.redaction.redactor.secret_values``."""
        return store_url_secrets(self.store)

"""OAuth tokens and client registrations of remote MCP servers, kept in the OS keyring (the SDK's ``TokenStorage``).

Why it exists: a remote server's access and refresh tokens must survive a restart of the engine, yet never touch the
YAML, a log, an event, the status or CLI output. They live in the same OS keyring as the config's named secrets
(``engine.config.secrets`` decides whether a usable backend exists and words its errors), under a service of their
own (``ava-console-oauth``) so they never show up in ``ava-engine secrets list``. One keyring entry per server id
holds a JSON record: the server URL the tokens were issued for, the tokens, their absolute expiry (the SDK only keeps
``expires_in``, which means nothing after a restart) and the client registration.

The record is bound to the URL: if the config points the server id at another URL, the stored tokens are ignored
(never presented to a server they were not issued for). Every value read or written is handed to ``on_secret`` so
the caller's redactor masks it from then on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import keyring
import pydantic
from keyring.errors import KeyringError, PasswordDeleteError
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata

from engine.config.secrets import SecretsError, backend_problem

log = logging.getLogger(__name__)

SERVICE = "ava-console-oauth"
M = TypeVar("M", bound=pydantic.BaseModel)


def _failure(action: str, server_id: str, exc: Exception) -> SecretsError:
    return SecretsError(f"server {server_id}: the OS keyring could not {action}: {type(exc).__name__}")


def _parsed(model: type[M], raw: Any) -> M | None:
    """``raw`` from the stored record as ``model``; None when nothing is stored or it no longer parses."""
    try:
        return model.model_validate(raw) if raw else None
    except pydantic.ValidationError:
        return None


class KeyringTokenStorage:
    """The SDK's ``TokenStorage`` for one server id and URL, backed by one keyring entry."""

    def __init__(self, server_id: str, url: str, on_secret: Callable[[Iterable[str]], None] | None = None) -> None:
        self.server_id = server_id
        self.url = url
        self._on_secret = on_secret
        #: ``status()`` as of the last read or write (None before any): the status shows it without a keyring call.
        self.last_status: dict[str, Any] | None = None

    # ------------------------------------------------------------------------------------------- the record

    def _require_backend(self) -> None:
        _require(self.server_id)

    def _read(self) -> dict[str, Any]:
        self._require_backend()
        try:
            raw = keyring.get_password(SERVICE, self.server_id)
        except KeyringError as e:
            raise _failure("read the OAuth tokens", self.server_id, e) from None
        record: Any = {}
        try:
            record = json.loads(raw) if raw else {}
        except ValueError:
            log.warning("server %s: the stored OAuth record is corrupt; sign in again", self.server_id)
        if not isinstance(record, dict) or record.get("url") != self.url:
            record = {}  # issued for another URL (the config changed): never sent anywhere else
        self._remember(record)
        return record

    def _write(self, record: dict[str, Any]) -> None:
        self._require_backend()
        record["url"] = self.url
        self._remember(record)
        try:
            keyring.set_password(SERVICE, self.server_id, json.dumps(record))
        except KeyringError as e:
            raise _failure("store the OAuth tokens", self.server_id, e) from None

    def _remember(self, record: dict[str, Any]) -> None:
        tokens = record.get("tokens") or {}
        client = record.get("client") or {}
        self.last_status = {
            "signed_in": bool(tokens.get("access_token")),
            "expires_at": record.get("expires_at"),
            "can_refresh": bool(tokens.get("refresh_token")),
            "scope": tokens.get("scope"),
        }
        if self._on_secret is None:
            return
        dpop_key = (record.get("dpop") or {}).get("key")
        values = [tokens.get("access_token"), tokens.get("refresh_token"), client.get("client_secret"), dpop_key]
        self._on_secret([v for v in values if isinstance(v, str)])

    def mask(self, values: Iterable[str]) -> None:
        """Credentials met outside the record (an assertion, an ID-JAG) join the caller's redactor too."""
        if self._on_secret is not None:
            self._on_secret([v for v in values if v])

    # ------------------------------------------------------------------------------------------- TokenStorage

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = self._read()
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        record["expires_at"] = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        self._write(record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = self._read()
        record["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(record)

    # ------------------------------------------------------------------------------------------- for the engine

    def tokens(self) -> OAuthToken | None:
        return _parsed(OAuthToken, self._read().get("tokens"))

    def client_info(self) -> OAuthClientInformationFull | None:
        return _parsed(OAuthClientInformationFull, self._read().get("client"))

    def set_discovery(self, resource: dict[str, Any] | None, server: dict[str, Any] | None) -> None:
        """Keep what discovery found (protected-resource and authorization-server metadata, no secrets): a restarted
        engine refreshes at the right token endpoint, with the right ``resource``, without a 401 first."""
        record = self._read()
        record["discovery"] = {"resource": resource, "server": server}
        self._write(record)

    def discovery(self) -> tuple[ProtectedResourceMetadata | None, OAuthMetadata | None]:
        found = self._read().get("discovery") or {}
        try:
            prm = ProtectedResourceMetadata.model_validate(found["resource"]) if found.get("resource") else None
            asm = OAuthMetadata.model_validate(found["server"]) if found.get("server") else None
        except pydantic.ValidationError:
            return None, None
        return prm, asm

    def forget_client(self) -> None:
        """Drop the client registration (its redirect URI no longer fits); the tokens stay until replaced."""
        record = self._read()
        if record.pop("client", None) is not None:
            self._write(record)

    def want_scope(self, scope: str) -> None:
        """Keep the scopes the next sign-in asks for (a step-up asked for more than was granted)."""
        record = self._read()
        record["wanted_scope"] = scope
        self._write(record)

    def wanted_scope(self) -> str | None:
        value = self._read().get("wanted_scope")
        return value if isinstance(value, str) and value else None

    def dpop_key(self) -> str | None:
        """The server's DPoP private key (PEM), None before its first DPoP token request."""
        key = (self._read().get("dpop") or {}).get("key")
        return key if isinstance(key, str) else None

    def set_dpop_key(self, pem: str) -> None:
        record = self._read()
        record["dpop"] = {"key": pem, "bound": False}
        self._write(record)

    def dpop_bound(self) -> bool:
        """Whether the stored access token is bound to the DPoP key (presented as ``DPoP``, not ``Bearer``)."""
        return bool((self._read().get("dpop") or {}).get("bound"))

    def set_dpop_bound(self, bound: bool) -> None:
        record = self._read()
        if bound or record.get("dpop"):
            record["dpop"] = {**(record.get("dpop") or {}), "bound": bound}
            self._write(record)

    def expires_at(self) -> float | None:
        """When the stored access token expires (unix time), None when it did not say or none is stored."""
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    def status(self) -> dict[str, Any]:
        """What may be shown: whether tokens are stored, when they expire, whether they can refresh. No values."""
        self._read()
        assert self.last_status is not None
        return dict(self.last_status)

    def delete(self) -> bool:
        """Forget the tokens and the client registration; True when something was stored."""
        self.last_status = None
        return forget_oauth_sign_in(self.server_id)


def _require(server_id: str) -> None:
    problem = backend_problem()
    if problem:
        raise SecretsError(f"server {server_id}: cannot keep its OAuth tokens: {problem}")


def oauth_sign_in_stored(server_id: str) -> bool:
    """Whether the keyring holds a sign-in record (tokens, a client registration) for ``server_id``, whatever URL it
    was issued for: what removing the server from the config would leave behind. Never reads a value out."""
    _require(server_id)
    try:
        return keyring.get_password(SERVICE, server_id) is not None
    except KeyringError as e:
        raise _failure("read the OAuth tokens", server_id, e) from None


def forget_oauth_sign_in(server_id: str) -> bool:
    """Delete ``server_id``'s tokens and client registration from the keyring; True when something was stored."""
    _require(server_id)
    try:
        keyring.delete_password(SERVICE, server_id)
    except PasswordDeleteError:
        return False
    except KeyringError as e:
        raise _failure("delete the OAuth tokens", server_id, e) from None
    return True

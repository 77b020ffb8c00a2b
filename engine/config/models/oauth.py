"""``mcp.servers.<id>.auth.oauth``: how the engine gets an access token for a remote (Streamable HTTP) MCP server.

Why it exists apart from ``mcp``: one grant per way of signing in, each with keys of its own, and every combination
that cannot work (a secret without its client, a private key and a secret at once, a key that does not fit its
algorithm) must be a config error naming the key, not a refusal from the authorization server at run time.

- ``authorization_code`` (default): a person signs in once with ``ava-engine mcp login`` (PKCE; a dynamically
  registered, CIMD or pre-registered client).
- ``client_credentials``: machine to machine, no person: ``client_id`` with ``client_secret`` (HTTP Basic) or with
  ``private_key`` / ``private_key_file`` (``private_key_jwt``, RFC 7523 §2.2).
- ``jwt_bearer``: workload identity federation (RFC 7523 §2.1): a JWT the platform issues to this workload
  (``assertion_file``, re-read for every token request since platforms rotate it, or ``assertion``).
- ``enterprise``: enterprise-managed authorization (SEP-990): the user's ID token from the enterprise identity
  provider is exchanged there for an ID-JAG (RFC 8693), which the MCP server's authorization server trades for an
  access token (RFC 7523 jwt-bearer) — the grant ``client_id`` / ``client_secret`` belong to.

The grants without a person name the authorization server (``issuer``): their credentials are only ever sent to it,
never to one the MCP server points at.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from engine.config.models.common import FieldError, Strict

Grant = Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise"]
#: The grants that get a token without a person (no browser, no ``mcp login`` needed).
MACHINE_GRANTS: tuple[Grant, ...] = ("client_credentials", "jwt_bearer", "enterprise")
#: JWS algorithms a ``private_key_jwt`` client assertion may be signed with, by the key type each needs.
SIGNING_ALGORITHMS: dict[str, str] = {
    **{f"RS{n}": "RSA" for n in (256, 384, 512)},
    **{f"PS{n}": "RSA" for n in (256, 384, 512)},
    "ES256": "EC P-256",
    "ES384": "EC P-384",
    "ES512": "EC P-521",
    "EdDSA": "Ed25519",
}

_CIMD_URL_RE = re.compile(r"^https://[^\s/?#]+/[^\s?#]*[^\s/?#][^\s?#]*$")
_HTTP_URL_RE = re.compile(r"^https?://[^\s/?#]+[^\s?#]*$")


def _http_url(v: str | None) -> str | None:
    if v is not None and not _HTTP_URL_RE.match(v):
        raise ValueError(f"{v!r} is not an http(s) URL (without query or fragment)")
    return v


def _absolute(v: str | None) -> str | None:
    if v is not None and not PurePath(v).is_absolute():
        raise ValueError(f"{v!r} must be an absolute path (the engine may run from any folder)")
    return v


def key_type(pem: str) -> str | None:
    """The ``SIGNING_ALGORITHMS`` key type of a PEM private key, None when it is not one (or not readable)."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        return None
    if isinstance(key, rsa.RSAPrivateKey):
        return "RSA"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {"secp256r1": "EC P-256", "secp384r1": "EC P-384", "secp521r1": "EC P-521"}.get(key.curve.name)
    return "Ed25519" if isinstance(key, ed25519.Ed25519PrivateKey) else None


def key_problem(pem: str, algorithm: str) -> str | None:
    """Why ``pem`` cannot sign with ``algorithm`` (never quoting the key), else None."""
    found = key_type(pem)
    if found is None:
        return "is not an unencrypted PEM private key (RSA, EC P-256/384/521 or Ed25519)"
    wanted = SIGNING_ALGORITHMS[algorithm]
    return None if found == wanted else f"is an {found} key; signing_algorithm {algorithm} needs an {wanted} key"


class IdentityProviderConfig(Strict):
    """The enterprise identity provider that exchanges the user's ID token for an ID-JAG (RFC 8693)."""

    token_endpoint: str = Field(description="The identity provider's token endpoint (RFC 8693 token exchange).")
    client_id: str | None = Field(default=None, min_length=1, description="This client at the identity provider.")
    client_secret: SecretStr | None = Field(
        default=None, description="Its secret at the identity provider, as ${keyring:NAME} (HTTP Basic)."
    )
    id_token: SecretStr | None = Field(
        default=None, description="The user's ID token from the identity provider, as ${keyring:NAME} or ${VAR}."
    )
    id_token_file: str | None = Field(
        default=None, description="An absolute path to a file holding the ID token (read for every exchange)."
    )

    @field_validator("token_endpoint")
    @classmethod
    def _valid_url(cls, v: str) -> str:
        _http_url(v)
        return v

    @field_validator("id_token_file")
    @classmethod
    def _valid_file(cls, v: str | None) -> str | None:
        return _absolute(v)

    @model_validator(mode="after")
    def _one_token(self) -> IdentityProviderConfig:
        if (self.id_token is None) == (self.id_token_file is None):
            raise FieldError("id_token", "give exactly one of id_token and id_token_file", ("id_token_file",))
        if self.client_secret is not None and self.client_id is None:
            raise FieldError("client_secret", "a client_secret needs the client_id it belongs to")
        return self


class OAuthConfig(Strict):
    """OAuth 2.1 for a remote (Streamable HTTP) server; tokens live in the OS keyring, never here."""

    grant: Grant = Field(
        default="authorization_code",
        description="authorization_code (a person signs in with `ava-engine mcp login`), client_credentials "
        "(machine to machine), jwt_bearer (workload identity federation) or enterprise (SEP-990 ID-JAG).",
    )
    client_name: str = Field(default="ava-console", min_length=1, description="The client name shown on consent.")
    scopes: list[str] = Field(
        default_factory=list,
        description="Scopes to ask for; empty = what the server's metadata or 401 challenge names.",
    )
    client_metadata_url: str | None = Field(
        default=None,
        description="A Client ID Metadata Document URL (https, with a path), used as client_id when the "
        "authorization server supports CIMD; otherwise dynamic client registration is used.",
    )
    redirect_port: int = Field(
        default=0, ge=0, le=65535, description="Loopback port of the sign-in redirect listener (0 = any free port)."
    )
    client_id: str | None = Field(
        default=None,
        min_length=1,
        description="A client registered with the authorization server beforehand (no dynamic registration); "
        "its redirect URI is http://127.0.0.1:PORT/callback (set redirect_port when the server does not accept "
        "any loopback port, as RFC 8252 asks).",
    )
    client_secret: SecretStr | None = Field(
        default=None,
        description="The pre-registered client's secret, as ${keyring:NAME} (sent with HTTP Basic "
        "authentication); none for a public client.",
    )
    issuer: str | None = Field(
        default=None,
        description="client_credentials, jwt_bearer, enterprise: the authorization server's issuer URL; the "
        "credentials are only sent to the token endpoint of its metadata.",
    )
    private_key: SecretStr | None = Field(
        default=None,
        description="client_credentials with private_key_jwt: the client's PEM private key, as ${keyring:NAME}.",
    )
    private_key_file: str | None = Field(
        default=None, description="client_credentials with private_key_jwt: an absolute path to the PEM key."
    )
    signing_algorithm: str = Field(
        default="RS256", description="The JWS algorithm of the private_key_jwt assertion (RS256, ES256, EdDSA, ...)."
    )
    assertion: SecretStr | None = Field(
        default=None, description="jwt_bearer: the workload's JWT, as ${VAR} or ${keyring:NAME}."
    )
    assertion_file: str | None = Field(
        default=None,
        description="jwt_bearer: an absolute path to the file the platform writes the workload's JWT to "
        "(read for every token request).",
    )
    idp: IdentityProviderConfig | None = Field(
        default=None, description="enterprise: the identity provider that issues the ID-JAG."
    )
    dpop: bool | Literal["auto"] = Field(
        default="auto",
        description="Bind tokens to a key of this engine's (DPoP, RFC 9449): auto = when the authorization server "
        "offers it (ES256), true = always ask, false = never.",
    )

    @field_validator("scopes")
    @classmethod
    def _valid_scopes(cls, v: list[str]) -> list[str]:
        for scope in v:
            if not scope or any(c.isspace() for c in scope):
                raise ValueError(f"scope {scope!r} must be one word (no spaces)")
        return v

    @field_validator("client_metadata_url")
    @classmethod
    def _valid_cimd(cls, v: str | None) -> str | None:
        if v is not None and not _CIMD_URL_RE.match(v):
            raise ValueError(f"{v!r} must be an https URL with a path (e.g. https://example.com/ava/client.json)")
        return v

    @field_validator("signing_algorithm")
    @classmethod
    def _valid_algorithm(cls, v: str) -> str:
        if v not in SIGNING_ALGORITHMS:
            raise ValueError(f"{v!r} is not one of {', '.join(SIGNING_ALGORITHMS)}")
        return v

    @field_validator("issuer")
    @classmethod
    def _valid_issuer(cls, v: str | None) -> str | None:
        return _http_url(v)

    @field_validator("private_key_file", "assertion_file")
    @classmethod
    def _valid_files(cls, v: str | None) -> str | None:
        return _absolute(v)

    @model_validator(mode="after")
    def _client(self) -> OAuthConfig:
        if self.client_secret is not None and self.client_id is None:
            raise FieldError("client_secret", "a client_secret needs the client_id it belongs to")
        if self.client_id is not None and self.client_metadata_url is not None:
            raise FieldError(
                "client_metadata_url", "give either client_id (pre-registered) or client_metadata_url (CIMD)"
            )
        self._only_for("client_credentials", "private_key", "private_key_file")
        self._only_for("jwt_bearer", "assertion", "assertion_file")
        self._only_for("enterprise", "idp")
        if self.grant == "enterprise" and self.dpop is True:
            raise FieldError("dpop", "grant enterprise gets bearer tokens only (its SDK grant has no DPoP)")
        if self.grant == "authorization_code":
            if self.issuer is not None:
                raise FieldError("issuer", "only client_credentials, jwt_bearer and enterprise take 'issuer'")
            return self
        if self.client_metadata_url is not None:
            raise FieldError("client_metadata_url", f"grant {self.grant} has no Client ID Metadata Document")
        if self.issuer is None:
            raise FieldError(
                "issuer",
                f"grant {self.grant} needs the authorization server's issuer URL (its credentials are only sent "
                "there; the server's /.well-known/oauth-protected-resource names it under authorization_servers)",
            )
        if self.grant == "client_credentials":
            self._client_credentials()
        elif self.grant == "jwt_bearer":
            if (self.assertion is None) == (self.assertion_file is None):
                raise FieldError(
                    "assertion",
                    "grant jwt_bearer needs exactly one of assertion and assertion_file",
                    ("assertion_file",),
                )
            if self.client_secret is not None:
                raise FieldError("client_secret", "grant jwt_bearer authenticates with the assertion, not a secret")
        else:
            if self.client_id is None or self.client_secret is None:
                raise FieldError(
                    ("client_id",) if self.client_id is None else ("client_secret",),
                    "grant enterprise needs client_id and client_secret (the client at the MCP server's "
                    "authorization server)",
                )
            if self.idp is None:
                raise FieldError("idp", "grant enterprise needs idp (the identity provider's token_endpoint, ...)")
        return self

    def _client_credentials(self) -> None:
        if self.client_id is None:
            raise FieldError("client_id", "grant client_credentials needs client_id")
        keys = [k for k in ("client_secret", "private_key", "private_key_file") if getattr(self, k) is not None]
        if len(keys) != 1:
            raise FieldError(
                keys[1] if len(keys) > 1 else "client_secret",
                "grant client_credentials needs exactly one of client_secret (client_secret_basic), private_key "
                "or private_key_file (private_key_jwt)",
            )
        if self.private_key is not None:
            problem = key_problem(self.private_key.get_secret_value(), self.signing_algorithm)
            if problem is not None:
                raise FieldError("private_key", problem)

    def _only_for(self, grant: Grant, *keys: str) -> None:
        for key in keys:
            if getattr(self, key) is not None and self.grant != grant:
                raise FieldError(key, f"only grant {grant} takes {key!r} (this one is grant {self.grant})")

    @property
    def machine(self) -> bool:
        """Whether the engine gets its token without a person (no browser)."""
        return self.grant in MACHINE_GRANTS

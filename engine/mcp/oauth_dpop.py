"""DPoP (RFC 9449): access tokens bound to a key of this engine's, so a stolen token is useless without the key.

Why it exists: the SDK presents bearer tokens only, and its token model refuses a ``token_type`` of ``DPoP``. Around
the provider's flow (``EngineOAuth._auth_flow``) every request passes through here on its way out and every answer
on its way back:

- **Token requests** carry a proof (``DPoP`` header: a JWT signed with the server's key, its public key in the
  header, ``htm``/``htu`` of the token endpoint, a fresh ``jti``). A ``DPoP``-typed token answer is marked bound in
  the keyring record and handed to the SDK as the ``Bearer`` its model knows.
- **Requests to the MCP server** with a bound token say ``Authorization: DPoP <token>`` with a proof that also
  carries ``ath`` (the token's hash); a bearer token stays a bearer token.
- **Nonces** (RFC 9449 §8, §9): a ``use_dpop_nonce`` refusal, from the token endpoint (400) or the MCP server (401),
  is answered once by the same request with a new proof carrying the ``DPoP-Nonce`` it sent; the latest nonce of each
  server is used from then on. The SDK's flow never sees the refusal.

One EC P-256 key per server id, made at its first use and kept in the server's keyring record (a token bound to it
outlives the process: ``mcp login`` gets it, ``serve`` uses it); a sign-out deletes both. ``auth.oauth.dpop``:
``auto`` (default) uses DPoP when the authorization server's metadata lists ES256 among its DPoP algorithms.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from typing import Any, Literal

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from engine.mcp.token_store import KeyringTokenStorage

ALGORITHM = "ES256"
NONCE_ERROR = "use_dpop_nonce"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _htu(url: httpx2.URL) -> str:
    """The request URI a proof names: no query, no fragment (RFC 9449 §4.2)."""
    return str(url.copy_with(query=None, fragment=None))


class DPoP:
    """One server's DPoP: its key, the nonces its servers sent, and the request and answer rewriting."""

    def __init__(self, storage: KeyringTokenStorage, mode: bool | Literal["auto"]) -> None:
        self.storage = storage
        self.mode = mode
        self._key: ec.EllipticCurvePrivateKey | None = None
        self._jwk: dict[str, str] | None = None
        #: Whether the stored token is DPoP-bound (read once from the keyring record, then kept up to date).
        self._bound: bool | None = None
        #: The DPoP algorithms the authorization server's metadata offers, once read (``[]``: none).
        self._offered: list[str] | None = None
        #: The latest ``DPoP-Nonce`` of each origin (the token endpoint's and the MCP server's).
        self._nonces: dict[str, str] = {}

    # ------------------------------------------------------------------------------------------- deciding

    def active(self) -> bool:
        """Whether token requests get a proof: ``dpop: true``; with ``auto``, an authorization server whose
        metadata offers ES256 for DPoP (or, before this process read it, a stored token that is bound)."""
        if self.mode is True or self.mode is False:
            return self.mode
        if self._offered is not None:
            return ALGORITHM in self._offered
        return self._is_bound()

    async def observe(self, outgoing: httpx2.Request, response: httpx2.Response) -> None:
        """Note what authorization-server metadata offers for DPoP (the SDK's metadata model drops the field)."""
        if outgoing.method != "GET" or response.status_code != 200 or "/.well-known/" not in outgoing.url.path:
            return
        try:
            found = json.loads(await response.aread())
        except ValueError:
            return
        if isinstance(found, dict) and "token_endpoint" in found:
            offered = found.get("dpop_signing_alg_values_supported")
            self._offered = [str(a) for a in offered] if isinstance(offered, list) else []

    def _is_bound(self) -> bool:
        if self._bound is None:
            self._bound = self.storage.dpop_bound()
        return self._bound

    # ------------------------------------------------------------------------------------------- the key

    def _load_key(self) -> tuple[ec.EllipticCurvePrivateKey, dict[str, str]]:
        if self._key is None or self._jwk is None:
            pem = self.storage.dpop_key()
            key = serialization.load_pem_private_key(pem.encode(), password=None) if pem else None
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                key = ec.generate_private_key(ec.SECP256R1())
                pem_out = key.private_bytes(
                    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
                )
                self.storage.set_dpop_key(pem_out.decode())
            numbers = key.public_key().public_numbers()
            self._key = key
            self._jwk = {
                "kty": "EC",
                "crv": "P-256",
                "x": _b64(numbers.x.to_bytes(32, "big")),
                "y": _b64(numbers.y.to_bytes(32, "big")),
            }
        return self._key, self._jwk

    def proof(self, method: str, url: httpx2.URL, access_token: str | None = None) -> str:
        key, jwk = self._load_key()
        claims: dict[str, Any] = {"jti": str(uuid.uuid4()), "htm": method, "htu": _htu(url), "iat": int(time.time())}
        if access_token is not None:
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        nonce = self._nonces.get(url.host + f":{url.port}")
        if nonce is not None:
            claims["nonce"] = nonce
        return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"typ": "dpop+jwt", "jwk": jwk})

    # ------------------------------------------------------------------------------------------- requests

    def sign(self, outgoing: httpx2.Request, *, token_request: bool) -> None:
        """Add the proof a request needs (a token request, or a request presenting a bound token)."""
        if token_request:
            if self.active():
                outgoing.headers["DPoP"] = self.proof(outgoing.method, outgoing.url)
            return
        presented = outgoing.headers.get("Authorization", "")
        scheme, _, token = presented.partition(" ")
        if token and scheme.lower() in ("bearer", "dpop") and self._is_bound():
            outgoing.headers["Authorization"] = f"DPoP {token}"
            outgoing.headers["DPoP"] = self.proof(outgoing.method, outgoing.url, token)
        else:
            outgoing.headers.pop("DPoP", None)

    async def wants_nonce(self, outgoing: httpx2.Request, response: httpx2.Response) -> bool:
        """Keep the answer's ``DPoP-Nonce``; True when the answer refused the proof for want of it (send again)."""
        nonce = response.headers.get("DPoP-Nonce")
        if not nonce or "DPoP" not in outgoing.headers:
            return False
        origin = outgoing.url.host + f":{outgoing.url.port}"
        had = self._nonces.get(origin)
        self._nonces[origin] = nonce
        if had == nonce:
            return False  # refused with the nonce it asked for: no second retry
        if response.status_code == 401:
            return NONCE_ERROR in response.headers.get("WWW-Authenticate", "")
        if response.status_code == 400:
            try:
                return bool(json.loads(await response.aread()).get("error") == NONCE_ERROR)
            except (ValueError, AttributeError):
                return False
        return False

    async def token_answer(self, outgoing: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
        """A token answer as the SDK's model reads it: a ``DPoP`` token marked bound and typed ``Bearer``."""
        if "DPoP" not in outgoing.headers or response.status_code not in (200, 201):
            return response
        body = await response.aread()
        try:
            found = json.loads(body)
        except ValueError:
            return response
        if not isinstance(found, dict):
            return response
        bound = str(found.get("token_type", "")).lower() == "dpop"
        self._bound = bound
        self.storage.set_dpop_bound(bound)
        if not bound:
            return response
        found["token_type"] = "Bearer"
        headers = [
            (k, v) for k, v in response.headers.items() if k.lower() not in ("content-length", "content-encoding")
        ]
        return httpx2.Response(response.status_code, headers=headers, json=found, request=response.request)

"""OAuth grants without a person (``auth.oauth.grant``), each on the SDK's own grant code inside ``EngineOAuth``.

Why it exists: a server for a machine (a back-office API, a workload in a cluster, an enterprise tool the IdP already
approved) must not wait in ``needs sign-in`` for a browser. These providers get their token on connect, again when it
expires (``oauth_watch.keep_fresh`` fetches it on time) or is refused (401), and keep it in the keyring record like
a person's sign-in; ``ava-engine mcp login`` fetches one as a test, never opening a browser. Being ``EngineOAuth``s,
the supervisor, status, faults (``oauth_faults``) and the redactor treat them as any other.

- ``client_credentials`` + ``client_secret``: the SDK's ``ClientCredentialsOAuthProvider`` (HTTP Basic).
- ``client_credentials`` + ``private_key`` / ``private_key_file``: the SDK's ``PrivateKeyJWTOAuthProvider`` with an
  assertion signed by ``SignedJWTParameters`` (RFC 7523 §2.2; ``aud`` is the issuer). The key is read for every
  assertion, so a rotated key file is picked up.
- ``jwt_bearer`` (workload identity federation, SEP-1933): the RFC 7523 §2.1 grant with the platform's JWT as
  ``assertion``, read for every request (platforms rotate the file). The SDK has no provider for this grant; the
  request is the SDK's token request with it, after the SDK's discovery.
- ``enterprise`` (SEP-990): the SDK's ``IdentityAssertionOAuthProvider`` trades an ID-JAG for the token at the
  configured issuer (leg 2; the resource server is never asked which authorization server to use). Leg 1, the
  RFC 8693 exchange of the user's ID token for that ID-JAG at the identity provider, is ``_id_jag`` here: the SDK
  leaves it to the deployment.

Every grant names its authorization server (``issuer``); the credentials go only to that server's token endpoint.
"""

from __future__ import annotations

import base64
from abc import abstractmethod
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from urllib.parse import quote

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, TokenStorage
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.utils import issuers_match, union_scopes
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import SecretStr

from engine.config.models import McpServerConfig, OAuthConfig
from engine.config.models.oauth import key_problem
from engine.mcp.oauth import EngineOAuth
from engine.mcp.oauth_faults import GrantInputError
from engine.mcp.token_store import KeyringTokenStorage

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
#: How long the identity provider may take to answer the token exchange.
IDP_TIMEOUT_S = 10.0
_FORM = {"Content-Type": "application/x-www-form-urlencoded"}
_OnNeeds = Callable[[str], None] | None


def _oauth(cfg: McpServerConfig) -> OAuthConfig:
    assert cfg.auth is not None  # only servers with auth.oauth get a provider
    return cfg.auth.oauth


def read_input(server_id: str, key: str, value: SecretStr | None, path: str | None) -> str:
    """A grant's credential from the config (``value``) or from the file at ``path`` (read now: files rotate)."""
    if value is not None:
        text = value.get_secret_value().strip()
        where = f"mcp.servers.{server_id}.auth.oauth.{key}"
    else:
        assert path is not None  # the config model demands one of the two
        where = f"mcp.servers.{server_id}.auth.oauth.{key}_file"
        try:
            text = Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
            raise GrantInputError(f"{where}: cannot read {path}: {reason}") from None
    if not text:
        raise GrantInputError(f"{where}: the {key} is empty")
    return text


def _client(oauth: OAuthConfig, method: str, grant: str) -> OAuthClientInformationFull:
    """The configured client as the SDK's record (never registered, never stored)."""
    secret = oauth.client_secret.get_secret_value() if oauth.client_secret is not None else None
    return OAuthClientInformationFull(
        client_id=oauth.client_id or "",
        client_secret=secret,
        redirect_uris=None,
        grant_types=[grant],
        token_endpoint_auth_method=method,
        scope=" ".join(oauth.scopes) or None,
    )


class MachineOAuth(EngineOAuth):
    """What every grant without a person sets up alike: the engine's fields, the config's ``auth.oauth``, the
    grant's SDK provider (``_start``), then the configured client as the SDK's record (``_method``, ``_grant_type``)."""

    #: How the client proves itself at the token endpoint, and the grant it asks for (the ``pre_registered`` record).
    _method = "client_secret_basic"
    _grant_type = "client_credentials"

    def __init__(
        self,
        server_id: str,
        cfg: McpServerConfig,
        storage: KeyringTokenStorage,
        *,
        interactive: bool,
        on_needs: _OnNeeds,
    ) -> None:
        self._engine_setup(server_id, cfg, storage, interactive, on_needs)
        self._oauth = _oauth(cfg)
        self._start(cfg, storage)
        self.machine = True
        self.pre_registered = _client(self._oauth, self._method, self._grant_type)

    @abstractmethod
    def _start(self, cfg: McpServerConfig, storage: KeyringTokenStorage) -> None:
        """Initialise the grant's SDK provider for the server at ``cfg.url`` (and name its ``credential_keys``) from
        ``self._oauth``."""


class ClientSecretOAuth(MachineOAuth, ClientCredentialsOAuthProvider):
    """``client_credentials`` with ``client_secret`` (client_secret_basic)."""

    def _start(self, cfg: McpServerConfig, storage: KeyringTokenStorage) -> None:
        oauth = self._oauth
        assert oauth.client_id is not None and oauth.client_secret is not None
        ClientCredentialsOAuthProvider.__init__(
            self,
            server_url=str(cfg.url),
            storage=storage,
            client_id=oauth.client_id,
            client_secret=oauth.client_secret.get_secret_value(),
            token_endpoint_auth_method="client_secret_basic",
            scope=self.cfg_scope,
            issuer=oauth.issuer,
        )


class PrivateKeyOAuth(MachineOAuth, PrivateKeyJWTOAuthProvider):
    """``client_credentials`` with ``private_key_jwt``: a client assertion signed with the configured key."""

    _method = "private_key_jwt"

    def _start(self, cfg: McpServerConfig, storage: KeyringTokenStorage) -> None:
        oauth = self._oauth
        assert oauth.client_id is not None
        PrivateKeyJWTOAuthProvider.__init__(
            self,
            server_url=str(cfg.url),
            storage=storage,
            client_id=oauth.client_id,
            assertion_provider=self._sign,
            scope=self.cfg_scope,
            issuer=oauth.issuer,
        )
        self.credential_keys = "private_key" if oauth.private_key is not None else "private_key_file"

    async def _sign(self, audience: str) -> str:
        oauth = self._oauth
        pem = read_input(self.server_id, "private_key", oauth.private_key, oauth.private_key_file)
        problem = key_problem(pem, oauth.signing_algorithm)
        if problem is not None:
            raise GrantInputError(f"mcp.servers.{self.server_id}.auth.oauth.{self.credential_keys}: {problem}")
        assert oauth.client_id is not None
        signer = SignedJWTParameters(
            issuer=oauth.client_id, subject=oauth.client_id, signing_key=pem, signing_algorithm=oauth.signing_algorithm
        )
        assertion = await signer.create_assertion_provider()(audience)
        self.storage.mask([assertion])
        return assertion


class WorkloadOAuth(MachineOAuth):
    """``jwt_bearer``: workload identity federation, the platform's JWT traded for an access token (RFC 7523 §2.1)."""

    _method = "none"
    _grant_type = JWT_BEARER_GRANT_TYPE

    def _start(self, cfg: McpServerConfig, storage: KeyringTokenStorage) -> None:
        metadata = OAuthClientMetadata(
            redirect_uris=None,
            grant_types=[self._grant_type],
            token_endpoint_auth_method="none",
            scope=self.cfg_scope,
        )
        OAuthClientProvider.__init__(self, server_url=str(cfg.url), client_metadata=metadata, storage=storage)
        self.credential_keys = "assertion" if self._oauth.assertion is not None else "assertion_file"

    async def _perform_authorization(self) -> httpx2.Request:
        ctx = self.context
        issuer = self._oauth.issuer
        assert issuer is not None
        found = str(ctx.oauth_metadata.issuer) if ctx.oauth_metadata is not None else None
        if found is None or not issuers_match(found, issuer):
            raise OAuthFlowError(
                f"the server's authorization server is {found or 'unknown (no metadata found)'}, not the configured "
                f"issuer {issuer} (mcp.servers.{self.server_id}.auth.oauth.issuer): the assertion is not sent there"
            )
        assertion = read_input(self.server_id, "assertion", self._oauth.assertion, self._oauth.assertion_file)
        self.storage.mask([assertion])
        data = {"grant_type": JWT_BEARER_GRANT_TYPE, "assertion": assertion}
        if self._oauth.client_id:
            data["client_id"] = self._oauth.client_id
        if ctx.should_include_resource_param(ctx.protocol_version):
            data["resource"] = ctx.get_resource_url()
        scope = union_scopes(ctx.client_metadata.scope, self.wanted_scope())
        if scope:
            data["scope"] = scope
        return httpx2.Request("POST", self._get_token_endpoint(), data=data, headers=dict(_FORM))


class _FreshStart:
    """A sign-in's view of the token store: no stored token to start from (a new one is fetched); writes go through."""

    def __init__(self, storage: KeyringTokenStorage) -> None:
        self._storage = storage

    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._storage.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        return None


class EnterpriseOAuth(MachineOAuth):
    """``enterprise`` (SEP-990): the user's ID token → ID-JAG at the identity provider → access token at ``issuer``."""

    _grant_type = JWT_BEARER_GRANT_TYPE

    def _start(self, cfg: McpServerConfig, storage: KeyringTokenStorage) -> None:
        oauth = self._oauth
        assert oauth.idp is not None and oauth.issuer is not None
        assert oauth.client_id is not None and oauth.client_secret is not None
        metadata = OAuthClientMetadata(redirect_uris=None, grant_types=[self._grant_type], scope=self.cfg_scope)
        OAuthClientProvider.__init__(self, server_url=str(cfg.url), client_metadata=metadata, storage=storage)
        store: TokenStorage = _FreshStart(storage) if self.interactive else storage
        self._grant = IdentityAssertionOAuthProvider(
            server_url=str(cfg.url),
            storage=store,
            client_id=oauth.client_id,
            client_secret=oauth.client_secret.get_secret_value(),
            issuer=oauth.issuer,
            assertion_provider=self._id_jag,
            scope=self.cfg_scope,
            token_endpoint_auth_method="client_secret_basic",
        )

    def refresh_due_in(self) -> float | None:
        return None  # the SDK's provider trades a new ID-JAG itself once its token has expired

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        grant = self._grant.async_auth_flow(request)
        waiting_on: httpx2.Request | None = None
        try:
            outgoing = await grant.__anext__()
            while True:
                waiting_on = None if outgoing is request else outgoing
                response = yield outgoing
                waiting_on = None
                outgoing = await grant.asend(response)
        except StopAsyncIteration:
            return
        except Exception as e:
            self.fault = self.explain(e)
            if self.interactive:
                raise
            request.headers.pop("Authorization", None)  # its 401 reaches the caller as an ordinary error
            yield request
        finally:
            if waiting_on is not None:
                self.fault = self._unreachable(waiting_on)
            await grant.aclose()

    async def _id_jag(self, audience: str, resource: str) -> str:
        """Leg 1 (RFC 8693): the user's ID token exchanged at the identity provider for an ID-JAG naming the
        authorization server (``audience``) and this MCP server (``resource``)."""
        idp = self._oauth.idp
        assert idp is not None
        key = f"mcp.servers.{self.server_id}.auth.oauth.idp"
        id_token = read_input(self.server_id, "idp.id_token", idp.id_token, idp.id_token_file)
        data = {
            "grant_type": TOKEN_EXCHANGE_GRANT,
            "requested_token_type": ID_JAG_TYPE,
            "subject_token": id_token,
            "subject_token_type": ID_TOKEN_TYPE,
            "audience": audience,
            "resource": resource,
        }
        if self.cfg_scope:
            data["scope"] = self.cfg_scope
        headers = dict(_FORM)
        if idp.client_secret is not None and idp.client_id is not None:
            pair = f"{quote(idp.client_id, safe='')}:{quote(idp.client_secret.get_secret_value(), safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif idp.client_id is not None:
            data["client_id"] = idp.client_id
        try:
            async with httpx2.AsyncClient(timeout=IDP_TIMEOUT_S) as http:
                answer = await http.post(idp.token_endpoint, data=data, headers=headers)
        except httpx2.HTTPError as e:
            raise GrantInputError(
                f"the identity provider's token endpoint {idp.token_endpoint} ({key}.token_endpoint) did not answer: "
                f"{type(e).__name__}"
            ) from None
        try:
            body = answer.json()
        except ValueError:
            body = None
        if answer.status_code != 200 or not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
            said = body.get("error_description") or body.get("error") if isinstance(body, dict) else None
            raise GrantInputError(
                f"the identity provider ({key}.token_endpoint) refused to exchange the ID token for an ID-JAG "
                f"(HTTP {answer.status_code}{': ' + str(said)[:200] if said else ''})"
            )
        if body.get("issued_token_type") not in (None, ID_JAG_TYPE):
            raise GrantInputError(f"the identity provider ({key}) issued a {body['issued_token_type']}, not an ID-JAG")
        jag = str(body["access_token"])
        self.storage.mask([id_token, jag])
        return jag


def machine_auth(
    server_id: str,
    cfg: McpServerConfig,
    storage: KeyringTokenStorage,
    *,
    on_needs_sign_in: _OnNeeds = None,
    interactive: bool = False,
) -> EngineOAuth:
    """The provider for the server's grant; ``interactive`` (``mcp login``) starts from no stored token."""
    oauth = _oauth(cfg)
    kind: type[MachineOAuth]
    if oauth.grant == "client_credentials":
        kind = ClientSecretOAuth if oauth.client_secret is not None else PrivateKeyOAuth
    elif oauth.grant == "jwt_bearer":
        kind = WorkloadOAuth
    else:
        kind = EnterpriseOAuth
    return kind(server_id, cfg, storage, interactive=interactive, on_needs=on_needs_sign_in)

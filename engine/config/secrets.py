"""Named secrets in the OS keyring (service "ava-console"), referenced from config as ``${keyring:NAME}``.

The config file never holds a credential; ``ava-engine secrets set NAME`` stores it here and the loader
resolves it. ``keyring`` has no listing API, so the names (never the values) are kept as a JSON list inside
the keyring itself under the reserved name ``__index__``: one store, nothing extra on disk. Every error says
what is wrong and how to fix it, and never contains a secret value.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import keyring
import keyring.backends.fail
import keyring.backends.null
from keyring.backend import KeyringBackend
from keyring.backends.chainer import ChainerBackend
from keyring.errors import KeyringError, NoKeyringError, PasswordDeleteError

from engine.config.expand import SECRET_NAME_RE, ExpansionError, keyring_references

log = logging.getLogger(__name__)

SERVICE = "ava-console"
INDEX_NAME = "__index__"

NO_BACKEND_HELP = (
    "no usable OS keyring was found (the keyring library fell back to {backend}). "
    "Use a desktop keyring (GNOME Keyring or KWallet through Secret Service, macOS Keychain, "
    "Windows Credential Manager), or on a headless machine an encrypted file keyring "
    "(`pip install keyrings.cryptfile`, PYTHON_KEYRING_BACKEND=keyrings.cryptfile.cryptfile.CryptFileKeyring); "
    "or reference an environment variable (${{VAR}}) instead. "
    "A backend installed while ava-console runs is seen after restarting ava-console"
)


class SecretsError(Exception):
    """A keyring operation failed; the message says why and how to fix it (never a secret value)."""


def backend_problem() -> str | None:
    """A plain explanation when no real keyring backend is available, else None."""
    backend: KeyringBackend = keyring.get_keyring()
    unusable = (keyring.backends.fail.Keyring, keyring.backends.null.Keyring)
    if isinstance(backend, unusable) or (isinstance(backend, ChainerBackend) and not backend.backends):
        name = f"{type(backend).__module__}.{type(backend).__name__}"
        return NO_BACKEND_HELP.format(backend=name)
    return None


UNENCRYPTED_HELP = (
    "secrets are stored UNENCRYPTED: the keyring in use ({backend}) keeps them in a plain file{where}, so anyone "
    "who can read that file can read them. Use a real keyring: a desktop keyring (GNOME Keyring or KWallet through "
    "Secret Service, macOS Keychain, Windows Credential Manager), or an encrypted file "
    "(`pip install keyrings.cryptfile`, PYTHON_KEYRING_BACKEND=keyrings.cryptfile.cryptfile.CryptFileKeyring)"
)


def _stores_plaintext(backend: KeyringBackend) -> bool:
    """keyrings.alt's file keyrings but the encrypted one, and any backend that calls itself plaintext."""
    name, module = type(backend).__name__.lower(), type(backend).__module__
    return "plaintext" in name or (module == "keyrings.alt.file" and "encrypted" not in name)


def unencrypted_store() -> tuple[str, str | None] | None:
    """(the backend's name, the file it writes or None) when the keyring in use keeps secrets unencrypted (a
    plaintext file), else None. The chainer stores in its first (highest priority) backend."""
    backend: KeyringBackend = keyring.get_keyring()
    chain = backend.backends if isinstance(backend, ChainerBackend) else [backend]
    first = chain[0] if chain else None
    if first is None or not _stores_plaintext(first):
        return None
    path = getattr(first, "file_path", None)
    return f"{type(first).__module__}.{type(first).__name__}", str(path) if path else None


def unencrypted_warning() -> str | None:
    """What to tell the user when the keyring in use keeps secrets unencrypted, else None.

    ``secrets``, ``mcp login`` and the console's Secrets screen say it: such a keyring works, so nothing else
    would tell the user that the secrets they moved out of the config are no safer in it."""
    store = unencrypted_store()
    if store is None:
        return None
    backend, path = store
    return UNENCRYPTED_HELP.format(backend=backend, where=f" ({path})" if path else "")


@dataclass(frozen=True)
class KeyringState:
    """The keyring in use, in the words every place that reports it uses (the Secrets screen, the server form, the
    notes after a secret is stored or deleted): never "ready" for a keyring that keeps secrets in a plain file."""

    #: No usable backend: why, and how to get one.
    problem: str | None
    #: The backend's name when it keeps secrets unencrypted, and the file it writes (when it says).
    unencrypted_backend: str | None = None
    unencrypted_file: str | None = None

    @property
    def unencrypted(self) -> bool:
        return self.unencrypted_backend is not None

    @property
    def where(self) -> str:
        """Where a stored secret goes, for a sentence: "the OS keyring" or "the UNENCRYPTED file keyring (PATH)"."""
        if self.unencrypted:
            return f"the UNENCRYPTED file keyring ({self.unencrypted_file or self.unencrypted_backend})"
        return "the OS keyring"

    @property
    def status(self) -> str:
        """One line saying what the keyring is and, when it is no good, what to do."""
        if self.problem:
            return f"No OS keyring: {self.problem}"
        if self.unencrypted:
            return (
                f"Unencrypted keyring ({self.unencrypted_backend}): anyone who can read "
                f"{self.unencrypted_file or 'its file'} can read these secrets; use a desktop keyring or "
                "keyrings.cryptfile (ava-engine secrets list says how)."
            )
        return "Keyring ready."


def keyring_state() -> KeyringState:
    """What the keyring in use is (blocking the first time: keyring picks its backend once per process)."""
    problem = backend_problem()
    store = unencrypted_store() if problem is None else None
    return KeyringState(problem, *(store or (None, None)))


def owned_secrets(data: Mapping[str, Any], server_id: str) -> list[str]:
    """The secrets that only MCP server ``server_id``'s entry references in the (unexpanded) config ``data``: the
    ones removing that server leaves unused."""
    own = f"mcp.servers.{server_id}"
    return [
        name
        for name, paths in keyring_references(data).items()
        if all(p == own or p.startswith((f"{own}.", f"{own}[")) for p in paths)
    ]


def _check_name(name: str) -> None:
    if name == INDEX_NAME:
        raise SecretsError(f"{INDEX_NAME!r} is reserved for the list of secret names")
    if not SECRET_NAME_RE.match(name):
        raise SecretsError(f"{name[:70]!r} is not a valid secret name (1-64 letters, digits, '_', '.', '-')")


def _failure(action: str, exc: Exception) -> SecretsError:
    if isinstance(exc, NoKeyringError):
        return SecretsError(backend_problem() or NO_BACKEND_HELP.format(backend="no backend"))
    return SecretsError(f"the OS keyring could not {action}: {type(exc).__name__}: {str(exc)[:200]}")


def _require_backend() -> None:
    problem = backend_problem()
    if problem:
        raise SecretsError(problem)


def _read_index() -> list[str]:
    try:
        raw = keyring.get_password(SERVICE, INDEX_NAME)
    except KeyringError as exc:
        raise _failure("read the list of secret names", exc) from None
    if not raw:
        return []
    try:
        names = json.loads(raw)
    except ValueError:
        log.warning("the keyring's list of secret names (%s) is corrupt; starting a new one", INDEX_NAME)
        return []
    return sorted({n for n in names if isinstance(n, str)}) if isinstance(names, list) else []


def _write_index(names: Sequence[str]) -> None:
    try:
        keyring.set_password(SERVICE, INDEX_NAME, json.dumps(sorted(set(names))))
    except KeyringError as exc:
        raise _failure("store the list of secret names", exc) from None


def set_secret(name: str, value: str) -> None:
    """Store (or replace) the secret ``name``."""
    _check_name(name)
    if not value:
        raise SecretsError(f"refusing to store an empty value for secret {name!r}")
    _require_backend()
    try:
        keyring.set_password(SERVICE, name, value)
    except KeyringError as exc:
        raise _failure(f"store secret {name!r}", exc) from None
    names = _read_index()
    if name not in names:
        _write_index([*names, name])
    log.info("stored secret %r in the keyring (service %s)", name, SERVICE)


def get_secret(name: str) -> str | None:
    """The secret's value, or None when it is not stored."""
    _check_name(name)
    _require_backend()
    try:
        return keyring.get_password(SERVICE, name)
    except KeyringError as exc:
        raise _failure(f"read secret {name!r}", exc) from None


def delete_secret(name: str) -> bool:
    """Remove the secret; True when it existed."""
    _check_name(name)
    _require_backend()
    existed = True
    try:
        keyring.delete_password(SERVICE, name)
    except PasswordDeleteError:
        existed = False
    except KeyringError as exc:
        raise _failure(f"delete secret {name!r}", exc) from None
    names = _read_index()
    if name in names:
        _write_index([n for n in names if n != name])
        existed = True
    log.info("deleted secret %r from the keyring (service %s)", name, SERVICE)
    return existed


def rename_secret(old: str, new: str, *, replace: bool = False) -> None:
    """Move the secret ``old`` to the name ``new`` (the value is never returned).

    An existing ``new`` is replaced only with ``replace=True`` (the operator was asked); references to ``old`` in
    the config are not rewritten (the caller says where they are).
    """
    _check_name(new)
    if old == new:
        raise SecretsError(f"{old!r} already has that name")
    value = get_secret(old)
    if value is None:
        raise SecretsError(f"secret {old!r} is not in the keyring, so it cannot be renamed")
    if not replace and get_secret(new) is not None:
        raise SecretsError(f"a secret {new!r} already exists; not overwritten")
    set_secret(new, value)
    delete_secret(old)


def list_secrets() -> list[str]:
    """Names of the stored secrets (sorted; values are never read)."""
    _require_backend()
    return _read_index()


def lookup_secret(name: str) -> str:
    """Resolve ``${keyring:NAME}`` for the loader; a missing secret or keyring is an ``ExpansionError``."""
    problem = backend_problem()
    if problem:
        raise ExpansionError(f"cannot read ${{keyring:{name}}}: {problem}")
    try:
        value = keyring.get_password(SERVICE, name)
    except KeyringError as exc:
        raise ExpansionError(f"cannot read ${{keyring:{name}}}: {_failure('read it', exc)}") from None
    if value is None:
        raise ExpansionError(
            f"secret {name!r} is not in the keyring (service {SERVICE}): set it with `ava-engine secrets set {name}`"
        )
    return value


#: Names that say "this is a credential" (env variables, headers, config keys).
CREDENTIAL_NAME_RE = re.compile(r"token|key|secret|passw|auth|credential|bearer|cookie", re.IGNORECASE)
#: Shapes of well-known credentials (OpenAI/Anthropic sk-, GitHub, GitLab, Slack, AWS, JWTs, Bearer values).
_CREDENTIAL_VALUE_RE = re.compile(
    r"^(?:sk-|sk_|pk_|rk_|ghp_|gho_|ghu_|ghs_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|eyJ|Bearer\s+\S)"
)
_TOKEN_SHAPE_RE = re.compile(r"^[A-Za-z0-9_\-+/=.~]{20,}$")


def looks_like_secret(name: str, value: str) -> bool:
    """Whether a literal ``value`` (of an env variable, header …) called ``name`` looks like a credential.

    A value that holds a reference (``${VAR}``, ``${keyring:NAME}``) is not itself a secret. A credential-sounding
    name, a well-known token prefix, or a long random-looking word (letters and digits mixed, 20+ characters,
    not a path or URL) is.
    """
    v = value.strip()
    if not v or "${" in v:
        return False
    if CREDENTIAL_NAME_RE.search(name) or _CREDENTIAL_VALUE_RE.match(v):
        return True
    if v.startswith(("/", "~", ".", "http://", "https://")) or not _TOKEN_SHAPE_RE.match(v):
        return False
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def secret_name_for(server_id: str, key: str) -> str:
    """The keyring name a server's env variable or header is stored under: ``SERVERID_KEY`` (valid, ≤ 64)."""
    raw = f"{server_id}_{key}".upper()
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", raw)[:64]


def mask(value: str | None) -> str:
    """Show that a secret is set without showing any character of it: ``set (32 characters)``."""
    if not value:
        return "(not set)"
    return f"set ({len(value)} character{'' if len(value) == 1 else 's'})"

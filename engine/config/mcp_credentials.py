"""Credentials inside a server's command-line arguments and URLs, moved to the keyring on import.

Why it exists: ``move_secrets`` moves whole env and header values, but real MCP client files also carry credentials
inside other strings: ``postgres://user:pass@host/db`` as an argument, ``--api-key=sk-…`` or ``--token sk-…``,
``--header Authorization:Bearer …`` (mcp-remote), ``https://host/mcp?token=…`` as a server's url. Only the
credential part becomes ``${keyring:SERVERID_KEY}`` (the config loader expands keyring references inside commands,
urls, env and headers alike); the rest of the string is kept as written, percent-encoding included, so the expanded
value is exactly the original.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from engine.config.secrets import looks_like_secret, secret_name_for

__all__ = ["move_embedded_secrets"]

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>]+")
_ASSIGNED = re.compile(r"^(-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)=(.+)$", re.DOTALL)
_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9\-]*):\s*(.+)$", re.DOTALL)
_FLAG = re.compile(r"^--?[A-Za-z][A-Za-z0-9_\-]*$")


class _Mover:
    """Collects the moved values of one server under unique keyring names."""

    def __init__(self, sid: str, moved: dict[str, str]) -> None:
        self.sid = sid
        self.moved = moved

    def ref(self, key: str, value: str) -> str:
        base = secret_name_for(self.sid, re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_") or "SECRET")
        name, n = base, 1
        while name in self.moved and self.moved[name] != value:
            n += 1
            name = f"{base[: 64 - len(str(n)) - 1]}_{n}"
        self.moved[name] = value
        return f"${{keyring:{name}}}"

    def url(self, url: str, key: str) -> str:
        """``url`` with its userinfo password and credential-looking query values as references."""
        scheme, sep, rest = url.partition("://")
        authority, slash, path = _split_authority(rest)
        userinfo, at, host = authority.rpartition("@")
        if at and ":" in userinfo:
            user, _, password = userinfo.partition(":")
            if password and "${" not in password:
                authority = f"{user}:{self.ref(f'{key}_PASSWORD' if key else 'PASSWORD', password)}@{host}"
        head, q, query = path.partition("?")
        if q:
            query, hashmark, fragment = query.partition("#")
            pairs = []
            for pair in query.split("&"):
                name, eq, value = pair.partition("=")
                if eq and value and looks_like_secret(unquote(name), unquote(value)) and not _is_reference(value):
                    value = self.ref(unquote(name), value)
                pairs.append(f"{name}{eq}{value}")
            path = f"{head}?{'&'.join(pairs)}{hashmark}{fragment}"
        return f"{scheme}{sep}{authority}{slash}{path}"

    def urls_in(self, text: str, key: str = "") -> str:
        return _URL.sub(lambda m: self.url(m.group(0), key), text)

    def word(self, arg: str, index: int) -> str:
        """One argument on its own: URLs in it, ``NAME=value``, ``Name: value``, or a bare well-known token."""
        if "${" in arg and not _URL.search(arg):
            return arg
        if _URL.search(arg):
            m = _ASSIGNED.match(arg)
            return self.urls_in(arg, m.group(1).lstrip("-") if m else "")
        if m := _ASSIGNED.match(arg):
            name, value = m.group(1), m.group(2)
            if looks_like_secret(name.lstrip("-"), value):
                return f"{name}={self.ref(name.lstrip('-'), value)}"
            return arg
        if m := _HEADER.match(arg):
            name, value = m.group(1), m.group(2)
            if looks_like_secret(name, value):
                return arg[: m.start(2)] + self.ref(name, value)
            return arg
        if _bare_token(arg):
            return self.ref(f"ARG{index}", arg)
        return arg


def _split_authority(rest: str) -> tuple[str, str, str]:
    """(authority, '/' or '', the rest): the authority ends at the first '/', '?' or '#'."""
    m = re.search(r"[/?#]", rest)
    if m is None:
        return rest, "", ""
    if m.group(0) == "/":
        return rest[: m.start()], "/", rest[m.start() + 1 :]
    return rest[: m.start()], "", rest[m.start() :]


def _is_reference(value: str) -> bool:
    return "${" in value


def _bare_token(arg: str) -> bool:
    """A whole argument that is a credential by its shape (no name says so): a well-known prefix or a long random
    word — but never a path, a package spec (``pkg==1.2``, ``@scope/pkg``) or a flag."""
    return not re.search(r"[./=@:]", arg) and not arg.startswith("-") and looks_like_secret("", arg)


def _value_after(flag: str, value: str) -> bool:
    """``--token VALUE``: the flag names a credential and the next word is a value, not a path or another flag."""
    if not _FLAG.match(flag) or value.startswith(("-", "/", "~", ".")) or _URL.search(value) or "${" in value:
        return False
    return looks_like_secret(flag.lstrip("-"), value)


def move_embedded_secrets(sid: str, cfg: dict[str, Any], moved: dict[str, str]) -> None:
    """Replace credentials inside ``cfg``'s command arguments, url, env and header values by keyring references,
    adding {name: value} to ``moved`` (whole credential-looking env/header values are ``move_secrets``' job)."""
    mover = _Mover(sid, moved)
    command = cfg.get("command")
    if isinstance(command, list):
        out = [command[0]] if command else []
        for i, arg in enumerate(command[1:], start=1):
            prev = command[i - 1] if i > 1 else ""
            if isinstance(arg, str) and _value_after(prev, arg):
                out.append(mover.ref(prev.lstrip("-"), arg))
            else:
                out.append(mover.word(arg, i) if isinstance(arg, str) else arg)
        cfg["command"] = out
    if isinstance(cfg.get("url"), str):
        cfg["url"] = mover.urls_in(cfg["url"])
    for kind in ("env", "headers"):
        values = cfg.get(kind)
        if isinstance(values, dict):
            for key, value in values.items():
                if isinstance(value, str) and _URL.search(value):
                    values[key] = mover.urls_in(value, key)

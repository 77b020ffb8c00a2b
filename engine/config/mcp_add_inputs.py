"""The values a registry ``server.json`` asks for (arguments, env variables, headers, ``{variables}`` in them), filled
from the user's ``--arg``/``--env``/``--header``, the source's own values and defaults; and the secret ones turned
into ``${keyring:NAME}`` references once the server id is known (``finalise``).

Why it exists: ``engine.config.mcp_add`` builds the entry; this is its input half, kept apart so each stays small.
A secret (``isSecret``) that ends up in a command-line argument or inside a template such as ``Bearer {token}`` is
never written as it is: it holds a marker until ``finalise`` puts the keyring reference there (the config loader
expands ``${keyring:NAME}`` in commands and headers alike and masks the value in every output).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.config.mcp_import import move_secrets
from engine.config.secrets import secret_name_for
from engine.config.server_json import Argument, Input, KeyValueInput, substitute

__all__ = ["Collected", "Needed", "fill_values", "finalise", "words"]

#: Stands for a secret in a value until ``finalise`` knows the server id (never written: ``finalise`` replaces it).
_MARK = "\x00secret:"
_MARK_RE = re.compile("\x00secret:([A-Za-z0-9_]+)\x00")


@dataclass(frozen=True)
class Needed:
    """An input the source requires that nobody gave a value for."""

    kind: str  # "env", "headers" or "arg"
    name: str
    description: str = ""
    secret: bool = False

    def how(self) -> str:
        """The command-line option that gives it."""
        flag = {"env": "--env", "headers": "--header", "arg": "--arg"}[self.kind]
        return f"{flag} {self.name}=VALUE"


@dataclass
class Collected:
    """What reading the inputs found: values still needed, secrets held behind markers."""

    needed: list[Needed] = field(default_factory=list)
    #: marker key -> value of a secret argument or variable (``finalise`` moves it to the keyring)
    arg_secrets: dict[str, str] = field(default_factory=dict, repr=False)


def _hide(value: str, label: str, into: Collected) -> str:
    key = re.sub(r"[^A-Za-z0-9_]", "_", label.lstrip("-")).upper() or "SECRET"
    into.arg_secrets[key] = value
    return f"{_MARK}{key}\x00"


def _fill(template: str, owner: Input, given: Mapping[str, str], into: Collected, what: str) -> str:
    variables: dict[str, str | None] = {}
    for name, var in owner.variables.items():
        value = given.get(name, var.value if var.value is not None else var.default)
        variables[name] = _hide(value, name, into) if value is not None and var.is_secret else value
    filled, missing = substitute(template, variables)
    for name in missing:
        into.needed.append(Needed("arg", name, f"{{{name}}} in {what}", owner.variables.get(name, owner).is_secret))
    return filled


def fill_values(
    kind: str, inputs: list[KeyValueInput], given: Mapping[str, str], into: Collected
) -> tuple[dict[str, str], set[str]]:
    """env/header values: the user's, else the source's value (variables filled), else its default; and the names
    declared secret."""
    out: dict[str, str] = {}
    secret: set[str] = set()
    for kv in inputs:
        value = given.get(kv.name)
        if value is None and kv.value is not None:
            value = _fill(kv.value, kv, given, into, f"{kind} {kv.name}")
        value = kv.default if value is None else value
        if kv.is_secret:
            secret.add(kv.name)
        if value is None:
            if kv.is_required:
                into.needed.append(Needed(kind, kv.name, kv.description or "", kv.is_secret))
            continue
        out[kv.name] = value
    return out, secret


def words(arguments: list[Argument], given: Mapping[str, str], into: Collected) -> list[str]:
    """Command-line words for ``arguments`` (``--arg LABEL=VALUE`` wins); secret values behind markers."""
    out: list[str] = []
    for a in arguments:
        value = given.get(a.label)
        if value is None and a.value is not None:
            value = _fill(a.value, a, given, into, f"argument {a.label}")
        value = a.default if value is None else value
        if value is None:
            if a.is_required:
                into.needed.append(Needed("arg", a.label, a.description or "", a.is_secret))
            continue
        if a.is_secret and _MARK not in value:
            value = _hide(value, a.label, into)
        out += [a.name, value] if a.type == "named" and a.name else [value]
    return out


def finalise(
    server_id: str, entry: Mapping[str, Any], collected: Collected, secret_keys: frozenset[str], *, move: bool = True
) -> tuple[dict[str, Any], dict[str, str]]:
    """(the entry as written, {keyring name: value}): markers become ``${keyring:SERVERID_KEY}``; with ``move``,
    secret and credential-looking env/header values too (``move_secrets``, as the JSON importer does)."""
    secrets: dict[str, str] = {}

    def ref(m: re.Match[str]) -> str:
        name = secret_name_for(server_id, m.group(1))
        secrets[name] = collected.arg_secrets[m.group(1)]
        return f"${{keyring:{name}}}"

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return _MARK_RE.sub(ref, node) if isinstance(node, str) else node

    out: dict[str, Any] = walk(copy.deepcopy(dict(entry)))
    if move:
        secrets.update(move_secrets(server_id, out, secret_keys))
    return out, secrets

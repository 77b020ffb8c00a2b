"""Import MCP server definitions from Claude Desktop / Cursor (``mcpServers``) and VS Code (``servers``) JSON.

Why it exists: users already have servers configured in other MCP clients; retyping them is error-prone. This is
the one importer: ``ava-engine import-mcp-json FILE`` and the console's Servers screen (``i``) both call
``import_mcp_json``, so they add the same servers and say the same things.

Files are JSON or JSONC (``engine.config.mcp_vscode``: comments, trailing commas, size and nesting bounded).
Entries become ``mcp.servers.<id>`` configs (stdio: command/args/env/cwd; http/sse: url/headers), ids normalised to
``[a-z][a-z0-9_]*`` (at most 32 characters), VS Code variables turned into the config's syntax (``${input:ID}`` into
``${keyring:SERVERID_ID}``, whose value ``ImportResult.asks`` says to ask for; ``${env:VAR}`` into ``${VAR}``;
``${workspaceFolder}`` into the file's workspace folder), ``"disabled": true`` into ``enabled: false``. Every
entry is checked against the config model; a bad entry is skipped with a problem naming it, the rest are imported.
Merging never overwrites: an id that exists with a different config is a reported conflict, one with the same
config is ``unchanged`` (importing a file twice adds nothing).

Credentials never land in the YAML by default: an env or header value that looks like one (``looks_like_secret``)
becomes ``${keyring:SERVERID_KEY}`` and its value waits in ``ImportResult.secrets`` until the caller writes the
file (``store_secrets``, just before the save); so do credentials inside arguments and URLs
(``engine.config.mcp_credentials``). Only ``plaintext_secrets=True`` (the operator's explicit choice) keeps them as
written. A keyring name already holding a different value is never overwritten: that server is a conflict.
``check_import`` runs the validation ``ava-engine check`` runs on the document as it would be saved (seeing the
values about to enter the keyring): a caller that saves only after it passes never writes a config check refuses.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.config.document import ConfigDocument
from engine.config.errors import format_path
from engine.config.mcp_credentials import move_embedded_secrets
from engine.config.mcp_import_result import Ask, ImportPlan, ImportResult
from engine.config.mcp_vscode import (
    MAX_BYTES,
    InputPrompt,
    JsoncError,
    UnknownVariable,
    Variables,
    load_jsonc,
    read_inputs,
)
from engine.config.models import FieldError, McpServerConfig
from engine.config.models.mcp import normalise_name
from engine.config.secrets import (
    SecretsError,
    backend_problem,
    get_secret,
    looks_like_secret,
    lookup_secret,
    secret_name_for,
    set_secret,
)

__all__ = [
    "Ask",
    "ImportPlan",
    "ImportResult",
    "McpImportError",
    "check_import",
    "import_mcp_json",
    "keyring_clash",
    "merge_plan",
    "move_secrets",
    "normalise_server_id",
    "parse_mcp_json",
    "read_mcp_json",
    "store_secrets",
]

_HTTP_KINDS = {"http": "http", "sse": "sse", "streamable-http": "http", "streamablehttp": "http"}
MAX_SERVER_ID = 32


class McpImportError(ValueError):
    """The file is not an MCP client config this importer understands (the message names the file and where)."""


def normalise_server_id(raw: str) -> str:
    """A server id from free text: ``[a-z][a-z0-9_]*``, at most 32 characters (longer names keep a stable hash)."""
    if not raw.strip():
        raise ValueError("an empty server name cannot become a server id")
    sid = normalise_name(raw)
    if not sid[0].isalpha():
        sid = f"s_{sid}"
    if len(sid) > MAX_SERVER_ID:
        sid = f"{sid[:23]}_{hashlib.sha256(raw.encode('utf-8')).hexdigest()[:8]}"
    return sid


def _str_map(raw: Any, where: str, problems: list[str], refs: Callable[[Any], str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be an object of strings; ignored")
        return {}
    return {str(k): refs(v) for k, v in raw.items()}


def _convert(name: str, sid: str, entry: Any, problems: list[str], variables: Variables) -> dict[str, Any] | None:
    """One entry as a config, or None (with the reason in ``problems``)."""
    where = f"server {name!r}"
    if not isinstance(entry, Mapping):
        problems.append(f"{where}: is not an object; skipped")
        return None
    try:
        return _entry(where, entry, problems, lambda value: variables.convert(sid, value))
    except UnknownVariable as e:
        variables.used.pop(sid, None)
        problems.append(f"{where}: {e}; skipped")
        return None


def _entry(
    where: str, entry: Mapping[str, Any], problems: list[str], _refs: Callable[[Any], str]
) -> dict[str, Any] | None:
    kind = str(entry.get("type") or entry.get("transport") or "").strip().lower()
    url = entry.get("url") or entry.get("serverUrl")
    out: dict[str, Any]
    if entry.get("command") is not None and kind in ("", "stdio"):
        command, args = entry["command"], entry.get("args") or []
        if not isinstance(command, str) or not command.strip():
            problems.append(f"{where}: 'command' must be a non-empty string; skipped")
            return None
        if not isinstance(args, list):
            problems.append(f"{where}: 'args' must be a list; skipped")
            return None
        out = {"transport": "stdio", "command": [_refs(command), *(_refs(a) for a in args)]}
        if env := _str_map(entry.get("env"), f"{where}.env", problems, _refs):
            out["env"] = env
        if entry.get("cwd"):
            out["cwd"] = _refs(entry["cwd"])
        if entry.get("envFile"):
            problems.append(f"{where}: 'envFile' is not imported; copy its variables into env")
    elif url and kind in ("", *_HTTP_KINDS):
        if not isinstance(url, str):
            problems.append(f"{where}: 'url' must be a string; skipped")
            return None
        out = {"transport": _HTTP_KINDS.get(kind, "http"), "url": _refs(url)}
        if headers := _str_map(entry.get("headers"), f"{where}.headers", problems, _refs):
            out["headers"] = headers
    elif kind and kind not in ("stdio", *_HTTP_KINDS):
        problems.append(f"{where}: unknown server type {kind!r} (stdio, http, sse or streamable-http); skipped")
        return None
    else:
        needs = "'url'" if kind in _HTTP_KINDS else "'command'" if kind == "stdio" else "'command' or 'url'"
        problems.append(f"{where}: needs {needs}; skipped")
        return None
    if entry.get("disabled") is True:
        out["enabled"] = False
    try:
        McpServerConfig.model_validate(out)
    except ValidationError as e:
        err = e.errors()[0]
        loc, msg = tuple(err["loc"]), str(err["msg"]).removeprefix("Value error, ")
        blamed = (err.get("ctx") or {}).get("error")
        if isinstance(blamed, FieldError):  # a model-level check that names the field
            loc, msg = (*loc, *blamed.loc), blamed.message
        at = format_path(loc)
        problems.append(f"{where}: {at + ': ' if at else ''}{msg}; skipped")
        return None
    return out


def parse_mcp_json(text: str, source: str = "<json>", file: Path | None = None) -> ImportPlan:
    """Read a Claude Desktop / Cursor / VS Code MCP config into server configs (nothing is merged yet).

    ``file`` is where the text came from: ``${workspaceFolder}`` resolves against it (default: the current folder).
    """
    try:
        data = load_jsonc(text, source)
    except JsoncError as e:
        raise McpImportError(str(e)) from None
    if not isinstance(data, Mapping):
        raise McpImportError(f"{source}: the top level must be a JSON object")
    servers: Any = None
    holder: Mapping[str, Any] = data
    for path in (("mcpServers",), ("servers",), ("mcp", "servers")):
        node: Any = data
        for key in path:
            holder = node if isinstance(node, Mapping) else {}
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is not None:
            servers = node
            break
    if not isinstance(servers, Mapping):
        raise McpImportError(f"{source}: no 'mcpServers' (Claude Desktop, Cursor) or 'servers' (VS Code) object found")
    plan = ImportPlan()
    plan.inputs = read_inputs(holder.get("inputs"), source, plan.problems)
    variables = Variables(file or Path(source if source != "<json>" else "mcp.json"), plan.inputs)
    for name, entry in servers.items():
        try:
            sid = normalise_server_id(str(name))
        except ValueError as e:
            plan.problems.append(f"server {name!r}: {e}; skipped")
            continue
        if sid in plan.servers:
            plan.problems.append(f"server {name!r}: its id {sid!r} is already used by another entry; skipped")
            continue
        cfg = _convert(str(name), sid, entry, plan.problems, variables)
        if cfg is None:
            continue
        plan.servers[sid] = cfg
        if sid != name:
            plan.renamed[str(name)] = sid
    plan.used_inputs = variables.used
    return plan


def merge_plan(existing: Mapping[str, Any], plan: ImportPlan) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    """(to_add, unchanged, conflicts): ids already configured are never overwritten."""
    to_add: dict[str, dict[str, Any]] = {}
    unchanged: list[str] = []
    conflicts: list[str] = []
    for sid, cfg in plan.servers.items():
        if sid not in existing:
            to_add[sid] = cfg
            continue
        current = existing[sid]
        plain = json.loads(json.dumps(current, default=str)) if current is not None else None
        if plain == cfg:
            unchanged.append(sid)
        else:
            conflicts.append(f"mcp.servers.{sid} already exists with a different config; not overwritten")
    return to_add, unchanged, conflicts


def read_mcp_json(path: str | os.PathLike[str]) -> str:
    """The file's text, or ``McpImportError`` naming the file and what is wrong with it."""
    p = Path(path).expanduser()
    try:
        with p.open("rb") as f:
            data = f.read(MAX_BYTES + 1)  # never more: load_jsonc refuses anything larger
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise McpImportError(f"{p}: is not UTF-8 text") from None
    except OSError as e:
        raise McpImportError(f"{p}: cannot read the file: {e.strerror or e}") from None


def import_mcp_json(
    doc: ConfigDocument, path: str | os.PathLike[str], *, plaintext_secrets: bool = False
) -> ImportResult:
    """Read the MCP JSON file at ``path`` and add its new servers to ``doc`` (the caller shows the diff and saves).

    ``McpImportError`` when the file cannot be read or is not an MCP client config at all; problems with single
    entries and conflicts with servers already in ``doc`` are in the result.
    """
    source = os.fspath(path)
    plan = parse_mcp_json(read_mcp_json(path), source, Path(path).expanduser())
    pending: dict[str, dict[str, str]] = {}
    if not plaintext_secrets:
        pending = {sid: move_secrets(sid, cfg) for sid, cfg in plan.servers.items()}
        for sid, cfg in plan.servers.items():
            move_embedded_secrets(sid, cfg, pending[sid])
    existing = doc.get(("mcp", "servers"), None) or {}
    to_add, unchanged, conflicts = merge_plan(existing, plan)
    needs_ring = any(pending.get(sid) or plan.used_inputs.get(sid) for sid in to_add)
    problem = backend_problem() if needs_ring else None
    secrets: dict[str, str] = {}
    for sid in list(to_add):
        clash = None if problem else keyring_clash(pending.get(sid, {}))
        if clash:
            conflicts.append(
                f"mcp.servers.{sid}: the keyring already holds a different secret {clash!r}; not overwritten "
                f"(delete it with `ava-engine secrets delete {clash}` and import again)"
            )
            del to_add[sid]
            continue
        secrets.update(pending.get(sid, {}))
        doc.set_server(sid, to_add[sid])
    result = ImportResult(source, to_add, unchanged, conflicts, plan.renamed, plan.problems, secrets, problem)
    if problem is None:
        result.asks = _asks(plan, to_add)
    return result


def _asks(plan: ImportPlan, added: Mapping[str, Any]) -> list[Ask]:
    """The inputs the added servers use whose keyring names hold nothing yet (one ask per input id)."""
    by_input: dict[str, list[tuple[str, str]]] = {}
    for sid in added:
        for name, input_id in plan.used_inputs.get(sid, {}).items():
            if get_secret(name) is None:
                by_input.setdefault(input_id, []).append((name, sid))
    return [
        Ask(plan.inputs.get(input_id, InputPrompt(input_id)), tuple(n for n, _ in uses), tuple(s for _, s in uses))
        for input_id, uses in by_input.items()
    ]


def check_import(doc: ConfigDocument, result: ImportResult, env: Mapping[str, str] | None = None) -> Any:
    """The validation ``ava-engine check`` runs, on ``doc`` as it would be saved, seeing the import's secrets as
    if they were in the keyring already; ``ConfigError`` says what would fail (the caller writes nothing then).
    Returns the ``Settings``."""

    def lookup(name: str) -> str:
        return result.secrets[name] if name in result.secrets else lookup_secret(name)

    return doc.validate(env=os.environ if env is None else env, lookup_secret=lookup)


def move_secrets(sid: str, cfg: dict[str, Any], secret_keys: frozenset[str] = frozenset()) -> dict[str, str]:
    """Replace credential-looking env/header values in ``cfg`` by keyring references; {name: value} moved.

    ``secret_keys`` ("env:KEY", "headers:KEY") are moved whatever they look like (a server.json's ``isSecret``);
    a value that is already a reference (``${...}``) stays as written.
    """
    moved: dict[str, str] = {}
    for kind in ("env", "headers"):
        values = cfg.get(kind)
        if not isinstance(values, dict):
            continue
        for key, value in values.items():
            forced = f"{kind}:{key}" in secret_keys and bool(value) and "${" not in str(value)
            if forced or looks_like_secret(key, value):
                name = secret_name_for(sid, key)
                moved[name] = value
                values[key] = f"${{keyring:{name}}}"
    return moved


def keyring_clash(secrets: Mapping[str, str]) -> str | None:
    """The first name already in the keyring with another value (an import never replaces a secret)."""
    for name, value in secrets.items():
        current = get_secret(name)
        if current is not None and current != value:
            return name
    return None


def store_secrets(result: ImportResult) -> list[str]:
    """Put the import's moved credentials into the OS keyring (call it right before saving the file).

    ``SecretsError`` (say it, write nothing) when there is no keyring; returns the names stored.
    """
    if result.secrets and result.keyring_problem:
        raise SecretsError(
            f"{len(result.secrets)} credential(s) from {result.source} need the OS keyring "
            f"({', '.join(sorted(result.secrets))}): {result.keyring_problem}. Nothing was written; to keep them "
            "in the YAML in plain text instead, import with --plaintext-secrets "
            "(console: tick 'keep credentials in the YAML')"
        )
    for name, value in result.secrets.items():
        set_secret(name, value)
    return sorted(result.secrets)

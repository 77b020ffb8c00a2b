"""The server form's data rules, apart from the widgets: live field checks, form values -> config entry,
config entry -> form values, and keyring names for "store in keyring" rows. Pure functions (``shutil.which``
is the only look at the system, for "command found on PATH"; the environment is read to expand ``${VAR}``).

A command may use what the config loader expands (``{python}``, ``${VAR}``, ``${VAR:-default}``): the form
checks the program the loader would run, and tests the entry expanded exactly as a saved one would be."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import ValidationError

from engine.config import ConfigError, ExpansionError, dump_yaml_fragment, parse_yaml_fragment, secret_name_for
from engine.config.expand import expand, expand_python
from engine.config.models import SERVER_ID_RE, FieldError, McpServerConfig, McpToolConfig

KEYRING_REF = re.compile(r"^\$\{keyring:([A-Za-z0-9_.\-]{1,64})\}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")

NUMBERS: dict[str, tuple[int, int]] = {
    "connect_timeout_ms": (1, 600_000),
    "max_restarts": (0, 1000),
    "backoff_ms": (1, 3_600_000),
    "backoff_max_ms": (1, 3_600_000),
    "stable_after_ms": (1, 86_400_000),
    "timeout_ms": (1, 3_600_000),
    "slow_response_threshold_ms": (1, 3_600_000),
}
RESTART_KEYS = ("max_restarts", "backoff_ms", "backoff_max_ms", "stable_after_ms")
DEFAULT_KEYS = ("timeout_ms", "slow_response_threshold_ms")


@dataclass
class KV:
    key: str
    value: str
    keyring: bool = False


#: The config's own defaults, so a new form starts from exactly what an omitted key means.
_SERVER_DEFAULTS = McpServerConfig(transport="inprocess", target="x:y")


@dataclass
class FormValues:
    """Everything the form shows, as text (what the operator typed)."""

    id: str = ""
    transport: str = "stdio"
    enabled: bool = True
    command: str = ""
    cwd: str = ""
    url: str = ""
    target: str = ""
    #: inprocess/bundled: the target factory's command line. No field shows it yet: kept as read, so saving the
    #: form never drops it (the demo's aviation_atis needs its --metar-file).
    args: list[str] | None = None
    start: str = "eager"
    mode: str = _SERVER_DEFAULTS.mode
    connect_timeout_ms: str = str(_SERVER_DEFAULTS.connect_timeout_ms)
    restart_enabled: bool = _SERVER_DEFAULTS.restart.enabled
    max_restarts: str = str(_SERVER_DEFAULTS.restart.max_restarts)
    backoff_ms: str = str(_SERVER_DEFAULTS.restart.backoff_ms)
    backoff_max_ms: str = str(_SERVER_DEFAULTS.restart.backoff_max_ms)
    stable_after_ms: str = str(_SERVER_DEFAULTS.restart.stable_after_ms)
    timeout_ms: str = ""
    slow_response_threshold_ms: str = ""
    slow_response_message: str = ""
    expose_unlisted: bool = True
    calibrate: bool = False
    tools: str = ""
    env: list[KV] = field(default_factory=list)
    headers: list[KV] = field(default_factory=list)
    #: http: the ``auth`` block (OAuth sign-in settings). No field shows it yet: kept as read, so saving the form
    #: never drops a remote server's sign-in settings.
    auth: dict[str, Any] | None = None


def check_field(name: str, value: str, *, base_dir: Path | None = None, taken: set[str] | None = None) -> str:
    """The message to show beside one field ('' when fine)."""
    v = value.strip()
    if name in NUMBERS:
        return _check_number(name, v)
    check = _FIELD_CHECKS.get(name)
    return check(v, base_dir, taken) if check is not None else ""


def _check_id(v: str, base_dir: Path | None, taken: set[str] | None) -> str:
    if not v:
        return "required"
    if not SERVER_ID_RE.match(v):
        return "lower-case letters, digits and _, starting with a letter (at most 32)"
    if taken and v in taken:
        return f"a server {v!r} already exists"
    return ""


def _check_command(v: str, base_dir: Path | None, taken: set[str] | None) -> str:
    """The program the loader would run (``{python}`` and ``${VAR}`` expanded) is on PATH or beside the config."""
    if not v:
        return "required for stdio: the program and its arguments"
    try:
        words = shlex.split(v)
    except ValueError as e:
        return f"cannot split into words: {e}"
    if not words:
        return "required for stdio: the program and its arguments"
    try:
        prog = expand_command_word(words[0])
    except ExpansionError as e:
        return e.message
    if shutil.which(prog) is None and not (base_dir is not None and (base_dir / prog).exists()):
        shown = repr(prog) if prog == words[0] else f"{words[0]!r} ({prog})"
        return f"{shown} is not found on PATH"
    return ""


def _check_url(v: str, base_dir: Path | None, taken: set[str] | None) -> str:
    if not v:
        return "required for http and sse"
    u = urlparse(v)
    if u.scheme not in ("http", "https") or not u.netloc:
        return "must be an http:// or https:// URL with a host"
    return ""


def _check_target(v: str, base_dir: Path | None, taken: set[str] | None) -> str:
    return "" if re.match(r"^[\w.]+:[\w.]+$", v) else "module:attribute, e.g. engine.servers.dice.server:create"


def _check_mode(v: str, base_dir: Path | None, taken: set[str] | None) -> str:
    if v in ("auto", "legacy") or re.match(r"^\d{4}-\d{2}-\d{2}$", v):
        return ""
    return "auto, legacy or a protocol version (YYYY-MM-DD)"


def _check_number(name: str, v: str) -> str:
    if not v and name in DEFAULT_KEYS:
        return ""
    lo, hi = NUMBERS[name]
    if not v.isdigit():
        return f"a whole number from {lo} to {hi}"
    if not lo <= int(v) <= hi:
        return f"out of range ({lo}..{hi})"
    return ""


#: The live check of each field that has one (besides the numbers), by field name.
_FIELD_CHECKS: dict[str, Callable[[str, Path | None, set[str] | None], str]] = {
    "id": _check_id,
    "command": _check_command,
    "url": _check_url,
    "target": _check_target,
    "mode": _check_mode,
    "tools": lambda v, base_dir, taken: check_tools(v),
}


def check_tools(text: str) -> str:
    if not text.strip():
        return ""
    try:
        data = parse_yaml_fragment(text, "tools")
    except ConfigError as e:
        issue = e.issues[0]
        path = f"tools{issue.path}" if issue.path.startswith("[") else issue.path
        where = ", ".join(w for w in (f"line {issue.line}" if issue.line else "", path) if w)
        return f"{where}: {issue.message}" if where else issue.message
    if not isinstance(data, list):
        return "a YAML list of tool entries (- name: ...)"
    for i, item in enumerate(data):
        try:
            McpToolConfig.model_validate(item)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            return f"tools[{i}]{'.' + where if where else ''}: {err['msg']}"
    return ""


def check_kv(kind: str, key: str) -> str:
    if not key.strip():
        return "a name is required"
    pattern = ENV_NAME if kind == "env" else HEADER_NAME
    what = "variable" if kind == "env" else "header"
    return "" if pattern.match(key.strip()) else f"{key!r} is not a valid {what} name"


def keyring_name(server_id: str, key: str) -> str:
    """The keyring name of a server's env variable or header (the importer names them the same way)."""
    return secret_name_for(server_id, key)


def _no_secret(name: str) -> str:
    raise ExpansionError(f"${{keyring:{name}}} cannot be read here")


def expand_command_word(word: str) -> str:
    """A command word as the loader runs it: ``{python}`` and ``${VAR}`` expanded (keyring refs are refused)."""
    return expand_python(expand(word, env=os.environ, lookup_secret=_no_secret))


def join_command(words: list[str]) -> str:
    """Words as one line the form's field splits back the same (``{python}`` stays readable, not quoted)."""
    return " ".join(w if _PLAIN_WORD.match(w) else shlex.quote(w) for w in words)


_PLAIN_WORD = re.compile(r"^[\w@%+=:,./{}\-]+$")


def _int(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def to_config(f: FormValues, *, secret_refs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``mcp.servers.<id>`` entry (defaults left out so the file stays short).

    ``secret_refs`` maps "env:KEY"/"headers:KEY" to the value written instead (``${keyring:NAME}``).
    """
    out: dict[str, Any] = {"transport": f.transport}
    if not f.enabled:
        out["enabled"] = False
    out.update(_transport_keys(f, dict(secret_refs or {})))
    if f.start != "eager":
        out["start"] = f.start
    if f.mode.strip() and f.mode.strip() != "auto":
        out["mode"] = f.mode.strip()
    if (n := _int(f.connect_timeout_ms)) is not None and n != 10_000:
        out["connect_timeout_ms"] = n
    if restart := _restart_keys(f):
        out["restart"] = restart
    if defaults := _default_keys(f):
        out["defaults"] = defaults
    if not f.expose_unlisted:
        out["expose_unlisted"] = False
    if f.calibrate:
        out["calibrate"] = True
    if f.tools.strip():
        tools = parse_yaml_fragment(f.tools, "tools")
        if isinstance(tools, list) and tools:
            out["tools"] = tools
    return out


def _transport_keys(f: FormValues, refs: dict[str, str]) -> dict[str, Any]:
    """What the transport needs: a command (cwd, env), a URL (headers, auth) or an in-process target (args)."""
    out: dict[str, Any] = {}
    if f.transport == "stdio":
        out["command"] = shlex.split(f.command) if f.command.strip() else []
        if f.cwd.strip():
            out["cwd"] = f.cwd.strip()
        if f.env:
            out["env"] = {kv.key.strip(): refs.get(f"env:{kv.key.strip()}", kv.value) for kv in f.env}
    elif f.transport in ("http", "sse"):
        out["url"] = f.url.strip()
        if f.headers:
            out["headers"] = {kv.key.strip(): refs.get(f"headers:{kv.key.strip()}", kv.value) for kv in f.headers}
        if f.auth and f.transport == "http":
            out["auth"] = f.auth
    elif f.transport in ("inprocess", "bundled"):
        out["target"] = f.target.strip()
        if f.args is not None:
            out["args"] = list(f.args)
    return out


def _restart_keys(f: FormValues) -> dict[str, Any]:
    restart: dict[str, Any] = {}
    if not f.restart_enabled:
        restart["enabled"] = False
    base = FormValues()
    for key in RESTART_KEYS:
        value = getattr(f, key)
        if (n := _int(value)) is not None and value.strip() != getattr(base, key):
            restart[key] = n
    return restart


def _default_keys(f: FormValues) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for key in DEFAULT_KEYS:
        if (n := _int(getattr(f, key))) is not None:
            defaults[key] = n
    if f.slow_response_message.strip():
        defaults["slow_response_message"] = f.slow_response_message.strip()
    return defaults


def from_config(server_id: str, raw: Mapping[str, Any]) -> FormValues:
    """Form values from a raw (unexpanded) config entry, so ``${keyring:X}`` stays as written."""
    f = FormValues(id=server_id)
    f.transport = str(raw.get("transport", "stdio"))
    f.enabled = bool(raw.get("enabled", True))
    cmd = raw.get("command") or []
    f.command = join_command([str(c) for c in cmd]) if isinstance(cmd, list) else str(cmd)
    f.cwd = str(raw.get("cwd") or "")
    f.url = str(raw.get("url") or "")
    f.target = str(raw.get("target") or "")
    args = raw.get("args")
    f.args = [str(a) for a in args] if isinstance(args, list) else None
    f.start = str(raw.get("start", "eager"))
    f.mode = str(raw.get("mode", "auto"))
    f.connect_timeout_ms = str(raw.get("connect_timeout_ms", 10_000))
    restart = raw.get("restart") or {}
    f.restart_enabled = bool(restart.get("enabled", True))
    for key in RESTART_KEYS:
        if key in restart:
            setattr(f, key, str(restart[key]))
    defaults = raw.get("defaults") or {}
    for key in DEFAULT_KEYS:
        if defaults.get(key) is not None:
            setattr(f, key, str(defaults[key]))
    f.slow_response_message = str(defaults.get("slow_response_message") or "")
    f.expose_unlisted = bool(raw.get("expose_unlisted", True))
    f.calibrate = bool(raw.get("calibrate", False))
    tools = raw.get("tools") or []
    if tools:
        f.tools = dump_yaml_fragment(_plain(tools))
    for kind in ("env", "headers"):
        rows = [KV(str(k), str(v), bool(KEYRING_REF.match(str(v)))) for k, v in dict(raw.get(kind) or {}).items()]
        setattr(f, kind, rows)
    auth = raw.get("auth")
    f.auth = _plain(auth) if isinstance(auth, Mapping) else None
    return f


def _plain(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [_plain(v) for v in node]
    return node


def model_errors(data: Mapping[str, Any]) -> dict[str, str]:
    """Validate a whole entry; {field: message} keyed like the form's fields ('' key: not field-specific)."""
    try:
        McpServerConfig.model_validate(dict(data))
    except ValidationError as e:
        out: dict[str, str] = {}
        for err in e.errors():
            loc = list(err["loc"])
            ctx_err = (err.get("ctx") or {}).get("error")
            if isinstance(ctx_err, FieldError):
                loc = [*loc, *ctx_err.loc]
                msg = ctx_err.message
            else:
                msg = err["msg"]
            name = str(loc[-1]) if loc and loc[0] in ("restart", "defaults") else (str(loc[0]) if loc else "")
            out.setdefault(name, msg)
        return out
    return {}

"""What MCP client files hold beyond plain JSON: JSONC text, VS Code's ``inputs`` and its ``${…}`` variables.

Why it exists: VS Code's ``.vscode/mcp.json`` and Cursor's ``mcp.json`` are JSONC (comments, trailing commas), and
their strings hold VS Code variables the config loader does not know (``${input:ID}``, ``${workspaceFolder}``,
``${userHome}`` …). ``engine.config.mcp_import`` reads a file through ``load_jsonc`` (size and nesting bounded
before any parser runs) and turns every string of an entry into the config's own syntax with ``Variables``: an
input becomes ``${keyring:SERVERID_INPUTID}`` (its value is asked for, or named for ``ava-engine secrets set``),
``${env:VAR}`` becomes ``${VAR}``, workspace and home paths are resolved against the file, and any other
variable (``${command:…}``, ``${config:…}``) is an error naming it, since only VS Code can resolve it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from engine.bounds.json_text import nesting_exceeds
from engine.config.secrets import secret_name_for

__all__ = ["MAX_BYTES", "MAX_DEPTH", "InputPrompt", "JsoncError", "Variables", "load_jsonc", "read_inputs"]

#: Real MCP client files are a few KB; json5 parses pure-Python (~60 ms per 4 KB here), so larger is refused.
MAX_BYTES = 128 * 1024
#: A server entry nests four levels (servers, entry, env, value); 32 leaves room for any real file.
MAX_DEPTH = 32
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_JSON5_ERROR = re.compile(r"^<string>:(\d+) (.*) at column (\d+)$", re.DOTALL)
#: Folders that hold a workspace's MCP file: the workspace is their parent (VS Code's ``${workspaceFolder}``).
_SETTINGS_FOLDERS = {".vscode", ".cursor"}


class JsoncError(ValueError):
    """The text is too big, nests too deep, or is not JSON/JSONC (the message names the file and where)."""


def load_jsonc(text: str, source: str) -> Any:
    """JSON or JSONC (``//`` and ``/* */`` comments, trailing commas) as Python values, bounded before parsing."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise JsoncError(f"{source}: {size} bytes is more than an MCP client file holds (at most {MAX_BYTES})")
    if nesting_exceeds(text, MAX_DEPTH):
        raise JsoncError(f"{source}: nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)  # the common case, and 1000 times faster than json5
    except ValueError:
        pass
    try:
        return json5.loads(text)
    except RecursionError:  # brackets inside comments or '…' strings can hide depth from the scanner
        raise JsoncError(f"{source}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:  # json5 says "<string>:LINE Unexpected … at column N"
        m = _JSON5_ERROR.match(str(e))
        where = f"{source}:{m.group(1)}: not valid JSON: {m.group(2)} (column {m.group(3)})" if m else None
        raise JsoncError(where or f"{source}: not valid JSON: {e}") from None


@dataclass(frozen=True)
class InputPrompt:
    """One of VS Code's ``inputs``: what to ask the user for a ``${input:ID}``."""

    id: str
    description: str = ""
    password: bool = True  # an undeclared input is asked for as a password: never echoed
    options: tuple[str, ...] = ()  # pickString's choices
    default: str | None = None

    def label(self) -> str:
        """``'ID' (description)`` for prompts and lists."""
        return f"{self.id!r}" + (f" ({self.description})" if self.description else "")


def read_inputs(raw: Any, source: str, problems: list[str]) -> dict[str, InputPrompt]:
    """VS Code's ``inputs`` array by id; a malformed entry is a problem naming it and is left out."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        problems.append(f"{source}: 'inputs' must be an array; ignored")
        return {}
    out: dict[str, InputPrompt] = {}
    for i, entry in enumerate(raw):
        where = f"inputs[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str) or not entry["id"].strip():
            problems.append(f"{where}: needs an 'id' string; ignored")
            continue
        options = entry.get("options") or ()
        choices = tuple(str(o.get("value", "")) if isinstance(o, Mapping) else str(o) for o in options)
        default = entry.get("default")
        out[entry["id"].strip()] = InputPrompt(
            id=entry["id"].strip(),
            description=str(entry.get("description") or ""),
            password=entry.get("password") is True,
            options=choices if isinstance(options, list) else (),
            default=str(default) if isinstance(default, str | int | float) else None,
        )
        if entry.get("type") not in (None, "promptString", "pickString"):
            problems.append(f"{where} {entry['id']!r}: type {entry.get('type')!r} is asked for as a plain string")
    return out


class UnknownVariable(ValueError):
    """A ``${…}`` only VS Code can resolve (the message names it)."""


@dataclass
class Variables:
    """Turns VS Code variables in one file's strings into the config's syntax (see the module docstring)."""

    file: Path
    inputs: Mapping[str, InputPrompt]
    #: server id -> {keyring name: input id} for every ``${input:ID}`` an entry used
    used: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def workspace(self) -> Path:
        folder = self.file.resolve().parent
        return folder.parent if folder.name in _SETTINGS_FOLDERS else folder

    def keyring_name(self, sid: str, input_id: str) -> str:
        return secret_name_for(sid, re.sub(r"[^A-Za-z0-9]+", "_", input_id).strip("_") or "INPUT")

    def convert(self, sid: str, value: Any) -> str:
        """``value`` as a config string; ``UnknownVariable`` for a variable only VS Code knows."""

        def one(m: re.Match[str]) -> str:
            body = m.group(1).strip()
            kind, _, arg = body.partition(":")
            if kind == "input" and arg.strip():
                name = self.keyring_name(sid, arg.strip())
                self.used.setdefault(sid, {})[name] = arg.strip()
                return "${keyring:" + name + "}"
            if kind == "env" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", arg):
                return "${" + arg + "}"
            literal = {
                "workspaceFolder": str(self.workspace),
                "workspaceFolderBasename": self.workspace.name,
                "userHome": str(Path.home()),
                "pathSeparator": os.sep,
                "/": os.sep,
            }.get(body)
            if literal is None:
                raise UnknownVariable(f"${{{body}}} is resolved only inside VS Code; replace it with its value")
            return literal.replace("${", "$${")  # a path is literal text to the config loader

        return _VARIABLE.sub(one, str(value))

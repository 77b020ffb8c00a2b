"""The MCP registry's ``server.json`` (schema 2025-09-29 and later), read bounded and checked with clear errors.

Why it exists: ``ava-engine mcp add server.json`` and the console's "add from registry" read files published for
the official MCP registry (https://github.com/modelcontextprotocol/registry, docs/reference/server-json). A file
from outside may be huge, deeply nested or wrong in shape: it is refused before parsing when over
``MAX_SERVER_JSON_BYTES``, nesting is bounded (``engine.bounds.json_text``), and every shape error names the file and
the JSON path (``packages[0].transport.type``). Unknown keys (``_meta``, ``$schema``, ``repository`` …) are
ignored, so newer revisions of the format still read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from engine.bounds.json_text import JsonBoundsError, loads_bounded
from engine.config.errors import format_path

__all__ = [
    "MAX_SERVER_JSON_BYTES",
    "Argument",
    "KeyValueInput",
    "Package",
    "Remote",
    "ServerJson",
    "ServerJsonError",
    "parse_server_json",
    "read_server_json",
    "substitute",
]

#: A real server.json is a few kilobytes; anything past this is refused unread.
MAX_SERVER_JSON_BYTES = 256 * 1024
MAX_DEPTH = 32
_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


class ServerJsonError(ValueError):
    """The file is not a usable server.json; the message names the file and the JSON path."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Input(_Model):
    """A value the user may have to supply (an argument, an env variable, a header)."""

    description: str | None = None
    is_required: bool = Field(False, alias="isRequired")
    format: Literal["string", "number", "boolean", "filepath"] = "string"
    value: str | None = None
    is_secret: bool = Field(False, alias="isSecret")
    default: str | None = None
    placeholder: str | None = None
    choices: list[str] | None = None
    variables: dict[str, Input] = Field(default_factory=dict)


class KeyValueInput(Input):
    """An environment variable or an HTTP header."""

    name: str = Field(min_length=1)


class Argument(Input):
    """A command-line argument: ``positional`` (a value, or a ``valueHint`` the user fills) or ``named`` (a flag)."""

    type: Literal["positional", "named"]
    name: str | None = None
    value_hint: str | None = Field(None, alias="valueHint")
    is_repeated: bool = Field(False, alias="isRepeated")

    @model_validator(mode="after")
    def _shape(self) -> Argument:
        if self.type == "named" and not self.name:
            raise ValueError("a named argument needs 'name' (the flag, e.g. --port)")
        if self.type == "positional" and self.value is None and not self.value_hint:
            raise ValueError("a positional argument needs 'value' or 'valueHint'")
        return self

    @property
    def label(self) -> str:
        """How the user names it (``--arg LABEL=VALUE``): the flag of a named argument, else its valueHint."""
        return str(self.name if self.type == "named" else self.value_hint or self.value)


class Transport(_Model):
    type: Literal["stdio", "streamable-http", "sse"]
    url: str | None = None
    headers: list[KeyValueInput] = Field(default_factory=list)

    @model_validator(mode="after")
    def _url(self) -> Transport:
        if self.type != "stdio" and not self.url:
            raise ValueError(f"a {self.type} transport needs 'url'")
        return self


class Package(_Model):
    registry_type: str = Field(alias="registryType", min_length=1)
    registry_base_url: str | None = Field(None, alias="registryBaseUrl")
    identifier: str = Field(min_length=1)
    version: str = Field(min_length=1)
    runtime_hint: str | None = Field(None, alias="runtimeHint")
    transport: Transport
    runtime_arguments: list[Argument] = Field(default_factory=list, alias="runtimeArguments")
    package_arguments: list[Argument] = Field(default_factory=list, alias="packageArguments")
    environment_variables: list[KeyValueInput] = Field(default_factory=list, alias="environmentVariables")


class Remote(_Model):
    type: Literal["streamable-http", "sse"]
    url: str = Field(min_length=1)
    headers: list[KeyValueInput] = Field(default_factory=list)


class ServerJson(_Model):
    name: str = Field(min_length=1, max_length=200)
    title: str | None = None
    description: str | None = None
    version: str | None = None
    packages: list[Package] = Field(default_factory=list)
    remotes: list[Remote] = Field(default_factory=list)

    @model_validator(mode="after")
    def _runnable(self) -> ServerJson:
        if not self.packages and not self.remotes:
            raise ValueError("has neither 'packages' nor 'remotes': nothing to run or connect to")
        return self


def substitute(text: str, values: dict[str, str | None]) -> tuple[str, list[str]]:
    """``{name}`` in ``text`` replaced from ``values``; the names left without a value (kept as written)."""
    missing: list[str] = []

    def one(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            missing.append(m.group(1))
            return m.group(0)
        return value

    return _VAR.sub(one, text), missing


def _where(loc: tuple[Any, ...]) -> str:
    # pydantic's union/validator steps (e.g. 'function-after[_shape(), Argument]') are not JSON keys
    return format_path([p for p in loc if isinstance(p, int) or not str(p).startswith(("function-", "json-"))])


def parse_server_json(text: str, source: str = "server.json") -> ServerJson:
    """A checked ``ServerJson`` from ``text``, or ``ServerJsonError`` naming ``source`` and each bad path."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SERVER_JSON_BYTES:
        raise ServerJsonError(f"{source}: larger than {MAX_SERVER_JSON_BYTES // 1024} KiB; not a server.json")
    try:
        data = loads_bounded(text, MAX_DEPTH)
    except JsonBoundsError as e:
        raise ServerJsonError(f"{source}: not valid JSON: {e.detail}") from None
    if not isinstance(data, dict):
        raise ServerJsonError(f"{source}: the top level must be a JSON object (a server.json), not {_kind(data)}")
    try:
        return ServerJson.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors()[:8]:
            at = _where(tuple(err["loc"]))
            msg = str(err["msg"]).removeprefix("Value error, ")
            lines.append(f"{source}: {at + ': ' if at else ''}{msg}")
        more = e.error_count() - len(lines)
        raise ServerJsonError("\n".join(lines) + (f"\n… and {more} more" if more > 0 else "")) from None


def read_server_json(path: str | os.PathLike[str]) -> ServerJson:
    """Read and check the server.json at ``path`` (its size is checked before it is read)."""
    p = Path(path).expanduser()
    try:
        size = p.stat().st_size
        if size > MAX_SERVER_JSON_BYTES:
            raise ServerJsonError(f"{p}: {size} bytes, larger than {MAX_SERVER_JSON_BYTES // 1024} KiB; not read")
        with p.open("rb") as f:
            raw = f.read(MAX_SERVER_JSON_BYTES + 1)
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ServerJsonError(f"{p}: is not UTF-8 text") from None
    except OSError as e:
        raise ServerJsonError(f"{p}: cannot read the file: {e.strerror or e}") from None
    return parse_server_json(text, str(p))


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")

"""Turn what users find (a registry ``server.json``, ``npm:PKG``, ``pypi:PKG``, a bare package name, an https URL)
into an ``mcp.servers.<id>`` config entry.

Why it exists: the MCP registry and package pages tell users "run it with npx / uvx" or "connect to this URL";
``ava-engine mcp add SOURCE`` and the console's "add from registry/package" (which fills the server form) both
call ``plan_add`` here, so they build the same entry. Nothing is written or run here: the result says which
env/header keys are secret (``isSecret`` in server.json; credential-looking ones are found again when the caller
moves values to the keyring with ``mcp_import.move_secrets``), which inputs still need a value, and how the source
was read (the runner chosen, fallbacks, guesses) in ``notes``.

Runners: npm packages run with ``npx -y PKG@VER``; PyPI packages with ``uvx PKG==VER``, else ``pipx run``, else
(when neither is on PATH) the package installed in the engine's own Python environment; OCI images with
``docker run -i --rm``. A runner that is missing is a clear error naming what to install.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from engine.config.mcp_add_inputs import Collected, Needed, fill_values, finalise, words
from engine.config.mcp_import import normalise_server_id
from engine.config.server_json import (
    Argument,
    KeyValueInput,
    Package,
    Remote,
    ServerJsonError,
    read_server_json,
    substitute,
)

__all__ = ["AddPlan", "McpAddError", "Needed", "finalise", "needs_oauth", "plan_add"]

_NPM_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$", re.IGNORECASE)
_PYPI_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+!-]*$")
Which = Callable[[str], str | None]


class McpAddError(ValueError):
    """The source cannot become a server entry; the message says what and where (file, JSON path, runner)."""


@dataclass(kw_only=True)
class AddPlan(Collected):
    source: str
    suggested_id: str
    #: the config entry with values as given (secrets not moved yet: ``move_secrets`` does it when saving)
    entry: dict[str, Any]
    #: "env:KEY" / "headers:KEY" declared secret by the source (``isSecret``)
    secret_keys: frozenset[str] = frozenset()
    notes: list[str] = field(default_factory=list)


@dataclass
class _Given:
    env: Mapping[str, str]
    headers: Mapping[str, str]
    args: Mapping[str, str]


def plan_add(
    source: str,
    *,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    args: Mapping[str, str] | None = None,
    which: Which = shutil.which,
) -> AddPlan:
    """The config entry for ``source`` (``McpAddError`` when it cannot be one). ``env``/``headers``/``args`` are
    the user's values (``--env``, ``--header``, ``--arg``), which win over the source's defaults."""
    given = _Given(dict(env or {}), dict(headers or {}), dict(args or {}))
    text = source.strip()
    if not text:
        raise McpAddError("SOURCE is empty: give a server.json file, npm:PKG, pypi:PKG, a package name or a URL")
    if text.startswith(("https://", "http://")):
        plan = _remote(text, "streamable-http", [], given, text)
    elif text.endswith(".json") or Path(text).expanduser().is_file():
        plan = _from_server_json(text, given, which)
    elif (m := re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", text)) and m.group(1) not in ("npm", "pypi"):
        raise McpAddError(f"{m.group(1)}: is not a source kind (npm:PKG, pypi:PKG, a server.json file or a URL)")
    else:
        registry, name, version, note = _package_spec(text)
        plan = _package(registry, name, version, None, [], [], [], given, which, text)
        plan.notes[:0] = [note] if note else []
    _extra(plan, given)
    return plan


# --------------------------------------------------------------------------------------------- sources


def _package_spec(text: str) -> tuple[str, str, str | None, str]:
    """(registry, name, version or None, a note when the registry was guessed) from a package name."""
    if text.startswith("npm:"):
        registry, spec = "npm", text[4:]
    elif text.startswith("pypi:"):
        registry, spec = "pypi", text[5:]
    elif text.startswith("@") or "@" in text[1:]:
        registry, spec = "npm", text
    elif "==" in text:
        registry, spec = "pypi", text
    else:
        registry = "pypi" if _installed(text) is not None else "npm"
        where = "it is installed in the engine's Python environment" if registry == "pypi" else "most MCP servers are"
        other = "npm" if registry == "pypi" else "pypi"
        note = f"{text!r} read as a {registry} package ({where}); write {other}:{text} if it is not one"
        return registry, *_split(registry, text), note
    return registry, *_split(registry, spec), ""


def _split(registry: str, spec: str) -> tuple[str, str | None]:
    if registry == "npm":
        at = spec.rfind("@")
        name, version = (spec[:at], spec[at + 1 :]) if at > 0 else (spec, None)
        pattern = _NPM_NAME
    else:
        name, _, rest = spec.partition("==")
        version = rest or None
        pattern = _PYPI_NAME
    if not pattern.match(name):
        raise McpAddError(f"{spec!r} is not a valid {registry} package name")
    if version is not None and not _VERSION.match(version):
        raise McpAddError(f"{spec!r}: {version!r} is not a package version (e.g. 1.2.3)")
    return name, version


def _from_server_json(path: str, given: _Given, which: Which) -> AddPlan:
    try:
        server = read_server_json(path)
    except ServerJsonError as e:
        raise McpAddError(str(e)) from None
    sid = _suggest(server.name.rsplit("/", 1)[-1])
    problems: list[str] = []
    for i, pkg in enumerate(server.packages):
        try:
            plan = _from_package(pkg, given, which, path, f"packages[{i}]")
        except McpAddError as e:
            problems.append(str(e))
            continue
        plan.suggested_id = sid
        plan.notes += [f"skipped {p}" for p in problems]
        return plan
    if server.remotes:
        remote: Remote = server.remotes[0]
        plan = _remote(remote.url, remote.type, remote.headers, given, path, where="remotes[0]")
        plan.suggested_id = sid
        plan.notes += [f"skipped {p}" for p in problems]
        return plan
    raise McpAddError(f"{path}: no package can run here:\n" + "\n".join(f"  {p}" for p in problems))


def _from_package(pkg: Package, given: _Given, which: Which, source: str, where: str) -> AddPlan:
    at = f"{source}: {where}"
    if pkg.transport.type != "stdio":
        raise McpAddError(
            f"{at}: transport {pkg.transport.type!r} runs its own HTTP server; start it yourself and add its URL"
        )
    if pkg.version == "latest":
        raise McpAddError(f"{at}.version: 'latest' is not a version (server.json packages name an exact one)")
    registry = pkg.registry_type.lower()
    plan = _package(
        registry,
        pkg.identifier,
        pkg.version,
        pkg.runtime_hint,
        pkg.runtime_arguments,
        pkg.package_arguments,
        pkg.environment_variables,
        given,
        which,
        source,
        where=at,
    )
    plan.notes.insert(0, f"{where}: {registry} package {pkg.identifier} {pkg.version}")
    return plan


# -------------------------------------------------------------------------------------------- packages


def _package(
    registry: str,
    name: str,
    version: str | None,
    hint: str | None,
    runtime_args: list[Argument],
    package_args: list[Argument],
    env_inputs: list[KeyValueInput],
    given: _Given,
    which: Which,
    source: str,
    where: str = "",
) -> AddPlan:
    plan = AddPlan(source=source, suggested_id=_suggest(name.rsplit("/", 1)[-1]), entry={"transport": "stdio"})
    at = where or repr(source)
    env, secret = fill_values("env", env_inputs, given.env, plan)
    runtime = words(runtime_args, given.args, plan)
    pkg_words = words(package_args, given.args, plan)
    if registry == "npm":
        runner = _need(which, "npx", f"{at}: the npm package {name} needs npx (Node.js) on PATH")
        command = [runner, "-y", *runtime, f"{name}@{version}" if version else name, *pkg_words]
    elif registry == "pypi":
        command = _python_command(name, version, hint, runtime, pkg_words, which, plan, at)
    elif registry == "oci":
        runner = _need(which, "docker", f"{at}: the OCI image {name} needs docker on PATH")
        image = f"{name}:{version}" if version and ":" not in name.rsplit("/", 1)[-1] else name
        passed = [w for key in env for w in ("-e", key)]  # docker passes on only the variables it is told
        command = [runner, "run", "-i", "--rm", *runtime, *passed, image, *pkg_words]
    else:
        raise McpAddError(f"{at}: registryType {registry!r} is not supported (npm, pypi or oci)")
    if hint and Path(command[0]).name not in (hint, "{python}") and command[0] != "{python}":
        plan.notes.append(f"runtimeHint {hint!r} not used: runs with {Path(command[0]).name}")
    plan.entry["command"] = command
    if env:
        plan.entry["env"] = env
    plan.secret_keys = frozenset(f"env:{k}" for k in secret)
    return plan


def _need(which: Which, program: str, message: str) -> str:
    if which(program) is None:
        raise McpAddError(message)
    return program


def _python_command(
    name: str,
    version: str | None,
    hint: str | None,
    runtime: list[str],
    words: list[str],
    which: Which,
    plan: AddPlan,
    at: str,
) -> list[str]:
    """uvx, else pipx, else the package as installed in the engine's environment (said in ``plan.notes``)."""
    spec = f"{name}=={version}" if version else name
    order = ["uvx", "pipx"] if hint != "pipx" else ["pipx", "uvx"]
    for runner in order:
        if which(runner) is None:
            continue
        if runner != order[0]:
            plan.notes.append(f"{order[0]} is not on PATH: runs with {runner}")
        if runner == "uvx":
            return ["uvx", *runtime, spec, *words]
        return ["pipx", "run", "--spec", spec, name, *words]
    found = _installed(name)
    if found is None:
        raise McpAddError(
            f"{at}: the PyPI package {name} needs uvx (uv) or pipx on PATH, or the package installed in the "
            f"engine's Python environment ({sys.executable} -m pip install {spec})"
        )
    command, installed = found
    plan.notes.append(f"uvx and pipx are not on PATH: runs {name} {installed} from the engine's Python environment")
    if version and installed != version:
        plan.notes.append(f"the source asks for {name} {version}; the engine's environment has {installed}")
    if runtime:
        plan.notes.append(f"runtimeArguments {' '.join(runtime)} dropped (they are for {hint or 'uvx'})")
    return [*command, *words]


def _installed(name: str) -> tuple[list[str], str] | None:
    """(command, version) running the distribution ``name`` installed beside the engine, or None."""
    try:
        dist = metadata.distribution(name)
    except (metadata.PackageNotFoundError, ValueError):
        return None
    scripts = [ep for ep in dist.entry_points if ep.group == "console_scripts"]
    if not scripts:
        return None
    norm = re.sub(r"[-_.]+", "-", name).lower()
    ep = next((e for e in scripts if re.sub(r"[-_.]+", "-", e.name).lower() == norm), scripts[0])
    module = ep.value.split(":", 1)[0].strip()
    main = f"{module.replace('.', '/')}/__main__.py"
    if any(str(f) == main for f in dist.files or ()):
        return ["{python}", "-m", module], dist.version
    script = Path(sys.executable).parent / ep.name
    return ([str(script)], dist.version) if script.exists() else None


# ---------------------------------------------------------------------------------------------- remotes


def _remote(
    url: str, kind: str, header_inputs: list[KeyValueInput], given: _Given, source: str, where: str = ""
) -> AddPlan:
    at = f"{source}: {where}.url" if where else repr(source)
    filled, missing = substitute(url, {**given.args, **given.env})
    if missing:
        how = ", ".join(Needed("arg", name).how() for name in missing)
        raise McpAddError(f"{at}: the URL needs a value for {', '.join(missing)} ({how})")
    parsed = urlparse(filled)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise McpAddError(f"{at}: {filled!r} is not an http(s) URL")
    host = parsed.hostname or "remote"
    label = "remote" if re.fullmatch(r"[0-9.:]+|localhost", host) else host.removeprefix("www.").split(".")[0]
    plan = AddPlan(source=source, suggested_id=_suggest(label), entry={})
    plan.entry = {"transport": "http" if kind == "streamable-http" else "sse", "url": filled}
    if parsed.scheme == "http" and host not in ("127.0.0.1", "localhost", "::1"):
        plan.notes.append(f"{host} is reached over plain http: headers and answers travel unencrypted")
    headers, secret = fill_values("headers", header_inputs, given.headers, plan)
    if headers:
        plan.entry["headers"] = headers
    plan.secret_keys = frozenset(f"headers:{k}" for k in secret)
    plan.notes.insert(0, f"{where or 'URL'}: remote {kind} server {filled}")
    return plan


def needs_oauth(entry: dict[str, Any], server_id: str, authorization_servers: list[str]) -> str:
    """The entry of a server that answered 401 with OAuth metadata: ``auth.oauth`` added (scopes from the server's
    challenge at sign-in); returns the note saying how to sign in."""
    entry["auth"] = {"oauth": {}}
    where = f" at {', '.join(authorization_servers)}" if authorization_servers else ""
    return (
        f"the server asks for OAuth sign-in (authorization server{where}): auth.oauth added; "
        f"run `ava-engine mcp login {server_id}` to sign in"
    )


def _extra(plan: AddPlan, given: _Given) -> None:
    """``--env``/``--header`` values the source did not declare are added as given."""
    kind = "env" if plan.entry["transport"] == "stdio" else "headers"
    values = given.env if kind == "env" else given.headers
    other = given.headers if kind == "env" else given.env
    if other:
        raise McpAddError(
            f"{'--header' if kind == 'env' else '--env'} does not apply: this is a "
            f"{plan.entry['transport']} server (use {'--env' if kind == 'env' else '--header'})"
        )
    target: dict[str, str] = plan.entry.setdefault(kind, {})
    for key, value in values.items():
        target.setdefault(key, value)
    if not target:
        del plan.entry[kind]
    plan.needed = [n for n in plan.needed if not (n.kind == kind and n.name in values)]


def _suggest(raw: str) -> str:
    try:
        return normalise_server_id(raw)
    except ValueError:
        return "server"

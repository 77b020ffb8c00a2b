"""``ava-engine mcp add SOURCE``: a server from a registry server.json, ``npm:PKG``, ``pypi:PKG``, a package name or
a URL, tested before it is saved.

Why it exists: users find MCP servers on the registry and on package pages, not as YAML. This command builds the
entry (``engine.config.mcp_add``, shared with the console), moves secret env/header values to the OS keyring as
``${keyring:NAME}`` (the importer's ``move_secrets``: never in the YAML), tests the server through the same probe
as ``mcp test``, shows the diff (no secret in it) and saves through ``ConfigDocument`` (atomic, comments kept).
A URL that answers 401 with OAuth metadata (``engine.mcp.oauth_probe``) gets ``auth.oauth`` instead of a test, and
the output says to run ``ava-engine mcp login ID`` (``"sign_in"`` in the JSON).

Exit codes: 0 saved (or shown with nothing to write); 1 the test failed (nothing written unless ``--force``), no
keyring, or not confirmed; 2 a bad source, a malformed server.json, a duplicate id, missing required inputs.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from typing import Any

from engine.cli.common import REDACTOR, CommandFailed, UsageError, imports_without_gc, print_json
from engine.cli.mcp_commands import LenientEnv, _mcp_actions


def register(sub: Any) -> None:
    p = _mcp_actions(sub).add_parser(
        "add",
        help="add a server from a registry server.json, npm:PKG, pypi:PKG, a package name or a URL (tested first)",
        description="Build the mcp.servers entry for SOURCE, test it, show the diff and save it. Secret env and "
        "header values go to the OS keyring as ${keyring:NAME}. Exit 1 when the test fails (nothing is written "
        "unless --force), 2 for a bad source or a duplicate id.",
    )
    p.add_argument("source", metavar="SOURCE", help="server.json file, npm:PKG[@VER], pypi:PKG[==VER], PKG or URL")
    p.add_argument("--id", dest="server_id", default=None, help="the server id (default: from the source's name)")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="an environment variable (repeat)")
    p.add_argument("--header", action="append", default=[], metavar="K=V", help="an HTTP header (repeat)")
    p.add_argument("--arg", action="append", default=[], metavar="K=V", help="a server.json argument by its name")
    p.add_argument("--no-test", action="store_true", help="save without testing the server first")
    p.add_argument("--force", action="store_true", help="save even when the test fails")
    p.add_argument("--yes", "-y", action="store_true", help="write without asking (needed when not on a terminal)")
    p.set_defaults(func=cmd_add)


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {item.split('=', 1)[0]!r}: expected NAME=VALUE")
        out[key.strip()] = value
    return out


def _interactive(args: argparse.Namespace) -> bool:
    return not args.json and sys.stdin.isatty()


def _ask_needed(plan: Any, given: dict[str, dict[str, str]], args: argparse.Namespace) -> None:
    """Required inputs nobody gave: asked on a terminal (secrets without echo), else a usage error naming them."""
    if not plan.needed:
        return
    if not _interactive(args):
        lines = [f"  {n.name}{' (secret)' if n.secret else ''}: {n.description or 'required'}" for n in plan.needed]
        how = " ".join(n.how() for n in plan.needed)
        raise UsageError(f"{plan.source} needs values:\n" + "\n".join(lines) + f"\ngive them with {how}")
    for n in plan.needed:
        prompt = f"{n.name}{' (secret)' if n.secret else ''}{': ' + n.description if n.description else ''}: "
        value = getpass.getpass(prompt) if n.secret else input(prompt)
        if n.secret:
            REDACTOR.update([value])
        given[n.kind][n.name] = value


def cmd_add(args: argparse.Namespace) -> int:
    from engine.config import ConfigDocument, resolve_config_path
    from engine.config.mcp_add import McpAddError, plan_add
    from engine.config.models import SERVER_ID_RE

    given = {
        "env": _pairs(args.env, "--env"),
        "headers": _pairs(args.header, "--header"),
        "arg": _pairs(args.arg, "--arg"),
    }
    from engine.config.secrets import looks_like_secret

    # credential-looking values are masked from here on; isSecret ones once they are known (_entry_and_secrets)
    REDACTOR.update(v for kind in ("env", "headers") for k, v in given[kind].items() if looks_like_secret(k, v))
    try:
        plan = plan_add(args.source, env=given["env"], headers=given["headers"], args=given["arg"])
        _ask_needed(plan, given, args)
        if plan.needed:
            plan = plan_add(args.source, env=given["env"], headers=given["headers"], args=given["arg"])
    except McpAddError as e:
        raise UsageError(str(e)) from e
    sid = args.server_id or plan.suggested_id
    if not SERVER_ID_RE.match(sid):
        raise UsageError(f"--id {sid!r}: a server id is [a-z][a-z0-9_]* (at most 32 characters)")
    args.config_path = config_path = resolve_config_path(args.config)
    doc = ConfigDocument.load(config_path) if config_path.exists() else ConfigDocument.new(config_path)
    if sid in (doc.get(("mcp", "servers"), None) or {}):
        hint = "choose another one with --id" if not args.server_id else "choose another --id"
        raise UsageError(f"mcp.servers.{sid} already exists in {config_path}; {hint} (nothing was changed)")
    entry, secrets = _entry_and_secrets(sid, plan)
    challenge = None if args.no_test else _challenge(entry)
    sign_in = _sign_in(sid, entry, plan, challenge)
    doc.set_server(sid, entry)
    settings = doc.validate(env=LenientEnv(os.environ), lookup_secret=lambda name: "(not set yet)")
    testing = not args.no_test and sign_in is None  # a server that wants a sign-in cannot be tested before it
    report = asyncio.run(_test(settings, config_path, sid, entry, secrets)) if testing else None
    if report is not None and not report["ok"] and challenge is not None:  # a 401 without any OAuth metadata
        report["error"] = (
            "the server answered 401 (it wants credentials) but publishes no OAuth metadata: give its token with "
            "--header 'Authorization=Bearer TOKEN' (it goes to the OS keyring)"
        )
    passed = report is None or bool(report["ok"])
    out: dict[str, Any] = {
        "config": str(config_path),
        "server": sid,
        "source": plan.source,
        "entry": entry,
        "notes": plan.notes,
        "keyring": sorted(secrets),
        "test": report,
        "diff": doc.diff(),
        "written": False,
        "sign_in": sign_in,
    }
    if not args.json:
        _print_plan(out)
    if not passed and not args.force:
        return _done(out, args, "not saved: the test failed (fix the source or its values, or save with --force)")
    if not args.yes:
        if not _interactive(args):
            return _done(out, args, "not saved: add --yes to write without asking")
        if input(f"write mcp.servers.{sid} to {config_path}? [y/N] ").strip().lower() not in ("y", "yes"):
            return _done(out, args, "not saved")
    _store(secrets)
    doc.save(env=LenientEnv(os.environ), lookup_secret=lambda name: "(not set yet)")
    out["written"] = True
    then = f"; it needs a sign-in: run `{sign_in}`" if sign_in else ""
    return _done(out, args, f"saved mcp.servers.{sid} to {config_path}{then}", code=0)


def _challenge(entry: dict[str, Any]) -> Any:
    """An http server's answer to a request without credentials, when it is 401 (``engine.mcp.oauth_probe``);
    None otherwise, and for a server that cannot be reached (the test reports that)."""
    import httpx2

    from engine.mcp.oauth_probe import oauth_challenge

    if entry.get("transport") != "http" or any(k.lower() == "authorization" for k in entry.get("headers") or {}):
        return None
    try:
        return asyncio.run(oauth_challenge(str(entry["url"])))
    except (httpx2.HTTPError, OSError, ValueError):
        return None


def _sign_in(sid: str, entry: dict[str, Any], plan: Any, challenge: Any) -> str | None:
    """For a 401 with OAuth metadata: ``auth.oauth`` in the entry, and the command that signs in."""
    from engine.config.mcp_add import needs_oauth

    if challenge is None or challenge.metadata is None:
        return None
    servers = [str(u) for u in challenge.metadata.authorization_servers]
    plan.notes.append(needs_oauth(entry, sid, servers))
    return f"ava-engine mcp login {sid}"


def _entry_and_secrets(sid: str, plan: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The entry as written (secret values replaced by ``${keyring:NAME}``) and the values for the keyring."""
    from engine.config.mcp_add import finalise
    from engine.config.mcp_import import keyring_clash
    from engine.config.secrets import backend_problem

    entry, secrets = finalise(sid, plan.entry, plan, plan.secret_keys)
    REDACTOR.update(secrets.values())
    if secrets and (problem := backend_problem()):
        raise CommandFailed(
            f"{', '.join(sorted(secrets))} must go to the OS keyring, which is not usable: {problem}. "
            "Nothing was written; set up a keyring, or pass a reference (--env NAME='${VAR}')"
        )
    if secrets and (clash := keyring_clash(secrets)):
        raise CommandFailed(
            f"the keyring already holds a different secret {clash!r}; not overwritten (choose another --id, or "
            f"`ava-engine secrets delete {clash}` first). Nothing was written"
        )
    return entry, secrets


async def _test(settings: Any, config_path: Any, sid: str, entry: dict[str, Any], pending: dict[str, str]) -> Any:
    """The server tested as it would run once saved: references expanded, pending secrets in place."""
    with imports_without_gc():
        from engine.app import Engine
    from engine.config import ExpansionError
    from engine.config.expand import expand_entry
    from engine.config.secrets import lookup_secret

    try:
        data = expand_entry(entry, lambda name: pending[name] if name in pending else lookup_secret(name))
    except ExpansionError as e:
        raise UsageError(f"mcp.servers.{sid}.{e.message}") from e
    engine = Engine(settings, config_path=config_path)  # not started: the test uses its own connection
    return await engine.test_server({"id": sid, **data})


def _store(secrets: dict[str, str]) -> None:
    from engine.config.secrets import set_secret

    for name, value in secrets.items():
        set_secret(name, value)


def _print_plan(out: dict[str, Any]) -> None:
    print(f"mcp.servers.{out['server']} from {out['source']}")
    for note in out["notes"]:
        print(f"  {note}")
    for name in out["keyring"]:
        print(f"  secret {name} goes to the OS keyring")
    report = out["test"]
    if report is None:
        print("test: skipped (sign in first)" if out["sign_in"] else "test: skipped (--no-test)")
    elif report["ok"]:
        tools = ", ".join(t["name"] for t in report["tools"])
        print(f"test: ok ({report['protocol_version']}, {len(report['tools'])} tools: {tools})")
    else:
        print(f"test: FAILED: {report['error']}")
        for line in report["stderr_tail"][-10:]:
            print(f"  stderr: {line}")
    print(out["diff"], end="" if out["diff"].endswith("\n") else "\n")


def _done(out: dict[str, Any], args: argparse.Namespace, message: str, code: int = 1) -> int:
    out["message"] = message
    if args.json:
        print_json(out)
    else:
        print(message, file=sys.stderr if code else sys.stdout)
    return code

"""``ava-engine mcp list|test|call``, ``import-mcp-json FILE`` and ``serve``: the MCP host from the command line.

Exit codes: 0 ok; 1 the operation failed (a server test that did not pass, a call whose status is not
``success``, a server that did not come up); 2 bad config or arguments. One-shot commands never bind the HTTP
port (``serve`` does, per ``engine.http``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from engine._compat.stdlib import subparser_actions
from engine.cli.common import UsageError, imports_without_gc, load, print_json, running_engine

log = logging.getLogger(__name__)


def _mcp_actions(sub: Any) -> Any:
    """The ``mcp`` group's sub-command action, creating the group when no other module has."""
    mcp = sub.choices.get("mcp")
    if mcp is None:
        mcp = sub.add_parser("mcp", help="MCP servers: list, test, call, calibrate")
        return mcp.add_subparsers(dest="mcp_command", metavar="ACTION", required=True, parser_class=type(mcp))
    for action in subparser_actions(mcp):
        return action
    return mcp.add_subparsers(dest="mcp_command", metavar="ACTION", required=True, parser_class=type(mcp))


def register(sub: Any) -> None:
    actions = _mcp_actions(sub)
    p = actions.add_parser("list", help="start the MCP servers and list their state and tools")
    p.set_defaults(func=cmd_list)
    p = actions.add_parser("test", help="connect, initialize and list one server, with timings (exit 1 on failure)")
    p.add_argument("server", metavar="SERVER", help="the MCP server id")
    p.set_defaults(func=cmd_test)
    p = actions.add_parser(
        "call",
        help="call a tool through the full engine path (exit 0 when its status is success, 1 otherwise)",
        description="Call a tool through the engine (allowlist, validation, timeout, result shaping). Exit 0 when "
        "the call completed with status success; 1 for error, timeout or rejected; 2 for bad arguments.",
    )
    p.add_argument("exposed_name", metavar="EXPOSED_NAME", help="the exposed name, e.g. mcp_time_get_current_time")
    p.add_argument("--args", default="{}", help="the arguments as a JSON object (default {})")
    p.add_argument(
        "--context",
        default=None,
        help="call as this context would: only the tools it is shown, clamped to its default tier's budget",
    )
    p.add_argument(
        "--tier",
        choices=["fast", "standard", "deep"],
        default=None,
        help="clamp the call to this tier's budget (default: the tool's own timeout_ms; with --context, its tier)",
    )
    p.add_argument(
        "--accept-defaults",
        action="store_true",
        help="answer a question the tool asks mid-call (MCP elicitation) with its form's defaults; declined when a "
        "required field has none (default: every question is declined)",
    )
    p.set_defaults(func=cmd_call)
    p = sub.add_parser("import-mcp-json", help="add the servers of a Claude Desktop / Cursor / VS Code MCP JSON")
    p.add_argument("file", metavar="FILE", help="the JSON file (mcpServers or servers)")
    p.add_argument("--dry-run", action="store_true", help="show what would be added; write nothing")
    p.add_argument(
        "--plaintext-secrets",
        action="store_true",
        help="keep credentials (env/header values, in arguments and URLs) in the YAML as written (default: move them "
        "to the keyring)",
    )
    p.add_argument(
        "--no-input",
        action="store_true",
        help="never ask for VS Code input values: when one is not in the keyring yet, write nothing and list what "
        "to set with `ava-engine secrets set NAME`",
    )
    p.set_defaults(func=cmd_import)
    p = sub.add_parser("serve", help="run the engine headless (HTTP API; reloads on SIGHUP and file change)")
    p.add_argument(
        "--no-watch",
        dest="watch",
        action="store_false",
        help="do not reload when the config file changes (SIGHUP still reloads)",
    )
    p.add_argument("--poll", type=float, default=None, help=argparse.SUPPRESS)  # old spelling: --poll 0 = --no-watch
    p.set_defaults(func=cmd_serve)


def _one_shot(args: argparse.Namespace) -> Any:
    """Settings for a one-shot command (``running_engine`` leaves the HTTP port alone unless asked)."""
    return load(args)


def _print_servers(status: dict[str, Any]) -> None:
    if not status["servers"]:
        print("no MCP servers configured")
    for s in status["servers"]:
        extra = f", {s['protocol_version']}" if s["protocol_version"] else ""
        extra += f", pid {s['pid']}" if s["pid"] else ""
        print(f"{s['id']}: {s['state']} ({s['transport']}{extra}) restarts {s['restarts']}, {s['tool_count']} tools")
        if s["last_error"]:
            print(f"  last error: {s['last_error']}")
        for t in s["tools"]:
            print(f"  {t['exposed_name']:<40} {t['description'][:70]}")


async def cmd_list(args: argparse.Namespace) -> int:
    settings = _one_shot(args)
    async with running_engine(args, settings) as engine:
        status = engine.server_status()
    if args.json:
        print_json({"servers": status["servers"]})
    else:
        _print_servers(status)
    return 0


async def cmd_test(args: argparse.Namespace) -> int:
    settings = _one_shot(args)
    cfg = settings.mcp.servers.get(args.server)
    if cfg is None:
        known = ", ".join(sorted(settings.mcp.servers)) or "none"
        raise UsageError(f"SERVER: unknown MCP server {args.server!r} (configured: {known})")
    with imports_without_gc():
        from engine.app import Engine

    engine = Engine(settings, config_path=args.config_path)  # not started: the test uses its own connection
    report = await engine.mcp.test_server(cfg, server_id=args.server)
    if args.json:
        print_json(report)
    else:
        t = report["timings_ms"]
        if report["ok"]:
            print(
                f"{args.server}: ok ({report['protocol_version']}, {report['server_name'] or 'unnamed'}) "
                f"connect+initialize {t.get('connect_initialize', 0):.0f} ms, list {t.get('list_tools', 0):.0f} ms, "
                f"{len(report['tools'])} tools"
            )
            for tool in report["tools"]:
                print(f"  {tool['exposed_name']}")
        else:
            print(f"{args.server}: FAILED after {t['total']:.0f} ms: {report['error']}")
            for line in report["stderr_tail"]:
                print(f"  stderr: {line}")
    return 0 if report["ok"] else 1


async def cmd_call(args: argparse.Namespace) -> int:
    from engine.operator.tool_bench import UnknownTool, call_tool
    from engine.tools.validation import ArgumentError, parse_arguments

    settings = _one_shot(args)
    try:  # bounded (engine.tool_arguments) before parsing: a deeply nested --args is an error, not a crash
        call_args = parse_arguments(args.args, settings.engine.tool_arguments)
    except ArgumentError as e:
        raise UsageError(f'--args: {e} (e.g. \'{{"timezone": "UTC"}}\')') from e
    if args.context is not None and args.context not in settings.contexts:
        known = ", ".join(sorted(settings.contexts)) or "none"
        raise UsageError(f"--context: unknown context {args.context!r} (known: {known})")
    from engine.cli.mcp_questions import CallQuestions

    async with running_engine(args, settings) as engine:
        questions = CallQuestions(engine, args.accept_defaults)
        try:  # the console's tool inspector calls through the same call_tool
            # the operator typed this very call: that is its approval (engine.tools.approvals)
            result = await call_tool(
                engine,
                args.exposed_name,
                call_args,
                context=args.context,
                tier=args.tier,
                approved_by="operator (ava-engine mcp call)",
            )
        except UnknownTool as e:
            raise UsageError(f"EXPOSED_NAME: {e}") from e
        asked = questions.asked()
    for note in questions.notes(asked):
        print(note, file=sys.stderr)
    if args.json:
        print_json({**result.to_dict(), "elicitations": asked} if asked else result.to_dict())
    else:
        print(f"{result.status}: {result.message}")
        if result.status == "timeout" and (args.context or args.tier):
            print(
                "  (the call ran under a tier's budget: leave out --context and --tier to give the tool its own "
                "timeout_ms, or raise that tier in budget.tiers)",
                file=sys.stderr,
            )
        if result.data is not None:
            print(json.dumps(result.data, indent=2, ensure_ascii=False, default=str))
    return 0 if result.status == "success" else 1


class LenientEnv(dict[str, str]):
    """An environment where every variable exists (unset ones as a placeholder): shape-only validation."""

    def get(self, key: str, default: Any = None) -> str:
        return super().get(key, "(not set yet)")


def cmd_import(args: argparse.Namespace) -> int:
    """Import, ask for the inputs (or list them), run check's validation, then save; or write nothing and say why."""
    from engine.config import ConfigDocument, McpImportError, import_mcp_json, resolve_config_path
    from engine.config.mcp_import import store_secrets

    config_path = resolve_config_path(args.config)
    doc = ConfigDocument.load(config_path) if config_path.exists() else ConfigDocument.new(config_path)
    try:
        # the console's Servers screen imports through the same function
        result = import_mcp_json(doc, args.file, plaintext_secrets=args.plaintext_secrets)
    except McpImportError as e:
        raise UsageError(str(e)) from e
    why: str | None = None
    stored: list[str] = []
    if result.added and not args.dry_run:
        if result.keyring_problem and result.secrets:
            store_secrets(result)  # SecretsError: exit 1 saying how, nothing written
        if not args.no_input and sys.stdin.isatty():
            _ask_inputs(result)
        why = _unset_inputs(result) or _check(doc, result, config_path)
        if why is None:
            stored = store_secrets(result)
            doc.save(validate=False)  # _check validated this very text against the keyring-to-be
    written = bool(result.added) and not args.dry_run and why is None
    out: dict[str, Any] = {
        "config": str(config_path),
        "added": sorted(result.added) if written or args.dry_run else [],
        "unchanged": result.unchanged,
        "conflicts": result.conflicts,
        "renamed": result.renamed,
        "problems": result.problems,
        "keyring": stored if not args.dry_run else sorted(result.secrets),
        "needs": [
            {"secret": name, "input": a.prompt.id, "description": a.prompt.description, "server": sid}
            for a in result.asks
            for name, sid in zip(a.names, a.servers, strict=True)
        ],
        "written": written,
    }
    if why is not None:
        out["error"] = why
    if args.json:
        print_json(out)
    else:
        if why is None:
            for line in result.summary():
                print(line)
        for line in result.warnings():
            print(f"warning: {line}", file=sys.stderr)
        if why is not None:
            print(f"error: {why}", file=sys.stderr)
        elif result.added and args.dry_run:
            print("(dry run: nothing written)")
            for line in result.how_to_set():
                print(f"  needs: {line}")
    if why is not None:
        return 1
    return 1 if result.conflicts and not result.added else 0


def _ask_inputs(result: Any) -> None:
    """Ask on the terminal for each ``${input:ID}`` value (passwords without echo); the answers are masked in all
    further output."""
    import getpass

    from engine.cli.common import REDACTOR, CommandFailed

    for ask in list(result.asks):
        p = ask.prompt
        text = f"{p.description or 'value'} (input {p.id!r} of mcp.servers.{', '.join(ask.servers)})"
        text += f" [{' / '.join(p.options)}]" if p.options else ""
        text += f" (default {p.default})" if p.default else ""
        if p.password:
            value = getpass.getpass(f"{text}: ", stream=sys.stderr)
        else:
            sys.stderr.write(f"{text}: ")
            sys.stderr.flush()
            value = sys.stdin.readline().rstrip("\r\n")
        value = value or p.default or ""
        if p.options and value not in p.options:
            raise CommandFailed(f"input {p.id!r}: {value!r} is not one of {', '.join(p.options)}; nothing written")
        if not value:
            raise CommandFailed(f"no value given for the input {p.label()}; nothing written")
        REDACTOR.update([value])
        result.answer(ask, value)


def _unset_inputs(result: Any) -> str | None:
    """Why nothing can be written yet: the inputs nobody gave a value for, each with the command that sets it."""
    if not result.asks:
        return None
    lines = "\n".join(f"  {line}" for line in result.how_to_set())
    return (
        f"nothing written: {result.source} asks for {len(result.asks)} value(s) (VS Code inputs) and no terminal "
        f"answered (or --no-input); store each in the keyring, then import again:\n{lines}"
    )


def _check(doc: Any, result: Any, config_path: Any) -> str | None:
    """What ``ava-engine check`` would refuse in the config as it would be saved (None: it passes)."""
    from engine.config import ConfigError
    from engine.config.mcp_import import check_import
    from engine.providers.base import ProviderError
    from engine.providers.factory import create_provider

    try:
        settings = check_import(doc, result)
        for name, cfg in settings.providers.items():
            create_provider(name, cfg, base_dir=config_path.parent)
    except (ConfigError, ProviderError) as e:
        return f"nothing written: the config would not pass `ava-engine check`:\n{e}"
    return None


async def cmd_serve(args: argparse.Namespace) -> int:
    """``serve`` lives in ``engine.cli.serve`` (signals, shutdown deadline, config watch)."""
    from engine.cli.serve import cmd_serve as serve

    if args.poll is not None and args.poll <= 0:
        args.watch = False
    return await serve(args)

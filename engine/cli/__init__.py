"""``ava-engine``: the engine headless. Each command group lives in its own module with a ``register`` function.

Every command takes ``--json`` and then prints only JSON. Exit codes: 0 ok, 1 the operation failed, 2 bad config
or arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from engine._compat.stdlib import SubParsersAction, subparser_actions
from engine.cli import common

#: Every module that adds commands, in registration order; each has ``register(subparsers)``. This is the one list:
#: a command module missing here does not exist for users (``tests/cli`` runs every documented command's ``--help``
#: through the installed ``ava-engine``). ``budget_commands`` adds ``mcp calibrate`` to the group ``mcp_commands`` made.
COMMAND_MODULES = (
    "engine.cli.core_commands",
    "engine.cli.secrets_commands",
    "engine.cli.mcp_commands",
    "engine.cli.mcp_add_command",
    "engine.cli.oauth_commands",
    "engine.cli.budget_commands",
    "engine.cli.email_commands",
    "engine.cli.export_commands",
    "engine.cli.usage_commands",
    "engine.cli.capacity_commands",
)


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = common.ArgParser(prog="ava-engine", description="The ava voice-agent engine, headless.")
    parser.add_argument("--config", "-c", help="config file (default: the user config, created from the demo)")
    parser.add_argument("--json", action="store_true", help="print only JSON")
    parser.add_argument("--log-level", default=None, choices=["debug", "info", "warning", "error"])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=common.ArgParser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _add_global_options(sub)
    return parser


def _add_global_options(sub: SubParsersAction[Any]) -> None:
    """Let --json and --config also follow the command (``ava-engine call … --json``)."""
    for p in set(sub.choices.values()):
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print only JSON")
        p.add_argument("--config", "-c", default=argparse.SUPPRESS, help="config file")
        for action in subparser_actions(p):
            _add_global_options(action)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # --help or a usage error printed into a pipe whose reader left
        return common.reader_gone()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except common.UsageError as e:
        return common.fail_usage(str(e), "--json" in (argv if argv is not None else sys.argv[1:]))
    if not getattr(args, "func", None):
        parser.print_help()
        return common.EXIT_USAGE
    return common.run(args)


if __name__ == "__main__":
    sys.exit(main())

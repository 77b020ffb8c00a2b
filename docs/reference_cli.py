"""The command-line reference page, generated from the argument parsers of ``ava-engine`` and ``ava-console``.

Written at every docs build by the MkDocs hook (docs/hooks.py), never committed: each command's section is its
parser's own ``--help`` (``engine.cli.build_parser``, ``console.app.build_parser``), so a new command or option is
documented the moment it exists.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

#: Help is wrapped to this many columns, whatever terminal the build runs in.
WIDTH = 100


def subcommands(parser: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """``(command line, its one-line help, its parser)`` for the parser and every subcommand below it, depth first."""
    yield prefix, parser.description or "", parser
    for action in parser._actions:  # argparse keeps subparsers only here
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        seen: set[int] = set()
        for name, sub in action.choices.items():
            if id(sub) in seen:  # an alias of a command already listed
                continue
            seen.add(id(sub))
            for line, help_text, found in subcommands(sub, f"{prefix} {name}"):
                yield line, help_text or (helps.get(name, "") if found is sub else ""), found


@contextmanager
def _columns(width: int) -> Iterator[None]:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    from console.app import build_parser as console_parser
    from engine.cli import build_parser as engine_parser

    return [("ava-engine", engine_parser()), ("ava-console", console_parser())]


def render_cli_reference() -> str:
    lines = [
        "# Command line",
        "",
        "Every command of `ava-engine` and every option of `ava-console`, generated from their argument parsers when",
        "the docs are built: each section is exactly what `--help` prints. Exit codes everywhere: 0 ok, 1 the",
        "operation failed, 2 bad config or arguments. See [Getting started](../getting-started.md) for examples.",
        "",
    ]
    with _columns(WIDTH):
        for prog, parser in parsers():
            lines += [f"## `{prog}`", ""]
            for line, help_text, sub in subcommands(parser, prog):
                if sub is not parser:
                    lines += [f"### `{line}`", ""]
                if help_text:
                    lines += [help_text, ""]
                lines += ["```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(lines)

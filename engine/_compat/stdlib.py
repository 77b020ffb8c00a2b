"""The Python standard library's private API the engine relies on (``requires-python`` in pyproject.toml).

- ``asyncio.tasks._current_tasks`` (loop → the task it is stepping), on 3.11 only: engine/core/running_task.py reads it
  instead of ``asyncio.current_task()``, whose pid check is a system call on every tool call.
- ``re._parser.parse``: engine/budget/probe_args.py builds candidate strings from a pattern's parsed form.
- ``argparse.ArgumentParser._actions`` and ``argparse._SubParsersAction``: the CLI walks its own subcommands (global
  options on every one, ``mcp``'s sub-subcommands).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Iterator
from typing import Any

from engine._compat._check import private

__all__ = ["SubParsersAction", "re_parse", "stepping_tasks", "subparser_actions"]

SubParsersAction = argparse._SubParsersAction
_re_parser: Any = importlib.import_module("re._parser")
_parse = private(_re_parser, "parse", "python", ("str",))


def stepping_tasks() -> dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None:
    """asyncio's own map of loop → the task it is stepping, on 3.11 (None elsewhere: not relied on there)."""
    if sys.version_info[:2] != (3, 11):
        return None
    stepping: dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] = private(asyncio.tasks, "_current_tasks", "python")
    return stepping


def re_parse(pattern: str) -> Any:
    """``re``'s parsed form of ``pattern`` (a ``SubPattern`` of (opcode, argument) items); raises ``re.error``."""
    return _parse(pattern)


def subparser_actions(parser: argparse.ArgumentParser) -> Iterator[SubParsersAction[Any]]:
    """The ``add_subparsers()`` actions of ``parser``."""
    for action in private(parser, "_actions", "python"):
        if isinstance(action, SubParsersAction):
            yield action

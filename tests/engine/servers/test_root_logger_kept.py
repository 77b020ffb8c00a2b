"""Building an SDK server leaves the host's root logger as it was (``MCPServer()`` calls ``logging.basicConfig``:
in the engine's process a rich handler on stderr would draw over the console). One guard, ``root_logger_kept``,
serves every place that builds one: ``make_server``, the engine's in-process ``load_target`` and the bundle child."""

from __future__ import annotations

import logging

import pytest

from engine.mcp.transports import load_target
from engine.servers.common import root_logger_kept


def _root() -> tuple[list[logging.Handler], int]:
    root = logging.getLogger()
    return list(root.handlers), root.level


def test_what_the_block_does_to_the_root_logger_is_undone_also_when_it_fails() -> None:
    before = _root()
    with pytest.raises(RuntimeError), root_logger_kept():
        logging.getLogger().addHandler(logging.NullHandler())
        logging.getLogger().setLevel(logging.CRITICAL)
        raise RuntimeError("the factory failed")
    assert _root() == before


def test_an_in_process_server_built_by_the_engine_leaves_the_root_logger_alone() -> None:
    before = _root()
    load_target("engine.servers.dice.server:create", ["--log-level", "DEBUG"])
    assert _root() == before

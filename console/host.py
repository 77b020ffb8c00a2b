"""The console's side of the engine: load the config, build the Engine, and find which optional parts exist.

Other layers (the MCP host, the budget report) land independently; ``Features`` says which are present so a
screen can explain plainly what is missing instead of crashing. Only public Engine methods are used.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.app import Engine
from engine.config import Settings, load_settings, resolve_config_path


def resolve_path(cli_path: str | None) -> Path:
    """The config file to use: ``--config``, else the user's copy of the demo config (made on first run)."""
    return resolve_config_path(cli_path)


def load_config(path: str | os.PathLike[str]) -> Settings:
    """Load and validate the config file (``ConfigError`` with file, line and key path on a problem)."""
    return load_settings(path)


@dataclass(frozen=True)
class Features:
    """Which optional engine layers this build has."""

    mcp: bool
    server_actions: bool
    budget_report: bool

    @classmethod
    def detect(cls, engine: Engine) -> Features:
        try:
            has_mcp = getattr(engine, "mcp", None) is not None
        except RuntimeError:  # the property exists but no MCP host is attached
            has_mcp = False
        return cls(
            mcp=has_mcp,
            server_actions=all(
                callable(getattr(engine, n, None))
                for n in ("restart_server", "test_server", "server_status", "set_server_enabled")
            ),
            budget_report=_budget_report() is not None,
        )


def _budget_report(name: str = "leaderboard") -> Callable[..., Any] | None:
    try:
        mod = importlib.import_module("engine.budget.report")
    except ImportError:
        return None
    fn = getattr(mod, name, None)
    return fn if callable(fn) else None


def leaderboard_rows(engine: Engine) -> list[dict[str, Any]]:
    """The budget layer's leaderboard, flattened: one dict per tool with its category and rank."""
    fn = _budget_report("leaderboard")
    if fn is None:
        raise RuntimeError("the budget layer (engine/budget/report.py) is not in this build yet")
    board = fn(engine)
    rows: list[dict[str, Any]] = []
    for category, entries in dict(board).items():
        for entry in entries:
            rows.append({"category": category, **dict(entry)})
    return rows


def server_badges(engine: Engine) -> dict[str, str]:
    """Per MCP server, its tools' badges counted (e.g. "Fast×2 Slow"); empty without the budget layer."""
    try:
        rows = leaderboard_rows(engine)
    except Exception:  # no budget layer or no measurements: no badges
        return {}
    counts: dict[str, dict[str, int]] = {}
    for r in rows:
        server, badge = str(r.get("server") or ""), str(r.get("badge") or "")
        if server and server != "builtin" and badge:
            counts.setdefault(server, {}).setdefault(badge, 0)
            counts[server][badge] += 1
    return {s: " ".join(b if n == 1 else f"{b}×{n}" for b, n in sorted(c.items())) for s, c in counts.items()}


MISSING_MCP = (
    "The MCP host (engine.mcp) is not in this build yet: server health, stderr and actions appear here once "
    "it lands. Server entries in the config can still be added and edited."
)

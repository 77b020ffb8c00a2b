"""Where the console meets the engine beyond single method calls: which config file to use, loading it, and the
budget leaderboard (``Engine.leaderboard``) flattened for the Budget screen and the Servers badge column."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config import resolve_config_path

if TYPE_CHECKING:  # the engine and the config models load after the first frame (``AvaConsole.load_engine``)
    from engine import Engine
    from engine.config import Settings


def resolve_path(cli_path: str | None) -> Path:
    """The config file to use: ``--config``, else the user's copy of the demo config (made on first run)."""
    return resolve_config_path(cli_path)


def load_config(path: str | os.PathLike[str]) -> Settings:
    """Load and validate the config file (``ConfigError`` with file, line and key path on a problem)."""
    from engine.config import load_settings

    return load_settings(path)


def leaderboard_rows(engine: Engine) -> list[dict[str, Any]]:
    """The budget leaderboard as one list: each row a tool with its category and rank in that category."""
    return [row for rows in engine.leaderboard().values() for row in rows]


def server_badges(engine: Engine) -> dict[str, str]:
    """Per MCP server, its tools' badges counted (e.g. "Fast×2 Slow"); servers without tools are absent."""
    counts: dict[str, dict[str, int]] = {}
    for r in leaderboard_rows(engine):
        server, badge = str(r.get("server") or ""), str(r.get("badge") or "")
        if server and server != "builtin" and badge:
            counts.setdefault(server, {}).setdefault(badge, 0)
            counts[server][badge] += 1
    return {s: " ".join(b if n == 1 else f"{b}×{n}" for b, n in sorted(c.items())) for s, c in counts.items()}

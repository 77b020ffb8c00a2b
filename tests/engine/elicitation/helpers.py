"""An engine with the elicitation fixture server in both protocol eras, and contexts for each policy."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from engine.config import load_settings
from engine.config.models import Settings
from tests.engine.mcp.helpers import FIXTURES

SERVER = FIXTURES / "elicit_server.py"
#: Both protocol eras: ``legacy`` negotiates 2025-11-25 (elicitation/create mid-call), ``auto`` 2026-07-28 (MRTR).
ERAS = {"old": "legacy", "new": "auto"}


def write_config(tmp_path: Path, extra_contexts: dict[str, Any] | None = None, **provider: Any) -> Path:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"greeting": "Hello.", "intents": [], "fallback": "what?"}))
    servers = {
        era: {"command": [sys.executable, str(SERVER)], "mode": mode, "connect_timeout_ms": 60_000}
        for era, mode in ERAS.items()
    }
    tools = ["mcp_old_*", "mcp_new_*"]
    contexts: dict[str, Any] = {
        "quiet": {"provider": "s", "tools": tools},
        "desk": {"provider": "s", "tools": tools, "elicitation": {"ask": "operator", "timeout_ms": 20_000}},
        "hasty": {"provider": "s", "tools": tools, "elicitation": {"ask": "operator", "timeout_ms": 300}},
        **(extra_contexts or {}),
    }
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "engine": {"http": {"enabled": False}, "tool_timeout_ms": 1000},
                "providers": {"s": {"type": "scripted", "script": "s.yaml", **provider}},
                "mcp": {"servers": servers},
                "contexts": contexts,
            }
        )
    )
    return cfg


def settings_at(cfg: Path) -> Settings:
    return load_settings(cfg)

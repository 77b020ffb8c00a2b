"""Exposed names that collide across servers are settled by a rule, not by which server came up first.

``my`` + ``files_read`` and ``my_files`` + ``read`` are both ``mcp_my_files_read``. The claimant that sorts first
(server ``my``) keeps the plain name and ``my_files``'s tool gets the stable hash suffix, whichever starts first;
when the winner comes up later, the loser is renamed through the registry with a ``tools.changed`` event. Two
``expose_as`` claiming one name are a config error with file, line and both key paths, never a traceback.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.config.models import McpConfig, Settings
from engine.events import ToolsChanged
from engine.mcp.naming import NameBook, hashed_name, resolve
from tests.engine.mcp.helpers import ROOT, settings

ENGINE_BIN = str(ROOT / ".venv" / "bin" / "ava-engine")
PLAIN = "mcp_my_files_read"
HASHED = hashed_name("my_files", "read")


def _server(target: str, start: str) -> dict[str, Any]:
    return {"transport": "inprocess", "target": f"tests.fixtures.mcp_servers.inproc:{target}", "start": start}


def _owner(engine: Any, name: str) -> tuple[str, str] | None:
    entry = engine.registry.get(name)
    return None if entry is None else (entry.tool.definition.server, entry.tool.definition.origin_name)


@pytest.mark.parametrize("first", ["my", "my_files"])
async def test_cross_server_collision_does_not_depend_on_start_order(make_engine: Any, first: str) -> None:
    later = "my_files" if first == "my" else "my"
    s: Settings = settings(
        {
            "my": _server("files_read", "eager" if first == "my" else "lazy"),
            "my_files": _server("read", "eager" if first == "my_files" else "lazy"),
        }
    )
    engine = await make_engine(s)
    with engine.bus.subscribe(types={"tools.changed"}) as sub:
        assert await engine.mcp.ensure_started(later)
        events: list[ToolsChanged] = [e for e in sub.drain() if isinstance(e, ToolsChanged)]
    assert _owner(engine, PLAIN) == ("my", "files_read")
    assert _owner(engine, HASHED) == ("my_files", "read")
    warnings = engine.mcp.supervisors["my_files"].warnings
    assert any(PLAIN in w and "server my" in w for w in warnings), warnings
    if first == "my_files":  # the winner came later: the loser was renamed, and views were told
        assert any(PLAIN in e.removed and HASHED in e.added for e in events), events


def test_resolution_is_a_function_of_the_claims_only() -> None:
    claims: dict[str, tuple[list[str], dict[str, str]]] = {
        "my_files": (["read", "write"], {}),
        "my": (["files_read"], {}),
        "z": (["x"], {"x": "mcp_my_files_write"}),  # an expose_as wins over a default name
    }
    forward = resolve(claims)
    backward = resolve(dict(reversed(list(claims.items()))))
    assert forward == backward
    assert forward["my"]["files_read"] == PLAIN and forward["my_files"]["read"] == HASHED
    assert forward["z"]["x"] == "mcp_my_files_write"
    assert forward["my_files"]["write"] == hashed_name("my_files", "write")


def test_name_book_renames_the_loser_when_the_winner_appears_and_back_when_it_leaves() -> None:
    book, calls = NameBook(), []
    cfg = McpConfig.model_validate(
        {
            "servers": {
                "my": {"transport": "inprocess", "target": "m:x"},
                "my_files": {"transport": "inprocess", "target": "m:y"},
            }
        }
    )
    book.configure("my_files", cfg.servers["my_files"], lambda: calls.append("my_files"))
    book.configure("my", cfg.servers["my"], lambda: calls.append("my"))
    names, changed = book.claim("my_files", ["read"])
    assert names == {"read": PLAIN} and changed == set()
    names, changed = book.claim("my", ["files_read"])
    assert names == {"files_read": PLAIN} and changed == {"my_files"} and calls == ["my_files"]
    assert book.names("my_files") == {"read": HASHED}
    book.forget("my")
    assert book.names("my_files") == {"read": PLAIN} and calls == ["my_files", "my_files"]


DUPLICATE = """mcp:
  servers:
    one:
      command: [python, -c, pass]
      tools:
        - name: a
          expose_as: roll
    two:
      command: [python, -c, pass]
      tools:
        - name: b
          expose_as: roll
"""


@pytest.mark.parametrize("command", [["check"], ["mcp", "list"], ["serve"]])
def test_duplicate_expose_as_is_a_config_error_not_a_traceback(tmp_path: Path, command: list[str]) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(DUPLICATE)
    proc = subprocess.run(
        [ENGINE_BIN, "--config", str(cfg), *command], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (
        f"{cfg}:12: mcp.servers.two.tools[0].expose_as: 'roll' is already claimed by mcp.servers.one.tools[0].expose_as"
    ) in proc.stderr

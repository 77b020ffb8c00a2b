"""``serve``'s reload (SIGHUP, a saved file) publishes ``config.reloaded`` exactly once: ``Engine.reload`` owns the
event, and serve adds one only for a file that does not load (the running config stays)."""

from __future__ import annotations

from pathlib import Path

from engine.app import Engine
from engine.cli.serve import reload_from
from engine.config import load_settings
from engine.events import ConfigReloaded

CONFIG = """engine:
  http: {{enabled: false}}
mcp:
  servers:
    {sid}:
      transport: inprocess
      target: engine.servers.dice.server:create
      enabled: false
"""


async def test_a_reload_publishes_config_reloaded_once(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG.format(sid="a"), encoding="utf-8")
    engine = Engine(load_settings(path), config_path=path)
    await engine.start()
    try:
        sub = engine.bus.subscribe(types={ConfigReloaded.type})
        path.write_text(CONFIG.format(sid="b"), encoding="utf-8")
        await reload_from(engine, path)
        events = sub.drain()
        assert len(events) == 1, events
        assert isinstance(events[0], ConfigReloaded)
        assert (events[0].added, events[0].removed, events[0].error) == (("b",), ("a",), None)

        path.write_text("mcp: [not, a, mapping\n", encoding="utf-8")
        await reload_from(engine, path)
        events = sub.drain()
        assert len(events) == 1 and isinstance(events[0], ConfigReloaded) and events[0].error, events
        assert set(engine.settings.mcp.servers) == {"b"}  # the running config stays
    finally:
        await engine.stop()

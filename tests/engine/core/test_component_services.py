"""The components the wiring builds keep the engine's one ``Services`` record (settings getter, bus, metrics,
spawn) through the ``Component`` base, instead of each taking and storing the four one by one."""

from __future__ import annotations

from engine.app import Engine
from engine.config.models import Settings
from engine.services import Component

#: The components that take the engine's services (telephony and telemetry are wired apart, with what they use).
SHARING = {"email", "store", "control", "budget", "recorder", "mcp_endpoint", "remote_http"}


def test_components_keep_the_engine_services_and_see_a_reload() -> None:
    engine = Engine(Settings.model_validate({"engine": {"http": {"enabled": True, "port": 0}}}), serve_http=True)
    by_name = {c.name: c for c in engine.components}
    assert SHARING <= set(by_name)
    engine.settings = Settings.model_validate({"engine": {"id": "swapped"}})  # what a reload does
    for name in sorted(SHARING):
        part = by_name[name]
        assert isinstance(part, Component), name
        assert part.bus is engine.bus and part.metrics is engine.metrics, name
        assert part._settings() is engine.settings and part._spawn == engine.spawn, name

"""A reload restarts a part that reads its settings only at start exactly when its section changed
(``engine.services.restart_if_changed``), and leaves it running through any other change."""

from __future__ import annotations

from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.services import restart_if_changed

BASE: dict[str, Any] = {"engine": {"id": "one"}}

#: component → (a change in its section, a change outside it).
SECTIONS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "recorder": ({"recording": {"queue_size": 700}}, {"engine": {"id": "two"}}),
    "store": ({"engine": {"store_buffer": 700}}, {"engine": {"environment": "staging"}}),
    "control": ({"engine": {"id": "two"}}, {"engine": {"environment": "staging"}}),
    "shared_book": ({"engine": {"environment": "staging"}}, {"engine": {"id": "two"}}),
    "telephony": ({"asterisk": {"rtp_port_start": 18100}}, {"recording": {"queue_size": 700}}),
}


class Part:
    """Records its stops and starts, in order."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def start(self) -> None:
        self.seen.append("start")

    async def stop(self) -> None:
        self.seen.append("stop")


def _settings(*changes: dict[str, Any]) -> Settings:
    merged: dict[str, Any] = {}
    for change in (BASE, *changes):
        for key, value in change.items():
            merged[key] = {**merged.get(key, {}), **value}
    return Settings.model_validate(merged)


async def test_restart_if_changed_stops_then_starts_only_on_a_change_in_the_section() -> None:
    part = Part()
    old, new = _settings(), _settings({"engine": {"id": "two"}})
    assert not await restart_if_changed(part, old, new, lambda s: s.recording)
    assert part.seen == []
    assert await restart_if_changed(part, old, new, lambda s: s.engine.id)
    assert part.seen == ["stop", "start"]


@pytest.mark.parametrize("name", sorted(SECTIONS))
async def test_a_component_restarts_on_a_change_in_its_section_only(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ours, other = SECTIONS[name]
    old = _settings()
    (component,) = [c for c in Engine(old).components if c.name == name]
    part = Part()
    monkeypatch.setattr(component, "start", part.start)
    monkeypatch.setattr(component, "stop", part.stop)
    await component.reload(old, _settings(other))
    assert part.seen == []
    await component.reload(old, _settings(ours))
    assert part.seen == ["stop", "start"]

"""The list of engine components, in start order. Each issue's layer adds itself here."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.app import Engine, EngineComponent


def default_components(engine: Engine) -> list[EngineComponent]:
    return []

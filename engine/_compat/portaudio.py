"""sounddevice's private API the engine relies on (pinned in pyproject.toml).

- ``sounddevice._terminate()`` / ``sounddevice._initialize()``: PortAudio lists devices only as they were when it
  was initialised; the softphone's device list re-initialises it to see a headset plugged in since start-up.
"""

from __future__ import annotations

from types import ModuleType

from engine._compat._check import private

__all__ = ["reinitialize"]


def reinitialize(sd: ModuleType) -> None:
    """Terminate and re-initialise PortAudio through ``sd`` (the imported sounddevice module)."""
    terminate = private(sd, "_terminate", "sounddevice", ())
    initialize = private(sd, "_initialize", "sounddevice", ())
    terminate()
    initialize()

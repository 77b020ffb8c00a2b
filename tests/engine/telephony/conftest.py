"""Makes the ARI emulator (tests/fixtures/ari) and the loopback provider fakes importable by the telephony tests."""

from __future__ import annotations

import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
for folder in (FIXTURES / "ari", FIXTURES / "fake_providers"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

"""Makes the loopback fake provider servers (tests/fixtures/fake_providers) importable by these tests."""

from __future__ import annotations

import sys
from pathlib import Path

FAKES = Path(__file__).resolve().parents[2] / "fixtures" / "fake_providers"
if str(FAKES) not in sys.path:
    sys.path.insert(0, str(FAKES))

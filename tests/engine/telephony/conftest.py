"""Makes the ARI emulator (tests/fixtures/ari) importable by the telephony tests."""

from __future__ import annotations

import sys
from pathlib import Path

ARI = Path(__file__).resolve().parents[2] / "fixtures" / "ari"
if str(ARI) not in sys.path:
    sys.path.insert(0, str(ARI))

"""``python -m engine.cli`` runs ava-engine."""

import sys

from engine.cli import main

sys.exit(main())

"""The latency budget layer: latency book, calibration, tiers, selector, enforcement and result cache.

``BudgetLayer`` is the engine component; ``calibrate_server`` probes a server's tools; ``tools_report`` is what
``ava-engine tools`` prints. See README_SECTION.md for the rules.
"""

from engine.budget.calibration import CalibrationError, calibrate_server
from engine.budget.layer import BudgetLayer
from engine.budget.metadata import resolve_latency, resolve_probe_args

__all__ = ["BudgetLayer", "CalibrationError", "calibrate_server", "resolve_latency", "resolve_probe_args"]

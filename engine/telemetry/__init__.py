"""OpenTelemetry traces of calls (issue 36): a span per call, turn, stage, tool call, MCP request and transfer.

Why a package that reads the bus: the engine already publishes where each turn's time went (``turn.timings``), every
tool call (``tool.completed``), usage, transfers and the call's start and end. The ``Telemetry`` component turns
those events into spans with explicit start and end times, so tracing costs the call path nothing (and nothing at
all when it is off: then it subscribes to nothing and the SDK is never imported). Only counts, names, classes and
timings become attributes — never what the caller said, a tool's arguments or its result.
"""

from engine.telemetry.component import Telemetry

__all__ = ["Telemetry"]

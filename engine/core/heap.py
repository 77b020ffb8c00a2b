"""Keep the garbage collector's full passes short once a process has started.

Why: after start-up (the MCP SDK, pydantic models, Textual, the config) a process holds ~120,000 long-lived objects
that every full (generation 2) collection walks again, and on a small box a pass took 250–670 ms: a console key that
landed in one waited that long, and a voice call's audio stalls the same way. ``gc.freeze()`` moves what exists now
to the permanent generation, so later passes walk only what the running engine made since. Called once, when the
engine (and the console) are up; what it freezes lives for the whole process anyway.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> int:
    """Collect once, then freeze what survived; returns how many objects are frozen."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(700, 10, 100)
    return gc.get_freeze_count()

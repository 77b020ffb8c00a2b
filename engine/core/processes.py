"""Whether a process runs on this host, by its pid: the one check every "is its owner still alive?" question asks.

Why it exists: rows and resources carry the pid of the engine process that made them (the outbox's claimed rows, the
ARI channels and bridges it created), and a later process takes over only what belonged to a process that is gone.
"""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (one we may not signal runs too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

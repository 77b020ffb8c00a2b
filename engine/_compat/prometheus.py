"""prometheus-client's private API the engine relies on (pinned in pyproject.toml).

- A histogram child's ``_sum`` (a value with ``inc``) and ``_buckets`` (one value per bound, not cumulative: what
  ``observe()`` adds to): the tool path tallies latencies in plain numbers and the registry's collection moves
  them in at once, so a tool call does not pay for an ``observe()`` under the client's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine._compat._check import private

__all__ = ["add_to_histogram"]


def add_to_histogram(child: Any, total: float, buckets: Sequence[int]) -> None:
    """Add ``total`` to a histogram child's sum and ``buckets[i]`` observations to its bucket ``i``."""
    private(child, "_sum", "prometheus-client").inc(total)
    stored = private(child, "_buckets", "prometheus-client")
    for i, n in enumerate(buckets):
        if n:
            stored[i].inc(n)

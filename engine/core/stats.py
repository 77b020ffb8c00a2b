"""The one percentile definition: every screen, endpoint, CLI output and benchmark that shows a p50/p99 uses it.

Why it exists: the Servers screen, the Budget screen and the benchmarks each had their own way to take a
percentile (nearest rank with rounding, numpy-linear, index truncation), so the same samples showed different
"p99" values. This module has no dependencies so that anything, at any layer, can import it.

Definition (tested against numpy): numpy's default ``method="linear"`` (Hyndman & Fan type 7). For the sorted
samples x[0..n-1] and q in [0, 1]: h = (n - 1)·q, and the result is x[⌊h⌋] + (h - ⌊h⌋)·(x[⌊h⌋+1] - x[⌊h⌋]).
The median is q = 0.5 (for an even count, the mean of the two middle samples, like ``statistics.median``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["percentile", "percentiles"]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) of already sorted values, numpy's default linear interpolation."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of no samples")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be between 0 and 1, got {q}")
    h = (n - 1) * q
    lo = int(h)  # h >= 0: the floor
    if lo >= n - 1:
        return float(sorted_values[-1])
    a, b = sorted_values[lo], sorted_values[lo + 1]
    return float(a + (h - lo) * (b - a))


def percentiles(values: Iterable[float], *qs: float) -> tuple[float, ...]:
    """Several q-quantiles of unsorted ``values`` (sorted once), in the order of ``qs``."""
    ordered = sorted(values)
    return tuple(percentile(ordered, q) for q in qs)

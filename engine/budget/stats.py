"""The latency book: a rolling window of recent invocations per tool, and the percentiles taken from it.

Each tool is tracked per environment — the key is ``(environment, server, tool)`` — so the same tool reached over
stdio on this host and over HTTP on another host keeps two separate books. A window keeps the last ``window``
invocations (duration and outcome); older ones fall out, so errors age out with the window. Health additionally
looks only at samples younger than a horizon (see ``recent``), so a tool that is hidden and gets no traffic still
recovers.

Percentile definition (tested against numpy): numpy's default ``method="linear"`` (Hyndman & Fan type 7). For
the sorted samples x[0..n-1] and q in [0, 1]: h = (n - 1)·q, and the result is x[⌊h⌋] + (h - ⌊h⌋)·(x[⌊h⌋+1] - x[⌊h⌋]).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

BookKey = tuple[str, str, str]
"""(environment, server, tool)."""

#: Outcomes that count as failures of the tool (rejections never reach the tool, so they are never recorded).
FAILED = frozenset({"error", "timeout"})


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) of already sorted values, numpy's default linear interpolation."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of no samples")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be between 0 and 1, got {q}")
    h = (n - 1) * q
    lo = math.floor(h)
    if lo >= n - 1:
        return float(sorted_values[-1])
    a, b = sorted_values[lo], sorted_values[lo + 1]
    return float(a + (h - lo) * (b - a))


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    duration_ms: float
    status: str
    is_probe: bool = False

    @property
    def failed(self) -> bool:
        return self.status in FAILED


@dataclass(frozen=True, slots=True)
class WindowStats:
    """What a window says: sample count, p50/p99 in ms (None without samples), failures and error rate."""

    count: int
    p50_ms: float | None
    p99_ms: float | None
    errors: int
    probes: int = 0

    @property
    def error_rate(self) -> float:
        return self.errors / self.count if self.count else 0.0

    @classmethod
    def of(cls, samples: Sequence[Sample]) -> WindowStats:
        if not samples:
            return cls(0, None, None, 0, 0)
        durations = sorted(s.duration_ms for s in samples)
        return cls(
            len(samples),
            percentile(durations, 0.5),
            percentile(durations, 0.99),
            sum(1 for s in samples if s.failed),
            sum(1 for s in samples if s.is_probe),
        )


class LatencyWindow:
    """The last ``size`` invocations of one tool in one environment."""

    __slots__ = ("_samples", "_stats")

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise ValueError(f"window size must be positive, got {size}")
        self._samples: deque[Sample] = deque(maxlen=size)
        self._stats: WindowStats | None = None

    def add(self, sample: Sample) -> None:
        self._samples.append(sample)
        self._stats = None

    def stats(self) -> WindowStats:
        if self._stats is None:
            self._stats = WindowStats.of(list(self._samples))
        return self._stats

    def recent(self, since: float) -> WindowStats:
        """Stats over the window's samples taken at or after ``since`` (the health horizon)."""
        return WindowStats.of([s for s in self._samples if s.at >= since])

    def newest_at(self) -> float | None:
        return self._samples[-1].at if self._samples else None

    def oldest_failure_at(self, since: float) -> float | None:
        """When the oldest failure still inside the horizon was recorded (it ages out ``horizon`` after that)."""
        return next((s.at for s in self._samples if s.at >= since and s.failed), None)

    def resize(self, size: int) -> None:
        self._samples = deque(self._samples, maxlen=size)
        self._stats = None

    def __len__(self) -> int:
        return len(self._samples)


class LatencyBook:
    """Windows for every (environment, server, tool) the engine has run."""

    def __init__(self, window: int, clock: Callable[[], float]) -> None:
        self.window = window
        self.clock = clock
        self._windows: dict[BookKey, LatencyWindow] = {}

    def record(self, key: BookKey, duration_ms: float, status: str, *, is_probe: bool = False) -> LatencyWindow:
        if duration_ms < 0 or math.isnan(duration_ms):
            raise ValueError(f"duration for {key} must be a non-negative number, got {duration_ms}")
        w = self._windows.get(key)
        if w is None:
            w = self._windows[key] = LatencyWindow(self.window)
        w.add(Sample(self.clock(), duration_ms, status, is_probe))
        return w

    def get(self, key: BookKey) -> LatencyWindow | None:
        return self._windows.get(key)

    def stats(self, key: BookKey) -> WindowStats:
        w = self._windows.get(key)
        return w.stats() if w is not None else WindowStats(0, None, None, 0)

    def reset(self, key: BookKey) -> bool:
        return self._windows.pop(key, None) is not None

    def set_window(self, size: int) -> None:
        if size != self.window:
            self.window = size
            for w in self._windows.values():
                w.resize(size)

    def keys(self) -> list[BookKey]:
        return sorted(self._windows)

"""The latency book: a rolling window of recent invocations per tool, and the percentiles taken from it.

Each tool is tracked per environment — the key is ``(environment, server, tool)`` — so the same tool reached over
stdio on this host and over HTTP on another host keeps two separate books. A window keeps the last ``window``
invocations (duration and outcome); older ones fall out, so errors age out with the window. Health additionally
looks only at samples younger than a horizon (see ``recent``), so a tool that is hidden and gets no traffic still
recovers.

Percentiles are ``engine.core.stats.percentile`` (numpy's default linear interpolation), the one definition every
screen, endpoint and benchmark uses.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice
from typing import NamedTuple

from engine.core.stats import percentile

BookKey = tuple[str, str, str]
"""(environment, server, tool)."""

#: Outcomes that count as failures of the tool (rejections never reach the tool, so they are never recorded).
FAILED = frozenset({"error", "timeout"})


class Sample(NamedTuple):
    """One invocation. A named tuple (like ``WindowStats``): one is built for every tool call, and a tuple is
    built in a third of the time a frozen dataclass takes."""

    at: float
    duration_ms: float
    status: str
    is_probe: bool = False

    @property
    def failed(self) -> bool:
        return self.status in FAILED


class WindowStats(NamedTuple):
    """What a window says: sample count, p50/p99 in ms (None without samples), failures and error rate.

    A named tuple: the budget layer builds one after every call; ``count`` is the field (tuple's ``count``
    method is shadowed, and nothing here needs it)."""

    count: int  # type: ignore[assignment]
    p50_ms: float | None
    p99_ms: float | None
    errors: int
    probes: int = 0

    @property
    def error_rate(self) -> float:
        return self.errors / self.count if self.count else 0.0

    @staticmethod
    def of(samples: Sequence[Sample]) -> WindowStats:
        if not samples:
            return WindowStats(0, None, None, 0, 0)
        durations = sorted(s.duration_ms for s in samples)
        return WindowStats(
            len(samples),
            percentile(durations, 0.5),
            percentile(durations, 0.99),
            sum(1 for s in samples if s.failed),
            sum(1 for s in samples if s.is_probe),
        )


class Bands(NamedTuple):
    """Where a window's percentiles may move without changing what they decide (``LatencyWindow.within``): its p99
    in ``(p99_above, p99_at_most]``, its p50 in ``[p50_from, p50_below)``, once it holds ``min_samples`` samples."""

    min_samples: int
    p99_above: float
    p99_at_most: float
    p50_from: float
    p50_below: float


#: A linear-interpolated percentile of non-negative samples exceeds the upper of the two samples it lies between by
#: at most five units in the last place (three roundings); ``within`` allows for far more than that: a sample that
#: close to a band's upper bound takes the percentile itself.
_SLACK = 1 + 2**-40

#: ``tuple.__new__``: builds a ``Sample`` from its fields without the named tuple's Python-level ``__new__``.
_new_sample = tuple.__new__


def _at(sample: Sample) -> float:
    return sample.at


class LatencyWindow:
    """The last ``size`` invocations of one tool in one environment.

    Kept incrementally, because the budget layer reads it after every tool call: the durations also live in a
    sorted list (insert and evict by bisection) and the failure and probe counts are running totals, so
    ``stats()`` sorts nothing. ``recent()`` reuses ``stats()`` when no sample is older than the horizon, which
    is the steady state of a tool in use.
    """

    __slots__ = ("_inversions", "_probes", "_recent", "_samples", "_sorted", "_stats", "errors")

    def __init__(self, size: int) -> None:
        self._samples: deque[Sample]
        self._sorted: list[float]
        self.errors: int
        self._probes: int
        self._stats: WindowStats | None
        # Adjacent pairs recorded out of time order (an injected clock that went back); while there are none,
        # the samples inside a horizon are exactly a suffix of the window.
        self._inversions: int
        self._recent: tuple[int, WindowStats] | None  # (samples cut off the front, their stats)
        self._clear(size)

    def _clear(self, size: int) -> None:
        if size <= 0:
            raise ValueError(f"window size must be positive, got {size}")
        self._samples = deque(maxlen=size)
        self._sorted = []
        self.errors = self._probes = self._inversions = 0
        self._stats = self._recent = None

    def add(self, sample: Sample) -> None:
        samples = self._samples
        ordered = self._sorted
        # Fields by index: a named tuple's field name is a Python-level property (.at, .duration_ms, .status ...).
        if len(samples) == samples.maxlen:  # the oldest leaves first
            old = samples.popleft()
            if samples and samples[0][0] < old[0]:
                self._inversions -= 1
            del ordered[bisect_left(ordered, old[1])]
            if old[2] in FAILED:
                self.errors -= 1
            if old[3]:
                self._probes -= 1
        if samples and sample[0] < samples[-1][0]:
            self._inversions += 1
        samples.append(sample)
        insort(ordered, sample[1])
        if sample[2] in FAILED:
            self.errors += 1
        if sample[3]:
            self._probes += 1
        self._stats = None
        self._recent = None

    def stats(self) -> WindowStats:
        if self._stats is None:
            ordered = self._sorted
            if not ordered:
                self._stats = WindowStats(0, None, None, 0, 0)
            else:
                self._stats = WindowStats(
                    len(ordered), percentile(ordered, 0.5), percentile(ordered, 0.99), self.errors, self._probes
                )
        return self._stats

    def measured_p50_p99(self, min_samples: int) -> tuple[float | None, float | None]:
        """The window's p50 and p99 (``stats()``'s) once it holds ``min_samples`` samples, else (None, None); without
        building its stats (the budget layer asks after every call)."""
        ordered = self._sorted
        if not ordered or len(ordered) < min_samples:
            return None, None
        return percentile(ordered, 0.5), percentile(ordered, 0.99)

    def within(self, bands: Bands) -> bool:
        """Whether the window holds at least ``bands.min_samples`` samples, its p99 in ``(p99_above, p99_at_most]`` and
        its p50 in ``[p50_from, p50_below)`` — ``stats()``'s percentiles, decided without taking them when the two
        samples each lies between are inside the band (the budget layer asks after every call; samples across
        a bound, or within rounding of an upper one, take the exact percentile)."""
        ordered = self._sorted
        n = len(ordered)
        if n < bands[0] or not n:
            return False
        last = n - 1
        # A linear-interpolated percentile lies between the samples at floor(h) and floor(h) + 1 (engine.core.stats).
        i = int(last * 0.99)
        below, above = ordered[i], ordered[i + 1 if i < last else i]
        if not (bands[1] < below and above * _SLACK <= bands[2]):
            p99 = percentile(ordered, 0.99)
            if not bands[1] < p99 <= bands[2]:
                return False
        i = last >> 1
        below, above = ordered[i], ordered[i + 1 if last & 1 else i]
        if not (bands[3] <= below and above * _SLACK < bands[4]):
            p50 = percentile(ordered, 0.5)
            if not bands[3] <= p50 < bands[4]:
                return False
        return True

    def settled_below(self, ms: float, min_samples: int) -> bool:
        """Whether the window holds at least ``min_samples`` samples and none slower than ``ms`` (so its measured p50
        is at most ``ms``), without building its stats."""
        ordered = self._sorted
        return len(ordered) >= min_samples and bool(ordered) and ordered[-1] <= ms

    def recent(self, since: float) -> WindowStats:
        """Stats over the window's samples taken at or after ``since`` (the health horizon)."""
        samples = self._samples
        if self._inversions:
            return WindowStats.of([s for s in samples if s.at >= since])
        if not samples or samples[0].at >= since:
            return self.stats()
        cut = bisect_left(samples, since, key=_at)
        if self._recent is None or self._recent[0] != cut:
            self._recent = (cut, WindowStats.of(list(islice(samples, cut, None))))
        return self._recent[1]

    def samples(self) -> list[Sample]:
        """The window's samples, oldest first."""
        return list(self._samples)

    def newest_at(self) -> float | None:
        return self._samples[-1].at if self._samples else None

    def oldest_failure_at(self, since: float) -> float | None:
        """When the oldest failure still inside the horizon was recorded (it ages out ``horizon`` after that)."""
        return next((s.at for s in self._samples if s.at >= since and s.failed), None)

    def resize(self, size: int) -> None:
        kept = list(self._samples)[-size:] if size > 0 else []
        self._clear(size)
        for s in kept:
            self.add(s)

    def __len__(self) -> int:
        return len(self._samples)


class LatencyBook:
    """Windows for every (environment, server, tool) the engine has run."""

    def __init__(self, window: int, clock: Callable[[], float]) -> None:
        self.window = window
        self.clock = clock
        self._windows: dict[BookKey, LatencyWindow] = {}
        #: Told of every sample recorded here (the shared latency book's outbox), when set.
        self.on_record: Callable[[BookKey, Sample], None] | None = None

    def record(self, key: BookKey, duration_ms: float, status: str, *, is_probe: bool = False) -> LatencyWindow:
        if not duration_ms >= 0:  # negative, or NaN (which compares false with everything)
            raise ValueError(f"duration for {key} must be a non-negative number, got {duration_ms}")
        w = self._windows.get(key)
        if w is None:
            w = self._windows[key] = LatencyWindow(self.window)
        sample = _new_sample(Sample, (self.clock(), duration_ms, status, is_probe))  # Sample(...) without its frame
        w.add(sample)
        if self.on_record is not None:
            self.on_record(key, sample)
        return w

    def load(self, key: BookKey, samples: Sequence[Sample]) -> LatencyWindow:
        """Merge samples measured elsewhere (other engines of the environment) into ``key``'s window, in time
        order, keeping the newest ``window``; ``on_record`` is not told (they are not this engine's news)."""
        w = self._windows.get(key)
        merged = sorted([*(w.samples() if w is not None else ()), *samples], key=_at)[-self.window :]
        fresh = LatencyWindow(self.window)
        for s in merged:
            fresh.add(s)
        self._windows[key] = fresh
        return fresh

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

"""The latency book: percentiles against numpy (property-based), the rolling window, the health horizon."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.budget.stats import Bands, LatencyBook, LatencyWindow, Sample, WindowStats, percentile
from tests.engine.budget.helpers import FakeClock

durations = st.lists(
    st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=200
)


@settings(max_examples=300, deadline=None)
@given(values=durations, q=st.floats(min_value=0, max_value=1))
def test_percentile_matches_numpy_default_linear(values: list[float], q: float) -> None:
    ours = percentile(sorted(values), q)
    theirs = float(np.quantile(np.array(values), q))  # numpy's default method is "linear"
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(values=durations)
def test_window_p50_p99_match_numpy(values: list[float]) -> None:
    stats = WindowStats.of([Sample(0.0, v, "success") for v in values])
    assert stats.p50_ms == pytest.approx(float(np.percentile(values, 50)), rel=1e-9, abs=1e-6)
    assert stats.p99_ms == pytest.approx(float(np.percentile(values, 99)), rel=1e-9, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(values=durations, window=st.integers(min_value=1, max_value=50), min_samples=st.integers(1, 60))
def test_the_measured_percentiles_are_the_window_stats_own(values: list[float], window: int, min_samples: int) -> None:
    """The budget layer's per-call shortcut gives exactly ``stats()``'s numbers, or none before ``min_samples``."""
    w = LatencyWindow(window)
    for i, v in enumerate(values):
        w.add(Sample(float(i), v, "success"))
        stats = w.stats()
        expected = (stats.p50_ms, stats.p99_ms) if stats.count >= min_samples else (None, None)
        assert w.measured_p50_p99(min_samples) == expected


# Few distinct values, so samples often sit exactly on a band's bound; bounds are drawn from the same values.
_grid = st.sampled_from([0.0, 1.0, 49.999999, 50.0, 50.000001, 120.0, 200.0, 499.0, 500.0, 1e-300, 3000.0])
_bound = st.one_of(_grid, st.floats(min_value=0, max_value=4000), st.just(float("-inf")), st.just(float("inf")))


@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(st.one_of(_grid, st.floats(min_value=0, max_value=4000)), min_size=1, max_size=120),
    window=st.integers(min_value=1, max_value=100),
    min_samples=st.integers(1, 20),
    p99=st.tuples(_bound, _bound),
    p50=st.tuples(_bound, _bound),
)
def test_within_says_exactly_whether_the_window_percentiles_lie_in_the_bands(
    values: list[float], window: int, min_samples: int, p99: tuple[float, float], p50: tuple[float, float]
) -> None:
    """The budget layer's per-call class check decides from the samples around each percentile; whatever it
    decides must be what the window's own percentiles say, on every bound and every rounding."""
    bands = Bands(min_samples, min(p99), max(p99), min(p50), max(p50))
    w = LatencyWindow(window)
    for i, v in enumerate(values):
        w.add(Sample(float(i), v, "success"))
        stats = w.stats()
        expected = (
            stats.count >= min_samples
            and stats.p99_ms is not None
            and stats.p50_ms is not None
            and bands.p99_above < stats.p99_ms <= bands.p99_at_most
            and bands.p50_from <= stats.p50_ms < bands.p50_below
        )
        assert w.within(bands) == expected


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([10.0], 0.99, 10.0),
        ([1.0, 2.0], 0.5, 1.5),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
        ([0.0, 100.0], 0.99, 99.0),
        ([5.0, 6.0, 7.0], 0.0, 5.0),
        ([5.0, 6.0, 7.0], 1.0, 7.0),
    ],
)
def test_percentile_worked_examples(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        percentile([1.0], 1.5)


def test_window_keeps_the_last_n_and_errors_age_out() -> None:
    w = LatencyWindow(10)
    for i in range(10):
        w.add(Sample(float(i), 5.0, "error"))
    assert w.stats().error_rate == 1.0
    for i in range(9):
        w.add(Sample(10.0 + i, 5.0, "success"))
    assert (w.stats().count, w.stats().errors) == (10, 1)
    w.add(Sample(20.0, 5.0, "success"))
    assert w.stats().errors == 0 and len(w) == 10


def test_timeouts_count_as_failures_but_probe_errors_do_not() -> None:
    stats = WindowStats.of([Sample(0, 1, "timeout"), Sample(0, 1, "probe_error"), Sample(0, 1, "success", True)])
    assert (stats.errors, stats.probes) == (1, 1)


def test_recent_only_counts_samples_inside_the_horizon() -> None:
    w = LatencyWindow(100)
    w.add(Sample(0.0, 1.0, "error"))
    w.add(Sample(100.0, 1.0, "success"))
    assert w.recent(50.0).count == 1 and w.recent(50.0).errors == 0
    assert w.oldest_failure_at(0.0) == 0.0 and w.oldest_failure_at(1.0) is None


def test_book_tracks_environments_apart_and_rejects_bad_durations() -> None:
    clock = FakeClock()
    book = LatencyBook(5, clock)
    book.record(("local", "wx", "forecast"), 10.0, "success")
    book.record(("http://wx.example:8080", "wx", "forecast"), 900.0, "success")
    assert book.stats(("local", "wx", "forecast")).p50_ms == 10.0
    assert book.stats(("http://wx.example:8080", "wx", "forecast")).p50_ms == 900.0
    with pytest.raises(ValueError, match="non-negative"):
        book.record(("local", "wx", "forecast"), -1.0, "success")
    book.set_window(2)
    for _ in range(3):
        book.record(("local", "wx", "forecast"), 1.0, "success")
    assert book.stats(("local", "wx", "forecast")).count == 2
    with pytest.raises(ValueError, match="positive"):
        LatencyWindow(0)


samples_st = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=100),  # at (sometimes out of order: an injected clock may go back)
        st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False),
        st.sampled_from(["success", "error", "timeout", "probe_error"]),
        st.booleans(),
    ),
    max_size=120,
)


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=30),
    items=samples_st,
    monotonic=st.booleans(),
    since=st.floats(min_value=-1, max_value=101),
    resize_to=st.integers(min_value=1, max_value=30),
)
def test_incremental_window_equals_recomputing_from_scratch(
    size: int, items: list[tuple[float, float, str, bool]], monotonic: bool, since: float, resize_to: int
) -> None:
    if monotonic:
        items = sorted(items)
    w = LatencyWindow(size)
    for i, (at, duration, status, probe) in enumerate(items):
        w.add(Sample(at, duration, status, probe))
        kept = items[max(0, i + 1 - size) : i + 1]
        expected = [Sample(*t) for t in kept]
        assert w.stats() == WindowStats.of(expected)
        assert w.recent(since) == WindowStats.of([s for s in expected if s.at >= since])
    w.resize(resize_to)
    resized = [Sample(*t) for t in items[-size:]][-resize_to:] if items else []
    assert w.stats() == WindowStats.of(resized) and len(w) == len(resized)
    assert w.recent(since) == WindowStats.of([s for s in resized if s.at >= since])


def test_recent_follows_the_horizon_as_it_moves_and_new_samples_arrive() -> None:
    w = LatencyWindow(4)
    for at, ms, status in [(0.0, 50.0, "error"), (10.0, 1.0, "success"), (20.0, 2.0, "success")]:
        w.add(Sample(at, ms, status))
    assert w.recent(-1.0) is w.stats()  # nothing older than the horizon: the whole window
    assert (w.recent(5.0).count, w.recent(5.0).errors, w.recent(5.0).p50_ms) == (2, 0, 1.5)
    assert w.recent(15.0).count == 1 and w.recent(25.0).count == 0
    w.add(Sample(30.0, 3.0, "error"))
    assert (w.recent(5.0).count, w.recent(5.0).errors, w.recent(5.0).p50_ms) == (3, 1, 2.0)
    w.add(Sample(5.0, 4.0, "success"))  # a clock that went back: the window still answers by timestamp
    assert (w.recent(5.0).count, w.recent(5.0).p50_ms) == (4, 2.5)
    assert (w.recent(6.0).count, w.recent(6.0).p50_ms) == (3, 2.0)  # the late-stamped sample is outside
    assert (w.stats().count, w.stats().errors) == (4, 1)  # the first error has left the window
    assert w.recent(0.0) is not w.stats()  # out of order: filtered sample by sample
    for at in (40.0, 50.0, 60.0):
        w.add(Sample(at, 1.0, "success"))
    assert w.recent(0.0) is w.stats()  # the out-of-order pair has left: back to the shortcut

"""One percentile definition: the Servers screen (console state) and the Budget screen (latency book) agree.

Before, the console took the nearest rank with rounding and the budget layer interpolated like numpy, so the same
latencies showed a different p50 and p99 on the two screens.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.state import LATENCY_WINDOW, ConsoleState
from engine.budget.stats import LatencyBook
from engine.core.stats import percentile, percentiles
from engine.events import ToolCompleted


def servers_path(samples: list[float]) -> tuple[float | None, float | None]:
    """p50/p99 as the Servers screen shows them: console state fed ``tool.completed`` events."""
    state = ConsoleState()
    state.apply(
        ToolCompleted(
            call_id="c1",
            tool_call_id=f"t{i}",
            exposed_name="mcp_s_t",
            server="s",
            tool="t",
            status="success",
            latency_ms=ms,
            message="ok",
        )
        for i, ms in enumerate(samples)
    )
    return state.percentile("s", 0.5), state.percentile("s", 0.99)


def budget_path(samples: list[float]) -> tuple[float | None, float | None]:
    """p50/p99 as the Budget screen and ``ava-engine budget`` show them: the latency book's window."""
    book = LatencyBook(window=LATENCY_WINDOW, clock=lambda: 0.0)
    for ms in samples:
        book.record(("local", "s", "t"), ms, "success")
    stats = book.stats(("local", "s", "t"))
    return stats.p50_ms, stats.p99_ms


@pytest.mark.parametrize(
    ("samples", "p50", "p99"),
    [
        ([1.0, 2.0, 3.0, 4.0], 2.5, 3.97),  # nearest rank said p50 = 3
        ([10.0, 20.0, 30.0, 40.0, 1000.0], 30.0, 961.6),  # nearest rank said p99 = 1000
        ([7.0], 7.0, 7.0),
    ],
)
def test_servers_and_budget_show_the_same_percentiles(samples: list[float], p50: float, p99: float) -> None:
    assert servers_path(samples) == pytest.approx((p50, p99))
    assert budget_path(samples) == pytest.approx((p50, p99))


@settings(max_examples=200, deadline=None)
@given(samples=st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=LATENCY_WINDOW))
def test_same_samples_same_percentiles_everywhere(samples: list[float]) -> None:
    servers, budget = servers_path(samples), budget_path(samples)
    assert servers == budget
    assert servers == pytest.approx(tuple(float(np.quantile(samples, q)) for q in (0.5, 0.99)), rel=1e-9, abs=1e-6)


def test_percentiles_sorts_once_and_keeps_the_order_asked() -> None:
    assert percentiles([4.0, 1.0, 3.0, 2.0], 0.99, 0.5, 0.0) == pytest.approx((3.97, 2.5, 1.0))
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        percentiles([1.0], 99)

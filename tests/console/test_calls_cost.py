"""The console shows what calls cost: a Cost column in the Calls table (live and ended rows), the selected call's
cost in its transcript title, and a notification when a call reaches 80 % or 100 % of its budget (issue 36).

The console's test engine runs a scripted provider, which reports no usage: the usage events a priced provider's
turns publish (engine.usage, tested against each provider's fake) are published on the engine's bus here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Label

from console.app import AvaConsole
from console.format import FixedClock
from engine.events import BudgetAlert, UsageUpdated
from engine.usage.report import UsageReport
from tests.console.conftest import wait_for
from tests.console.helpers import record_notifications, transcript_drawn

ROOT = Path(__file__).resolve().parents[2]


def _usage(call_id: str, total_cost: float) -> UsageUpdated:
    used = UsageReport(input_tokens=1200, output_tokens=300, cached_input_tokens=200)
    return UsageUpdated(
        call_id=call_id,
        provider="s",
        model="m",
        turn=1,
        usage=used,
        total=used,
        cost=total_cost,
        total_cost=total_cost,
        priced=True,
    )


async def test_cost_column_title_and_budget_notifications(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.selected_call in app.state.calls)
        call_id = app.selected_call or ""
        table = app.screen.query_one("#calls", DataTable)
        assert "cost" in [str(k.value) for k in table.columns]
        await wait(pilot, lambda: str(table.get_cell(call_id, "cost")) == "-")  # no priced usage yet
        notes = record_notifications(app)
        assert app.engine is not None
        app.engine.bus.publish(_usage(call_id, 0.0123))
        await wait(pilot, lambda: str(table.get_cell(call_id, "cost")) == "$0.0123")
        title = app.screen.query_one("#transcript-title", Label)
        await wait(pilot, lambda: "(demo) · $0.0123" in str(title.render()))
        app.engine.bus.publish(
            BudgetAlert(call_id=call_id, level="warning", fraction=0.82, cost=0.0123, tokens=1500, max_cost=0.015)
        )
        await wait(pilot, lambda: any("82% of its budget ($0.015)" in n for n in notes))
        await app.engine.end_call(call_id)
        await wait(pilot, lambda: call_id in app.state.ended)
        await wait(pilot, lambda: "$0.0123" in str(table.get_cell(call_id, "cost")))  # the history row keeps it


@pytest.fixture
def _repo_cwd(monkeypatch: pytest.MonkeyPatch, memory_keyring: Any) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.usefixtures("_repo_cwd")
@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_calls_screen_with_a_cost(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        app: AvaConsole = pilot.app
        await wait_for(pilot, lambda: app.engine_running, within=60)
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: app.selected_call in app.state.calls)
        assert app.engine is not None
        app.engine.bus.publish(_usage(app.selected_call or "", 0.0123))
        await wait_for(pilot, lambda: app.state.calls[app.selected_call or ""].cost is not None)
        await wait_for(pilot, lambda: transcript_drawn(app))
        await pilot.pause(0.3)

    app = AvaConsole(Path("tests/console/data/console.yaml"), clock=FixedClock(), tick=False)
    assert snap_compare(app, run_before=run_before, terminal_size=size)

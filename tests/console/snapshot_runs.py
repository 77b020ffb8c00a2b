"""Several snapshot tests served by one run of the console: each screen's SVG taken in one app run, compared per test.

Why: a run costs the engine's start and its MCP servers' (a Python child each, ~2 s to import the SDK; the
cockpit's failing one fails 3 s late on purpose), and a call typed in key by key: most of a snapshot test's time.
Tests that differ only in which screen's key is pressed share one run per terminal size: the run presses each key
in turn and takes each screen's SVG exactly as ``snap_compare`` would (the same settling, the same export), and
each test still compares its own screen with its own stored SVG, under its own name (so the files, the
``--snapshot-update`` flow and the failure report stay as they were). A screen's SVG does not depend on which
screens were visited before it in the run: that was checked byte for byte against every stored SVG.

Runs are kept per worker process for the session; under xdist the tests of one run sit next to each other in
the collection, so they land on one worker as a rule (another worker that gets some of them makes its own run).
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from pytest_textual_snapshot import PseudoApp, PseudoConsole, SVGImageExtension, node_to_report_path
from rich.console import Console
from syrupy import SnapshotAssertion
from textual.app import App
from textual.pilot import Pilot

Step = Callable[[Pilot[Any]], Awaitable[None]]
KeyStep = Callable[[Pilot[Any], str], Awaitable[None]]

#: (run name, terminal size) -> {key: SVG}, or the error that ended the run (every test of the run reports it).
_RUNS: dict[tuple[str, tuple[int, int]], dict[str, str] | BaseException] = {}


async def _settle_like_snap_compare(pilot: Pilot[Any]) -> None:
    """What ``textual._doc.take_svg_screenshot`` awaits after ``run_before`` (no presses, no hover) and before its
    export, so a screen's SVG here is the one ``snap_compare`` would take."""
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def screens_of_one_run(
    name: str,
    make_app: Callable[[], App[Any]],
    size: tuple[int, int],
    run_before: Step,
    keys: Sequence[str],
    show: KeyStep,
) -> dict[str, str]:
    """The SVG of each key's screen: ``run_before`` once, then per key ``show(pilot, key)`` and a screenshot.

    Made once per (``name``, ``size``) in this process; a run that failed fails every test that asks for it again
    with the same error."""
    done = _RUNS.get((name, size))
    if done is None:
        done = _RUNS[(name, size)] = _run(make_app(), size, run_before, keys, show)
    if isinstance(done, BaseException):
        raise AssertionError(f"the shared snapshot run {name!r} at {size[0]}x{size[1]} failed: {done!r}") from done
    return done


def _run(app: App[Any], size: tuple[int, int], run_before: Step, keys: Sequence[str], show: KeyStep) -> Any:
    shots: dict[str, str] = {}
    failure: list[BaseException] = []

    async def auto_pilot(pilot: Pilot[Any]) -> None:
        try:
            await run_before(pilot)
            for key in keys:
                await show(pilot, key)
                await _settle_like_snap_compare(pilot)
                shots[key] = app.export_screenshot(title=app.title, simplify=True)
        except BaseException as e:  # reported by the tests; the app must still exit
            failure.append(e)
        app.exit()

    app.run(headless=True, auto_pilot=auto_pilot, size=size)
    if failure:
        return failure[0]
    missing = [k for k in keys if k not in shots]
    if missing:
        return AssertionError(f"the app ended before the screens of {missing} were taken")
    return shots


def compare_svg(snapshot: SnapshotAssertion, request: pytest.FixtureRequest, svg: str) -> bool:
    """``snap_compare``'s comparison of a screenshot taken already: the test's own stored SVG (written instead under
    ``--snapshot-update``), and the data of the plugin's HTML failure report."""
    snapshot = snapshot.use_extension(SVGImageExtension)
    result = snapshot == svg
    execution_index = (
        snapshot._custom_index and snapshot._execution_name_index.get(snapshot._custom_index)
    ) or snapshot.num_executions - 1
    assertion_result = snapshot.executions.get(execution_index)
    snapshot_exists = bool(
        execution_index in snapshot.executions and assertion_result and assertion_result.final_data is not None
    )
    console = Console(legacy_windows=False, force_terminal=True)
    p_app = PseudoApp(PseudoConsole(console.legacy_windows, console.size))
    node = request.node
    full_path, line_number, name = node.reportinfo()
    data = (
        result,
        str(snapshot),
        svg,
        p_app,
        full_path,
        line_number,
        name,
        inspect.getdoc(node.function) or "",
        "",
        snapshot_exists,
    )
    node_to_report_path(node).write_bytes(pickle.dumps(data))
    return result

"""Renders the README's screenshots: the console on the tests' config with one scripted call, each screen at
120×40 (the waterfall from the tests' recorded four-turn call), saved as SVG and converted to PNG with
rsvg-convert (Debian's librsvg2-bin). The screens whose layout depends on the terminal's size are shot at 80×24,
120×40 and 200×60 as well, as ``<screen>-<columns>x<lines>.png``.

Run from the repository root: ``.venv/bin/python docs/make_screenshots.py``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from console.app import AvaConsole  # noqa: E402
from console.format import FixedClock  # noqa: E402
from tests.fixtures.timed_call import CALL as TIMED_CALL  # noqa: E402
from tests.fixtures.timed_call import timed_call_events  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
SIZE = (120, 40)
#: The screens also shot at every size (their layout changes with it), and the sizes.
SIZED = ("calls", "call-view", "tool-log", "budget", "secrets")
SIZES = ((80, 24), (120, 40), (200, 60))


async def _until(pilot: Any, predicate: Callable[[], bool], within: float = 30.0) -> None:
    end = asyncio.get_running_loop().time() + within
    while not predicate():
        if asyncio.get_running_loop().time() > end:
            raise SystemExit("the console did not reach the state the screenshot needs")
        await pilot.pause(0.05)
    await pilot.pause(0.4)


async def _shoot(app: AvaConsole, name: str) -> None:
    width, height = app.size
    if (width, height) == SIZE:
        app.save_screenshot(filename=f"{name}.svg", path=str(OUT))
    if name in SIZED:
        app.save_screenshot(filename=f"{name}-{width}x{height}.svg", path=str(OUT))


def _to_png() -> None:
    for svg in sorted(OUT.glob("*.svg")):
        subprocess.run(["rsvg-convert", "-o", str(svg.with_suffix(".png")), str(svg)], check=True)
        svg.unlink()
        print(f"wrote {svg.with_suffix('.png').relative_to(ROOT)}")


async def main(size: tuple[int, int]) -> None:
    app = AvaConsole(Path("tests/console/data/console_servers.yaml"), clock=FixedClock(), tick=False)
    async with app.run_test(size=size) as pilot:
        await _until(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await _until(pilot, lambda: app.selected_call is not None)
        await pilot.press("s")
        await _until(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        await pilot.press(*"hello", "enter")
        await _until(pilot, lambda: len(app.state.transcript(app.selected_call or "")) >= 3)
        await pilot.press("escape")
        await _shoot(app, "calls")
        for event in timed_call_events():  # a recorded four-turn voice call with a tool, a timeout and a barge-in
            app.engine.bus.publish(event)  # type: ignore[union-attr]
        await _until(pilot, lambda: len(getattr(app.timings.get(TIMED_CALL), "turns", ())) == 4)
        live = app.selected_call
        app.selected_call = TIMED_CALL
        await pilot.press("g")
        await pilot.pause(0.8)
        await _shoot(app, "call-view")
        await pilot.press("escape")
        app.selected_call = live
        await pilot.press("question_mark")
        await pilot.pause(0.8)
        await _shoot(app, "key-help")
        await pilot.press("escape")
        for key, name in (
            ("f2", "tool-log"),
            ("f3", "servers"),
            ("f4", "budget"),
            ("f9", "secrets"),
            ("f11", "outbox"),
            ("f10", "config"),
        ):
            await pilot.press(key)
            await pilot.pause(0.8)
            await _shoot(app, name)
        await pilot.press("f3")
        await pilot.press("end")  # the working server (the failed one sorts first)
        await pilot.press("o")
        await pilot.pause(1.5)
        await _shoot(app, "tool-inspector")
        await pilot.press("escape")
        await pilot.press("v")
        await pilot.pause(0.8)
        await _shoot(app, "server-describe")


if __name__ == "__main__":
    if shutil.which("rsvg-convert") is None:
        raise SystemExit("rsvg-convert is missing: apt-get install librsvg2-bin")
    os.chdir(ROOT)  # the header shows the config path as given
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.svg"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        # the config's failing server waits for this file before it fails (the tests make it once fx is up)
        go = Path(tmp) / "crashy-go"
        go.touch()
        os.environ.setdefault("AVA_TEST_CRASHY_GO", str(go))
        for size in SIZES:
            asyncio.run(main(size))
    _to_png()

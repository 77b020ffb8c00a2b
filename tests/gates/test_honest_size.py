"""Honest size (issue 35 item 6): no module in engine/ or console/ over 400 lines, and few formatter skips.

A formatter skip that only packs code onto fewer lines hides a module's real length from the first rule, so the two
are checked together. Both lists below are ratchets: they may only shrink. An allowlisted module that has come under
the limit fails too, so its entry is removed and cannot quietly grow back.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400
SIZED_PACKAGES = ("engine", "console")
# Known offenders, to be split; remove an entry once its module is under the limit.
OVER_LIMIT_ALLOWED: set[str] = set()
# Today's count in the whole tree (none); the issue allows 20, each with a comment saying why the formatter is worse.
MAX_FMT_SKIPS = 0
SKIPPED_DIRS = {"node_modules", "__pycache__"}  # and every hidden folder: .venv, .venv-bench, .peers, caches
FMT_SKIP = "# fmt" + ": skip"  # split so this file does not count itself


def python_files(under: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(under):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".")]
        found.extend(Path(folder, f) for f in files if f.endswith(".py"))
    return sorted(found)


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_over_the_limit() -> None:
    sizes = {p.relative_to(ROOT).as_posix(): line_count(p) for pkg in SIZED_PACKAGES for p in python_files(ROOT / pkg)}
    over = {name: n for name, n in sizes.items() if n > MAX_LINES and name not in OVER_LIMIT_ALLOWED}
    assert not over, f"modules over {MAX_LINES} lines (split them by job): {over}"
    shrunk = sorted(name for name in OVER_LIMIT_ALLOWED if sizes.get(name, 0) <= MAX_LINES)
    assert not shrunk, f"now within {MAX_LINES} lines or gone, remove from OVER_LIMIT_ALLOWED: {shrunk}"


def test_fmt_skips_are_few() -> None:
    where = [
        f"{p.relative_to(ROOT).as_posix()}:{i}"
        for p in python_files(ROOT)
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if FMT_SKIP in line
    ]
    assert len(where) <= MAX_FMT_SKIPS, f"{len(where)} '{FMT_SKIP}' (at most {MAX_FMT_SKIPS}): {where[:40]}"

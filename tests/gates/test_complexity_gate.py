"""The complexity gate (issue 35 item 6): ruff's C901 at 15 over the whole tree, with no file exempt from it.

Why a test beside ``ruff check``: ruff reads its exemptions from pyproject.toml, so a ``per-file-ignores`` entry (or a
raised ``max-complexity``) turns the gate off for a file without ``ruff check`` saying anything. This reads the
configuration ruff uses and fails on either.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MAX_COMPLEXITY = 15


def gate_problems(pyproject: dict[str, Any]) -> list[str]:
    """What in a parsed pyproject.toml weakens the gate ([] when nothing does)."""
    lint = pyproject.get("tool", {}).get("ruff", {}).get("lint", {})
    problems = []
    if "C901" not in lint.get("select", []):
        problems.append("C901 is not in [tool.ruff.lint] select")
    limit = lint.get("mccabe", {}).get("max-complexity")
    if limit != MAX_COMPLEXITY:
        problems.append(f"[tool.ruff.lint.mccabe] max-complexity is {limit!r}, not {MAX_COMPLEXITY}")
    for path, codes in lint.get("per-file-ignores", {}).items():
        if any("C901".startswith(code) for code in codes):  # "C9" and "C" ignore C901 too
            problems.append(f"{path} is exempt from C901 ({', '.join(codes)}): split its function instead")
    problems.extend(f"ignore {code} turns C901 off" for code in lint.get("ignore", []) if "C901".startswith(code))
    return problems


def test_no_file_is_exempt_from_the_complexity_gate() -> None:
    with (ROOT / "pyproject.toml").open("rb") as f:
        assert gate_problems(tomllib.load(f)) == []


def test_the_gate_sees_an_exemption_and_a_raised_limit() -> None:
    weakened = {
        "tool": {
            "ruff": {
                "lint": {
                    "select": ["E", "C901"],
                    "ignore": ["C9"],
                    "mccabe": {"max-complexity": 20},
                    "per-file-ignores": {"a.py": ["C901"], "b.py": ["E501"]},
                }
            }
        }
    }
    assert gate_problems(weakened) == [
        "[tool.ruff.lint.mccabe] max-complexity is 20, not 15",
        "a.py is exempt from C901 (C901): split its function instead",
        "ignore C9 turns C901 off",
    ]

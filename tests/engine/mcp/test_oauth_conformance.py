"""The official conformance suite's OAuth client scenarios, with the installed ``ava-engine`` as the client.

``auth/pre-registration``: a server without dynamic registration and a client registered beforehand
(``auth.oauth.client_id`` / ``client_secret`` from the keyring, HTTP Basic at the token endpoint).
``auth/scope-step-up``: listing needs one scope, calling another; the call's 403 ``insufficient_scope`` must reach
the operator as "sign in again" naming the new scope, and the second sign-in must ask for both (SEP-2350).
The suite (npm ``@modelcontextprotocol/conformance``, in .peers/) plays both servers on loopback and judges the wire;
``conformance_oauth_client.py`` drives the CLI and records what the operator saw.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conformance.run_conformance import CONFORMANCE_BIN, missing_prerequisite, node_bin_dir

CLIENT = Path(__file__).with_name("conformance_oauth_client.py")

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))


def run_scenario(tmp_path: Path, ring: Path, scenario: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the suite's checks, the client's steps) for one scenario."""
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "PATH": f"{node_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_COLOR": "1",
        "AVA_CONFORMANCE_DIR": str(work),
        "AVA_TEST_KEYRING_FILE": str(ring),
    }
    out = tmp_path / "results"
    command = f"{sys.executable} {CLIENT}"
    done = subprocess.run(
        [
            str(CONFORMANCE_BIN),
            "client",
            "--command",
            command,
            "--scenario",
            scenario,
            "-o",
            str(out),
            "--timeout",
            "90000",
        ],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    found = sorted(out.glob("**/checks.json"))
    assert found, done.stdout + done.stderr
    steps_file = work / f"{scenario.replace('/', '_')}.json"
    steps = json.loads(steps_file.read_text()) if steps_file.exists() else []
    return json.loads(found[-1].read_text()), steps


def test_pre_registered_client(tmp_path: Path, ring: Path) -> None:
    checks, steps = run_scenario(tmp_path, ring, "auth/pre-registration")
    assert [(c["id"], c["status"]) for c in checks if c["status"] in ("FAILURE", "WARNING")] == [], steps
    assert any(c["id"] == "pre-registration-auth" and c["status"] == "SUCCESS" for c in checks)
    login = next(s for s in steps if s["step"] == "login")
    assert login["code"] == 0 and login["lines"][-1]["signed_in"] is True, login
    config = (tmp_path / "work" / "config.yaml").read_text()
    assert "pre-registered-secret" not in config  # the secret lives in the keyring, the YAML names it


def test_scope_step_up_asks_to_sign_in_again_naming_the_scope(tmp_path: Path, ring: Path) -> None:
    checks, steps = run_scenario(tmp_path, ring, "auth/scope-step-up")
    statuses = {c["id"]: c["status"] for c in checks}
    assert statuses.get("scope-step-up-initial") == "SUCCESS", checks
    assert statuses.get("scope-step-up-escalation") == "SUCCESS", (checks, steps)
    assert statuses.get("sep-2350-scope-union-on-reauth", "SUCCESS") == "SUCCESS", checks
    first_call = next(s for s in steps if s["step"] == "call")
    message = first_call["result"]["message"]
    assert "mcp:write" in message and "ava-engine mcp login prot" in message, first_call
    again = next(s for s in steps if s["step"] == "login again")
    asked = parse_qs(urlsplit(again["lines"][0]["authorize_url"]).query)["scope"][0].split()
    assert again["code"] == 0 and {"mcp:basic", "mcp:write"} <= set(asked), again
    assert next(s for s in steps if s["step"] == "call again")["result"]["status"] == "success", steps

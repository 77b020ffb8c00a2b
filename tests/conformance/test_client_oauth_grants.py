"""The conformance suite's OAuth scenarios without a person, with the installed ``ava-engine`` as the client.

``auth/client-credentials-basic`` and ``-jwt`` (SEP-1046: ``client_secret_basic``; a ``private_key_jwt`` assertion
signed with the scenario's ES256 key, from a key file), ``auth/wif-jwt-bearer`` (SEP-1933: the platform's JWT from
a file, as an RFC 7523 jwt-bearer grant) and ``auth/enterprise-managed-authorization`` (SEP-990: the ID token from
the keyring exchanged at the scenario's identity provider for an ID-JAG, traded for the token at the configured
issuer). ``client_driver.py`` writes each ``auth.oauth.grant`` config (the issuer looked up from the server's
resource metadata, as an administrator would), runs ``mcp login`` (a token, no browser) and ``mcp call``; the suite
judges the wire. ``auth/dpop`` and ``auth/dpop-nonce`` (SEP-1932, RFC 9449): a person's sign-in whose token
requests and MCP requests carry proofs of the server's key, retried once with the nonce a server asks for.
``make test`` runs these six beside test_client_conformance.py's one-of-each-family set.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from run_conformance import missing_prerequisite
from test_client_conformance import run_client_scenario

GRANTS = (
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/wif-jwt-bearer",
    "auth/enterprise-managed-authorization",
)
DPOP = ("auth/dpop", "auth/dpop-nonce")
#: The check each scenario must pass for its grant (the suite adds FAILURE for it when no such request came).
PROOF = {
    "auth/client-credentials-basic": "client-credentials-basic-auth",
    "auth/client-credentials-jwt": "client-credentials-jwt-verified",
    "auth/wif-jwt-bearer": "wif-assertion-verified",
    "auth/enterprise-managed-authorization": "complete-flow-jwt-bearer",
    "auth/dpop": "sep-1932-client-dpop-auth-scheme",
    "auth/dpop-nonce": "sep-1932-client-rs-nonce",
}

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite())),
]


async def test_every_grant_without_a_person_and_dpop_pass_their_scenarios(tmp_path: Path) -> None:
    gate = asyncio.Semaphore(2)
    dirs = {s: tmp_path / s.replace("/", "_") for s in (*GRANTS, *DPOP)}
    runs = await asyncio.gather(*(run_client_scenario(s, d, gate) for s, d in dirs.items()))
    for run in runs:
        assert run.returncode == 0 and run.failed == [], f"{run.scenario}: {run.failed}\n{run.output[-3000:]}"
        checks = [c for f in (dirs[run.scenario] / "results").rglob("checks.json") for c in json.loads(f.read_text())]
        assert any(c["id"] == PROOF[run.scenario] and c["status"] == "SUCCESS" for c in checks), run.scenario
        steps = json.loads(next(dirs[run.scenario].glob("*/steps.json")).read_text())
        call = next(s for s in steps if s["step"] == "call")
        assert call["result"]["status"] == "success", call
        if run.scenario in DPOP:
            continue
        login = next(s for s in steps if s["step"] == "login")
        assert login["code"] == 0 and "authorize_url" not in login["lines"][0], login  # no browser, no URL
        assert login["lines"][-1]["signed_in"] is True and login["lines"][-1]["grant"]

"""The client under test for the conformance suite's OAuth scenarios: the installed ``ava-engine``, as operators use it.

Why it exists: ``conformance client --command "python THIS" --scenario auth/...`` runs this with the scenario's
server URL as the last argument and its context (pre-registered credentials) in ``$MCP_CONFORMANCE_CONTEXT``. It
writes a config for that server (a client secret goes to the keyring and is referenced as ``${keyring:NAME}``),
signs in with ``mcp login`` (following the printed URL as a browser would), calls a tool, and, when the call says
the server wants more scopes (step-up), signs in again and calls once more. What happened is written to
``$AVA_CONFORMANCE_DIR/<scenario>.json`` for the test to read; the suite's own checks judge the wire.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from engine.config.models.mcp import default_exposed_name
from tests.engine.mcp.oauth_helpers import Cli


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "scenario")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    work = Path(os.environ["AVA_CONFORMANCE_DIR"])
    config = work / "config.yaml"
    oauth = ["client_name: ava conformance"]
    if context.get("client_id"):
        oauth.append(f"client_id: {json.dumps(context['client_id'])}")
    if context.get("client_secret"):
        oauth.append('client_secret: "${keyring:conformance_client_secret}"')
    lines = "\n".join(f"          {line}" for line in oauth)
    config.write_text(
        "engine:\n  http: {enabled: false}\nmcp:\n  servers:\n    prot:\n      transport: http\n"
        f'      url: "{url}"\n      connect_timeout_ms: 8000\n      restart: {{enabled: false}}\n'
        f"      auth:\n        oauth:\n{lines}\n"
    )
    cli = Cli(config, Path(os.environ["AVA_TEST_KEYRING_FILE"]))
    steps: list[dict[str, object]] = []
    if context.get("client_secret"):
        code, out, err = cli.run("secrets", "set", "conformance_client_secret", "--value", context["client_secret"])
        steps.append({"step": "secret", "code": code, "err": err})
    code, found, err = cli.login("prot", timeout_s=20)
    steps.append({"step": "login", "code": code, "lines": found, "err": err})
    if code == 0:
        tools = found[-1].get("tools") or []
        for attempt in ("call", "call again"):
            code, out, err = cli.run("--json", "mcp", "call", default_exposed_name("prot", tools[0]), "--args", "{}")
            result = json.loads(out) if out.strip() else {}
            steps.append({"step": attempt, "code": code, "result": result, "err": err})
            if result.get("status") == "success" or attempt == "call again":
                break
            code, found, err = cli.login("prot", timeout_s=20)
            steps.append({"step": "login again", "code": code, "lines": found, "err": err})
    (work / f"{scenario.replace('/', '_')}.json").write_text(json.dumps(steps, indent=1))
    print(json.dumps(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())

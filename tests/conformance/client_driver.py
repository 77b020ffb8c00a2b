"""The client under test for every client scenario of the MCP conformance suite: the installed ``ava-engine``.

Why it exists: ``conformance client --command "python THIS" --scenario NAME`` starts the scenario's test server and
runs this with the server's URL as the last argument, the scenario in ``$MCP_CONFORMANCE_SCENARIO`` and any context
(pre-registered credentials) in ``$MCP_CONFORMANCE_CONTEXT``. It writes a config naming that server, signs in with
``mcp login`` when the scenario protects the server (following the printed URL as a browser would), lists the tools
with ``mcp test`` and calls what the scenario expects with ``mcp call`` -- the commands an operator runs. What
happened is written to ``$AVA_CONFORMANCE_DIR/<scenario>.json``; the suite's own checks judge the wire.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.config.models.mcp import default_exposed_name
from tests.engine.mcp.oauth_helpers import Cli

SERVER_ID = "conf"
#: One command's bound: a loaded 2-core machine takes seconds just to import the engine.
CLI_TIMEOUT_S = 120.0


def issuer_of(url: str) -> str:
    """The authorization server a protected MCP server names in its resource metadata (RFC 9728), as an
    administrator would look it up for a grant without a person (``auth.oauth.issuer``)."""
    parts = urlsplit(url)
    for path in (f"/.well-known/oauth-protected-resource{parts.path}", "/.well-known/oauth-protected-resource"):
        try:
            with urllib.request.urlopen(f"{parts.scheme}://{parts.netloc}{path}", timeout=10) as answer:
                return str(json.loads(answer.read())["authorization_servers"][0])
        except (OSError, ValueError, KeyError, IndexError):
            continue
    raise SystemExit(f"no protected-resource metadata for {url}")


def grant_lines(work: Path, url: str, scenario: str, context: dict[str, Any]) -> list[str]:
    """``auth.oauth`` keys of the scenarios that get a token without a person (``auth.oauth.grant``)."""
    if scenario == "auth/client-credentials-jwt":  # the key from a file, the way a mounted secret arrives
        key = work / "client-key.pem"
        key.write_text(context["private_key_pem"])
        return [
            "grant: client_credentials",
            f"private_key_file: {json.dumps(str(key))}",
            f"signing_algorithm: {context['signing_algorithm']}",
        ]
    if scenario == "auth/wif-jwt-bearer":  # the platform writes the workload's JWT to a file
        token = work / "workload.jwt"
        token.write_text(context["valid_jwt"])
        return ["grant: jwt_bearer", f"assertion_file: {json.dumps(str(token))}"]
    if scenario == "auth/enterprise-managed-authorization":
        return [
            "grant: enterprise",
            "idp:",
            f"  token_endpoint: {json.dumps(context['idp_token_endpoint'])}",
            f"  client_id: {json.dumps(context['idp_client_id'])}",
            '  id_token: "${keyring:conformance_id_token}"',
        ]
    return ["grant: client_credentials"] if scenario == "auth/client-credentials-basic" else []


def write_config(work: Path, url: str, scenario: str, context: dict[str, Any]) -> Path:
    """A config with one http server at ``url``; ``auth.oauth`` for the auth scenarios (a secret by keyring name)."""
    server = [
        "transport: http",
        f"url: {json.dumps(url)}",
        "connect_timeout_ms: 8000",
        "restart: {enabled: false}",
    ]
    if scenario.startswith("auth/"):
        server += ["auth:", "  oauth:", "    client_name: ava conformance"]
        if context.get("client_id"):
            server.append(f"    client_id: {json.dumps(context['client_id'])}")
        if context.get("client_secret"):
            server.append('    client_secret: "${keyring:conformance_client_secret}"')
        if scenario == "auth/basic-cimd":  # the URL the scenario's authorization server expects as client id
            server.append(f"    client_metadata_url: {CIMD_URL}")
        grant = grant_lines(work, url, scenario, context)
        if grant:
            server += [f"    {line}" for line in [*grant, f"issuer: {json.dumps(issuer_of(url))}"]]
    body = "".join(f"      {line}\n" for line in server)
    config = work / "config.yaml"
    config.write_text(f"engine:\n  http: {{enabled: false}}\nmcp:\n  servers:\n    {SERVER_ID}:\n{body}")
    return config


#: What a scenario asks of the client beyond signing in: a list of (tool, arguments) to call with ``mcp call``;
#: "test" for ``mcp test`` only (connect, initialize or discover, list); "first" for the first tool listed.
PLANS: dict[str, list[tuple[str, dict[str, Any]]] | str] = {
    "initialize": "test",
    "request-metadata": "test",
    "http-standard-headers": "test",
    "json-schema-ref-no-deref": "test",
    "sse-retry": "first",
    "tools_call": [("add_numbers", {"a": 2, "b": 3})],
    "elicitation-sep1034-client-defaults": [("test_client_elicitation_defaults", {})],
    "http-invalid-tool-headers": [("valid_tool", {"region": "us-west1"})],
    "sep-2322-client-request-state": [
        ("test_mrtr_echo_state", {}),
        ("test_mrtr_unrelated", {}),
        ("test_mrtr_no_state", {}),
        ("test_mrtr_no_result_type", {}),
    ],
}
#: Scenarios whose tool asks a question mid-call (elicitation) that the operator answers with the form's defaults.
ACCEPT_DEFAULTS = frozenset({"elicitation-sep1034-client-defaults"})
#: The client id metadata document the suite's authorization servers accept (SEP-991).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
#: Every OAuth scenario's server offers this tool once signed in.
AUTH_TOOL = "test-tool"


class Driver:
    """Runs one scenario's commands and keeps what each printed (``steps``)."""

    def __init__(self, cli: Cli) -> None:
        self.cli = cli
        self.steps: list[dict[str, Any]] = []

    def json_run(self, step: str, *argv: str) -> dict[str, Any]:
        code, out, err = self.cli.run("--json", *argv, timeout=CLI_TIMEOUT_S)
        try:
            result = json.loads(out) if out.strip() else {}
        except ValueError:
            result = {"unparsed": out[-2000:]}
        self.steps.append({"step": step, "code": code, "result": result, "err": err[-4000:]})
        return result if isinstance(result, dict) else {"result": result}

    def login(self, step: str) -> bool:
        code, lines, err = self.cli.login(SERVER_ID, timeout_s=CLI_TIMEOUT_S)
        self.steps.append({"step": step, "code": code, "lines": lines, "err": err[-4000:]})
        return code == 0

    def call(self, step: str, tool: str, args: dict[str, Any], *flags: str) -> dict[str, Any]:
        name = default_exposed_name(SERVER_ID, tool)
        return self.json_run(step, "mcp", "call", name, "--args", json.dumps(args), *flags)

    def schema_echo(self) -> None:
        """json-schema-2020-12-preservation: send back the focal tool's input schema as the engine holds it."""
        listed = self.json_run("test", "mcp", "test", SERVER_ID)
        tools: list[dict[str, Any]] = listed.get("tools") or []
        focal = next((t for t in tools if t["name"] == "json_schema_2020_12_tool"), {})
        self.call("call", "json_schema_echo", {"schema": focal.get("input_schema")})

    def run(self, scenario: str, context: dict[str, Any]) -> None:
        if scenario.startswith("auth/"):
            if not self.login("login"):
                return
            result = self.call("call", AUTH_TOOL, {})
            if result.get("status") != "success" and "mcp login" in str(result.get("message")):
                # step-up or a moved authorization server: the operator signs in again, as the message says
                if self.login("login again"):
                    self.call("call again", AUTH_TOOL, {})
            return
        if scenario == "json-schema-2020-12-preservation":
            self.schema_echo()
            return
        plan = PLANS.get(scenario, "first")
        if context.get("toolCalls"):
            plan = [(c["name"], c.get("arguments") or {}) for c in context["toolCalls"]]
        if isinstance(plan, list):
            flags = ("--accept-defaults",) if scenario in ACCEPT_DEFAULTS else ()
            for i, (tool, args) in enumerate(plan):
                self.call(f"call {i + 1} {tool}", tool, args, *flags)
            return
        listed = self.json_run("test", "mcp", "test", SERVER_ID)
        tools = listed.get("tools") or []
        if plan == "first" and tools:
            self.call("call", tools[0]["name"], {})


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "scenario")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    base = os.environ.get("AVA_CONFORMANCE_DIR")
    work = Path(tempfile.mkdtemp(prefix=scenario.replace("/", "_") + "-", dir=base))
    config = write_config(work, url, scenario, context)
    driver = Driver(Cli(config, work / "keyring.json"))
    if context.get("client_secret"):
        driver.json_run("secret", "secrets", "set", "conformance_client_secret", "--value", context["client_secret"])
    if context.get("idp_id_token"):
        driver.json_run("id token", "secrets", "set", "conformance_id_token", "--value", context["idp_id_token"])
    driver.run(scenario, context)
    (work / "steps.json").write_text(json.dumps(driver.steps, indent=1))
    print(json.dumps(driver.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())

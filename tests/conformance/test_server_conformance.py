"""The official MCP conformance suite's server scenarios against the engine's own /mcp endpoint (real Node peer)."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_fixture import conformance_engine, endpoint_url
from run_conformance import NOT_REQUIRED_2026, SPEC_VERSIONS, missing_prerequisite, pass_rate, run_suite

#: Scenarios that apply to the endpoint (tools, and what the servers behind it offer) and must have run with every
#: check passing (not merely baselined).
MUST_PASS = {
    "2025-11-25": [
        "server-initialize",
        "server-session-lifecycle",
        "ping",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "tools-call-with-progress",
        "json-schema-2020-12",
        "server-sse-multiple-streams",
        "server-sse-polling",
        "dns-rebinding-protection",
        "logging-set-level",
        "completion-complete",
        "tools-call-with-logging",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "resources-subscribe",
        "resources-unsubscribe",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
    ],
    "2026-07-28": [
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "tools-call-with-progress",
        "json-schema-2020-12",
        "dns-rebinding-protection",
        "http-header-validation",
        "completion-complete",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "sep-2164-resource-not-found",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "caching",
        "input-required-result-basic-elicitation",
        "input-required-result-basic-sampling",
        "input-required-result-basic-list-roots",
        "input-required-result-request-state",
        "input-required-result-multiple-input-requests",
        "input-required-result-multi-round",
        "input-required-result-non-tool-request",
        "input-required-result-result-type",
        "input-required-result-tampered-state",
        "input-required-result-capability-check",
        "input-required-result-missing-input-response",
        "input-required-result-ignore-extra-params",
        "server-stateless",
    ],
}
#: The subscriptions/listen checks (SEP-2575), skipped by the suite when a server declares no list changes: these
#: must have run and passed.
LISTEN_CHECKS = (
    "sep-2575-server-sends-subscription-ack",
    "sep-2575-server-tags-subscription-id",
    "sep-2575-server-honors-notification-filter",
    "sep-2575-server-sends-prompts-list-changed-on-subscription",
    "sep-2575-server-sends-tools-list-changed-on-subscription",
)
#: The least share of the 2026-07-28 required set's checks that must pass.
REQUIRED_RATE_2026 = 0.95

pytestmark = pytest.mark.timeout(120)


async def test_conformance_suite_passes_with_only_non_applicable_scenarios_baselined(tmp_path: Path) -> None:
    problem = missing_prerequisite()
    if problem:
        pytest.skip(problem)
    async with conformance_engine() as engine:
        url = endpoint_url(engine)
        for version in SPEC_VERSIONS:
            run = await run_suite(url, version, tmp_path / version)
            tail = run.output[-4000:]
            assert run.returncode == 0, f"conformance ({version}) exit {run.returncode}:\n{tail}"
            for scenario in MUST_PASS[version]:
                checks = run.checks.get(scenario)
                assert checks, f"{scenario} did not run for {version}:\n{tail}"
                bad = [(cid, st) for cid, st in checks if st in ("FAILURE", "WARNING")]
                assert not bad, f"{scenario} ({version}) failed checks {bad}"
                assert any(st == "SUCCESS" for _, st in checks), f"{scenario} ({version}) had no passing check"
            if version == "2026-07-28":
                stateless = dict(run.checks.get("server-stateless", []))
                assert {c: stateless.get(c) for c in LISTEN_CHECKS} == dict.fromkeys(LISTEN_CHECKS, "SUCCESS")
                passed, judged = pass_rate(run.checks, NOT_REQUIRED_2026)
                print(f"2026-07-28 required set: {passed} of {judged} checks pass ({100 * passed / judged:.1f} %)")
                assert passed >= REQUIRED_RATE_2026 * judged, f"2026-07-28 required set: only {passed} of {judged}"

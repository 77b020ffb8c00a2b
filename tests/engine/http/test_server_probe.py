"""POST /mcp/test/{id}: unsaved configs only when authenticated, expanded like the config, at most 2 at once."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from engine.redaction.redactor import MASK
from tests.engine.http.conftest import ApiFactory
from tests.engine.http.helpers import AUTH, FIXTURE_SERVER, JSON, TOKEN, fixture_server, send
from tests.fixtures.memory_keyring import MemoryKeyring

SECRET = "probe-secret-5d2c81"


async def test_an_authenticated_request_runs_an_unsaved_server_with_var_and_python_expanded(
    api: ApiFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AVA_HTTP_TEST_FIXTURE", FIXTURE_SERVER)
    a = await api(http={"auth_token": TOKEN})
    body = {"transport": "stdio", "command": ["{python}", "${AVA_HTTP_TEST_FIXTURE}", "--meta"]}
    got = await send("POST", f"{a.base}/mcp/test/fresh", headers={**JSON, **AUTH}, data=json.dumps(body))
    assert got.status == 200, got.text
    report = got.json()
    assert report["ok"] is True, report
    assert {t["name"] for t in report["tools"]} >= {"echo", "add"}
    assert report["server"] == "fresh"


async def test_keyring_references_are_expanded_and_masked_in_the_report(
    api: ApiFactory, memory_keyring: MemoryKeyring, tmp_path: Path
) -> None:
    from engine.config.secrets import SERVICE

    memory_keyring.set_password(SERVICE, "probe_secret", SECRET)
    out = tmp_path / "seen"
    script = (
        f"import sys; open({str(out)!r}, 'w').write(sys.argv[1]); sys.stderr.write('got ' + sys.argv[1]); sys.exit(3)"
    )
    body = {"config": {"transport": "stdio", "command": ["{python}", "-c", script, "${keyring:probe_secret}"]}}
    a = await api(http={"auth_token": TOKEN})
    got = await send("POST", f"{a.base}/mcp/test/leaky", headers={**JSON, **AUTH}, data=json.dumps(body))
    assert got.status == 200, got.text
    assert out.read_text() == SECRET  # the child received the expanded value
    assert SECRET not in got.text and MASK in got.text  # and the report never shows it
    assert got.json()["ok"] is False


async def test_an_unset_variable_is_a_400_naming_the_key(api: ApiFactory) -> None:
    a = await api(http={"auth_token": TOKEN})
    body = {"transport": "stdio", "command": [sys.executable, "${AVA_NO_SUCH_VARIABLE_XYZ}"]}
    got = await send("POST", f"{a.base}/mcp/test/x", headers={**JSON, **AUTH}, data=json.dumps(body))
    assert got.status == 400
    assert got.json()["error"].startswith("command[1]: environment variable AVA_NO_SUCH_VARIABLE_XYZ is not set")


async def test_a_configured_server_is_tested_with_an_empty_body_without_a_token(api: ApiFactory) -> None:
    a = await api(servers={"fx": {**fixture_server(), "start": "lazy"}})
    for data, headers in ((None, {}), ("", JSON), ("{}", JSON)):
        got = await send("POST", f"{a.base}/mcp/test/fx", headers=headers, data=data)
        assert got.status == 200 and got.json()["ok"] is True, got.text
    got = await send("POST", f"{a.base}/mcp/test/nope", headers=JSON, data="{}")
    assert got.status == 404


async def test_at_most_two_tests_run_at_once(api: ApiFactory) -> None:
    a = await api(servers={"slow": {**fixture_server("--slow-start", "1.5"), "start": "lazy"}})
    url = f"{a.base}/mcp/test/slow"
    results = await asyncio.gather(*(send("POST", url) for _ in range(3)))
    statuses = sorted(r.status for r in results)
    assert statuses == [200, 200, 429], [r.text for r in results]
    refused = next(r for r in results if r.status == 429)
    assert "2 server tests are already running" in refused.json()["error"]
    again = await send("POST", url)  # the slots are given back
    assert again.status == 200

"""The remote command execution of issue 12: a web page POSTing a command to /mcp/test must never run it.

Each request is the one a browser (or a rebinding page) can send; the marker file is what the command would
create. Before the guard every one of these ran ``/bin/sh`` (the marker appeared) on the default config.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.http.conftest import ApiFactory
from tests.engine.http.helpers import AUTH, JSON, TOKEN, send


def command_body(marker: Path) -> str:
    return json.dumps({"command": ["/bin/sh", "-c", f"touch {marker}"]})


async def test_the_cross_site_plain_text_post_from_a_foreign_origin_runs_nothing(
    api: ApiFactory, tmp_path: Path
) -> None:
    a = await api()  # the default: loopback, no token
    marker = tmp_path / "MARKER"
    got = await send(
        "POST",
        f"{a.base}/mcp/test/x",
        headers={"Content-Type": "text/plain", "Origin": "http://evil.example"},
        data=command_body(marker),
    )
    assert got.status == 403, got.text
    assert "Origin 'http://evil.example'" in got.json()["error"] and got.json()["key"] == "engine.http.allowed_origins"
    assert not marker.exists()


async def test_a_plain_text_post_without_origin_is_415_and_runs_nothing(api: ApiFactory, tmp_path: Path) -> None:
    a = await api()
    marker = tmp_path / "MARKER"
    got = await send("POST", f"{a.base}/mcp/test/x", headers={"Content-Type": "text/plain"}, data=command_body(marker))
    assert got.status == 415 and "application/json" in got.json()["error"], got.text
    assert not marker.exists()


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
async def test_a_foreign_host_dns_rebinding_runs_nothing(api: ApiFactory, tmp_path: Path, content_type: str) -> None:
    a = await api()
    marker = tmp_path / "MARKER"
    got = await send(
        "POST",
        f"{a.base}/mcp/test/x",
        headers={"Content-Type": content_type, "Host": "evil.example:8088"},
        data=command_body(marker),
    )
    assert got.status == 421, got.text
    body = got.json()
    assert "Host 'evil.example:8088'" in body["error"] and body["key"] == "engine.http.allowed_hosts"
    assert not marker.exists()


async def test_a_json_post_without_a_token_configured_runs_no_unsaved_command(api: ApiFactory, tmp_path: Path) -> None:
    a = await api()
    marker = tmp_path / "MARKER"
    got = await send("POST", f"{a.base}/mcp/test/x", headers=JSON, data=command_body(marker))
    assert got.status == 403, got.text
    assert "engine.http.auth_token" in got.json()["error"] and got.json()["key"] == "engine.http.auth_token"
    for wrapped in ({"config": json.loads(command_body(marker))},):
        again = await send("POST", f"{a.base}/mcp/test/x", headers=JSON, data=json.dumps(wrapped))
        assert again.status == 403, again.text
    assert not marker.exists()


async def test_with_a_token_configured_a_request_without_it_runs_nothing(api: ApiFactory, tmp_path: Path) -> None:
    a = await api(http={"auth_token": TOKEN})
    marker = tmp_path / "MARKER"
    for headers in (JSON, {**JSON, "Authorization": "Bearer wrong"}, {"Content-Type": "text/plain", **AUTH}):
        got = await send("POST", f"{a.base}/mcp/test/x", headers=headers, data=command_body(marker))
        assert got.status in (401, 415), got.text
        assert TOKEN not in got.text
    assert not marker.exists()

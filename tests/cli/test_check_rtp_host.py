"""``ava-engine check`` refuses an ``asterisk.rtp_host`` Asterisk cannot send RTP to, naming file, line and key and
what to write instead: the unspecified address (``0.0.0.0``, ``::``; the engine may listen there, but it is also
the address Asterisk is told to send to) and an IPv6 literal without brackets (``[::1]``). Run through the
installed entry point: exit code 2, the message on stderr or in ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_check_refusals import check, write


def config_with(tmp_path: Path, host: str) -> Path:
    return write(tmp_path, f"engine:\n  http: {{enabled: false}}\nasterisk:\n  username: ava\n  rtp_host: '{host}'\n")


@pytest.mark.parametrize(
    ("host", "instead"),
    [
        ("0.0.0.0", "the engine's own address as Asterisk reaches it"),
        ("::", "the engine's own address as Asterisk reaches it"),
        ("[::]", "the engine's own address as Asterisk reaches it"),
        ("::1", "write '[::1]'"),
        ("fd00::5", "write '[fd00::5]'"),
        ("[127.0.0.1]", "write '127.0.0.1'"),
    ],
)
def test_an_rtp_host_asterisk_cannot_send_to_is_refused_with_what_to_write(
    tmp_path: Path, host: str, instead: str
) -> None:
    config = config_with(tmp_path, host)
    done = check(config, "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error.startswith(f"{config}:5: asterisk.rtp_host: "), error
    assert instead in error, error


@pytest.mark.parametrize("host", ["127.0.0.1", "10.0.0.5", "[::1]", "[fd00::5]", "ava-engine.internal"])
def test_an_address_asterisk_can_send_to_is_accepted(tmp_path: Path, host: str) -> None:
    config = config_with(tmp_path, host)
    done = check(config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rtp_host" not in done.stderr, done.stderr

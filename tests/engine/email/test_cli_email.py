"""The e-mail path through the installed ``ava-engine``: the confirm flow in ``ava-engine call`` (a scripted
context), and ``ava-engine email test`` against a real SMTP server on loopback (sent, refused, e-mail off).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.email.outbox import Email, Outbox, new_message_id
from tests.engine.email.conftest import mail_settings
from tests.engine.email.smtp_fixture import PASSWORD, SmtpServer

ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
SAID = "j o h n dot smith at example dot com"
REFUSED = "550 5.1.1 no such user"


def _config(tmp_path: Path, email: dict[str, Any]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(mail_settings(email)), encoding="utf-8")
    return path


def ava_engine(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENTRY_POINT), *args], capture_output=True, text=True, timeout=90, env={**os.environ, "COLUMNS": "200"}
    )


@pytest.mark.timeout(120)
def test_confirm_flow_in_ava_engine_call(tmp_path: Path, smtp: SmtpServer) -> None:
    config = _config(tmp_path, smtp.email_config(outbox="outbox.sqlite3", summary=True))
    p = ava_engine(
        "call",
        "--config",
        str(config),
        "--context",
        "desk",
        "--caller-name",
        "Dana",
        "--say",
        f"email me the transcript at {SAID}",
        "--say",
        f"yes, send it to {SAID}",
        "--say",
        f"yes, send it to {SAID}",
        "--say",
        "goodbye",
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    readback = out.index("j-o-h-n dot smith at example dot com. Is that right?")
    confirmed = out.index("Done: the transcript will be emailed to j-o-h-n dot smith at example dot com")
    refused = out.index("already going to j-o-h-n dot smith at example dot com")
    assert readback < confirmed < refused
    assert "john.smith@example.com" not in p.stderr  # no address in the logs above debug
    # the engine let the due messages go out before it stopped
    kinds = sorted(str(r.message["Subject"]).split(":")[0].split(" from ")[0] for r in smtp.received)
    assert kinds == ["Call summary", "Your call transcript"]
    transcript = next(r for r in smtp.received if r.message["To"] == "john.smith@example.com")
    assert "admin@example.com" in transcript.rcpt_tos
    assert "] Caller: yes, send it to j o h n dot smith at example dot com" in transcript.part("plain")
    assert (tmp_path / "outbox.sqlite3").exists()  # relative to the config's folder


@pytest.mark.timeout(120)
def test_email_test_command(tmp_path: Path, smtp: SmtpServer) -> None:
    good = _config(tmp_path, smtp.email_config(outbox="outbox.sqlite3"))
    p = ava_engine("email", "test", "me@example.com", "--config", str(good), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["status"] == "sent"
    assert [r.message["To"] for r in smtp.received] == ["me@example.com"]
    assert "If you can read it, e-mail delivery works." in smtp.received[0].part("plain")

    bad = _config(tmp_path, smtp.email_config(outbox="outbox.sqlite3", password=PASSWORD + "-wrong"))
    p = ava_engine("email", "test", "me@example.com", "--config", str(bad))
    assert p.returncode == 1
    assert "did not take the test message: 535" in p.stderr and PASSWORD not in p.stdout + p.stderr
    assert len(smtp.received) == 1

    off = _config(tmp_path, {"enabled": False})
    p = ava_engine("email", "test", "me@example.com", "--config", str(off))
    assert p.returncode == 2 and "tools.email.enabled is false" in p.stderr
    p = ava_engine("email", "test", "not an address", "--config", str(good))
    assert p.returncode == 2 and "ADDRESS: 'not an address' is not an e-mail address" in p.stderr


def test_config_errors_name_file_line_and_key(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "tools:\n  email:\n    enabled: true\n    from_address: ava@example.com\n    transport: resend\n",
        encoding="utf-8",
    )
    p = ava_engine("check", "--config", str(config))
    assert p.returncode == 2
    assert f"{config}:5: tools.email.transport: transport resend needs resend_api_key" in p.stderr
    config.write_text(
        "tools:\n  email:\n    use_tls: true\n    starttls: true\n    admin_address: not-an-address\n",
        encoding="utf-8",
    )
    p = ava_engine("check", "--config", str(config))
    assert p.returncode == 2
    assert f"{config}:5: tools.email.admin_address:" in p.stderr


def test_outbox_list_retry_and_drop(tmp_path: Path) -> None:
    config = _config(tmp_path, {"enabled": True, "from_address": "ava@example.com", "outbox": "outbox.sqlite3"})
    p = ava_engine("email", "outbox", "--config", str(config))
    assert p.returncode == 1 and "there is no outbox at" in p.stderr
    box = Outbox(tmp_path / "outbox.sqlite3")
    mid = new_message_id("ava@example.com")
    row = box.enqueue(Email(mid, "transcript", "ava@example.com", ("bob@example.com",), (), "s", "t", "<p>h</p>"))
    box.db.execute("UPDATE messages SET status='failed', attempts=1, last_error=? WHERE id=?", (REFUSED, row.id))
    box.close()
    listed = json.loads(ava_engine("email", "outbox", "--config", str(config), "--json").stdout)
    assert listed["counts"]["failed"] == 1
    (m,) = listed["messages"]
    assert (m["message_id"], m["status"], m["reason"], m["to"]) == (mid, "failed", REFUSED, ["bob@example.com"])
    p = ava_engine("email", "outbox", "--config", str(config))
    assert p.returncode == 0 and f"failed   transcript {mid}" in p.stdout and REFUSED in p.stdout
    p = ava_engine("email", "retry", mid, "--config", str(config))
    assert p.returncode == 0 and "due now" in p.stdout
    pending = json.loads(ava_engine("email", "outbox", "--status", "pending", "--config", str(config), "--json").stdout)
    assert [(x["message_id"], x["attempts"]) for x in pending["messages"]] == [(mid, 0)]
    assert ava_engine("email", "drop", mid, "--config", str(config)).returncode == 0
    p = ava_engine("email", "drop", mid, "--config", str(config))
    assert p.returncode == 1 and "no such message" in p.stderr
    assert json.loads(ava_engine("email", "outbox", "--config", str(config), "--json").stdout)["messages"] == []

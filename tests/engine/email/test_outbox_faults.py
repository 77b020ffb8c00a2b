"""The fault test of issue 17: the SMTP server is down while 20 calls end, and the engine is killed (SIGKILL) in
the middle; once the server is back every summary arrives, none lost.

Calls 1-12 end in a first engine process, which is then killed with SIGKILL while its outbox is retrying; calls
13-20 end in a second process on the same outbox file. Then the SMTP server comes up on its port and the second
engine delivers all 20. Duplicates are counted: none here, since no attempt could reach the server before the kill
(the one duplicate the outbox's guarantee allows — a message in flight at a crash, sent again with the same
Message-ID — is provoked in ``test_outbox.py``).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.engine.email.conftest import mail_settings
from tests.engine.email.smtp_fixture import SmtpServer
from tests.waiting import wait_until_sync

DRIVER = Path(__file__).parent / "engine_driver.py"
ROOT = Path(__file__).resolve().parents[3]


def _engine(config: Path, first: int, last: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(config), str(first), str(last)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_line(proc: subprocess.Popen[str], wanted: str, timeout_s: float = 60.0) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"engine exited before {wanted!r}: {proc.stderr.read() if proc.stderr else ''}")
        if line.strip() == wanted:
            return
    raise AssertionError(f"no {wanted!r} within {timeout_s} s")


def _counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as c:
        return {str(s): int(n) for s, n in c.execute("SELECT status, COUNT(*) FROM messages GROUP BY status")}


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_smtp_down_while_20_calls_end_across_a_sigkill(tmp_path: Path) -> None:
    smtp = SmtpServer(tmp_path)  # not started: the server is down
    db = tmp_path / "outbox.sqlite3"
    email = smtp.email_config(outbox=str(db), summary=True, retry_first_s=0.1, retry_max_s=0.4, max_attempts=100)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(mail_settings(email, ["hangup_call"])), encoding="utf-8")

    first = _engine(config, 1, 12)
    try:
        _wait_line(first, "ended 12")
        time.sleep(0.5)  # a few failed attempts against the closed port
        before_kill = _counts(db)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
    assert sum(before_kill.values()) == 12 and before_kill.get("sent", 0) == 0
    assert first.returncode == -signal.SIGKILL

    second = _engine(config, 13, 20)
    try:
        _wait_line(second, "done")
        assert _counts(db).get("sent", 0) == 0
        smtp.start()  # the server comes back
        wait_until_sync(lambda: _counts(db).get("sent", 0) >= 20, within=60, what="all 20 mails sent")
        counts = _counts(db)
    finally:
        second.kill()
        second.wait(timeout=10)
        smtp.stop()
    assert counts == {"sent": 20}, counts
    received = smtp.received
    callers = Counter(str(r.message["Subject"]).split(" on ")[0].removeprefix("Call summary: ") for r in received)
    assert set(callers) == {f"caller {n}" for n in range(1, 21)}  # none lost
    ids = Counter(str(r.message["Message-ID"]) for r in received)
    duplicates = sum(n - 1 for n in ids.values())
    assert duplicates == 0 and len(received) == 20
    for r in received:
        assert r.message["To"] == "admin@example.com"
        n = int(str(r.message["Subject"]).split(" on ")[0].rsplit(" ", 1)[1])
        assert f"this is call number {n}" in r.part("plain")

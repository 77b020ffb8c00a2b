"""Shared pieces of the e-mail tests: a real SMTP server on loopback and settings for an engine that mails."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.email.smtp_fixture import SmtpServer

SCRIPT = Path(__file__).parent / "scripts" / "mail.yaml"
AVA_ENGINE = Path(__file__).resolve().parents[3] / ".venv" / "bin" / "ava-engine"


async def ava_engine(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``ava-engine`` with ``args``, its output as text (from a test on the event loop)."""
    proc = await asyncio.create_subprocess_exec(str(AVA_ENGINE), *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    async with asyncio.timeout(60):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return subprocess.CompletedProcess([str(AVA_ENGINE), *args], proc.returncode, out.decode(), err.decode())


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    server = SmtpServer(tmp_path)
    server.start()
    yield server
    server.stop()


def mail_settings(email: dict[str, Any], tools: list[str] | None = None) -> dict[str, Any]:
    """A config (as a dict) with one scripted context ``desk`` that may use the e-mail tools."""
    return {
        "engine": {"http": {"enabled": False}},
        "mcp": {"enabled": False},
        "providers": {"desk": {"type": "scripted", "script": str(SCRIPT)}},
        "contexts": {
            "desk": {
                "provider": "desk",
                "prompt": "You help callers.",
                "tools": tools or ["request_transcript", "send_email_summary", "hangup_call"],
            }
        },
        "tools": {"email": email},
    }

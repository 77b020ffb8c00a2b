"""A call whose words hold a lone surrogate still gets its summary e-mail: the record is made valid text before it is
stored (SQLite refused it, the call-end hook failed, and the summary was never queued)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.app import Engine
from engine.config.models import Settings
from engine.events import EmailSent
from tests.engine.email.conftest import mail_settings
from tests.engine.email.smtp_fixture import SmtpServer


async def test_a_lone_surrogate_in_the_call_does_not_cost_its_summary(tmp_path: Path, smtp: SmtpServer) -> None:
    cfg = mail_settings(smtp.email_config(outbox=str(tmp_path / "outbox.sqlite3"), summary=True))
    engine = Engine(Settings.model_validate(cfg), config_path=tmp_path / "config.yaml")
    async with engine:
        with engine.bus.subscribe(types={EmailSent.type}) as sent:
            call = await engine.start_call("desk", caller_name="Ann \udcff")
            await engine.user_said(call.call_id, "my name is \ud800 and that is all")
            await engine.end_call(call.call_id, "caller hung up")
            async with asyncio.timeout(20):
                ev = await sent.get()
        assert isinstance(ev, EmailSent) and ev.kind == "summary"
    [got] = smtp.received
    text = got.part("plain")
    assert "my name is \ufffd and that is all" in text and "Ann \ufffd" in text

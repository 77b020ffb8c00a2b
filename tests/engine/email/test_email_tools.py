"""The e-mail tools' edges: the read-back checks the domain against a real DNS server on loopback (a domain that
does not exist is refused, a DNS server that does not answer is not "invalid"), user templates replace the built-in
ones and stay escaped, e-mail off is a polite refusal, and the metric counts each kind and status.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.events import EmailFailed, EmailSent, ToolCompleted
from tests.engine.email.conftest import mail_settings
from tests.engine.email.smtp_fixture import SmtpServer
from tests.fixtures.dns_server import RunningDns, Zone, dns_server


@pytest.fixture
async def dns() -> AsyncIterator[RunningDns]:
    zone = Zone({("mail.example", "MX"): ["10 mx1.mail.example."]}, silent=frozenset({"slow.example"}))
    async with dns_server(zone) as running:
        yield running


async def test_the_read_back_refuses_a_domain_that_takes_no_mail(tmp_path: Path, dns: RunningDns) -> None:
    email = {
        "enabled": True,
        "from_address": "ava@example.com",
        "outbox": str(tmp_path / "o.sqlite3"),
        "nameservers": dns.nameservers,
        "dns_port": dns.port,
    }
    engine = Engine(Settings.model_validate(mail_settings(email)), config_path=tmp_path / "config.yaml")
    async with engine:
        call = await engine.start_call("desk")
        reply = await engine.user_said(call.call_id, "email me the transcript at bob at nothing dot example")
        assert "cannot receive email" in reply.text and "bob at nothing dot example" in reply.text
        # the caller insists: still not read back, so confirmed is not honoured
        reply = await engine.user_said(call.call_id, "yes, send it to bob at nothing dot example")
        assert "cannot receive email" in reply.text
        reply = await engine.user_said(call.call_id, "email me the transcript at bob at mail dot example")
        assert "Is that right?" in reply.text
        reply = await engine.user_said(call.call_id, "email me the transcript at bob at slow dot example")
        assert "Is that right?" in reply.text  # no answer from DNS is "unknown": worth a try
        assert sum(engine.email.outbox.counts().values()) == 0
        await engine.end_call(call.call_id)


async def test_user_templates_replace_the_built_in_ones_and_stay_escaped(tmp_path: Path, smtp: SmtpServer) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    (folder / "summary.txt").write_text("Custom for $caller ($duration)\n$transcript\n", encoding="utf-8")
    (folder / "summary.html").write_text("<div class='mine'>$caller</div>$transcript $unknown_stays", encoding="utf-8")
    email = smtp.email_config(
        outbox=str(tmp_path / "o.sqlite3"), summary=True, templates="mail", summary_subject="Call from {caller}"
    )
    engine = Engine(Settings.model_validate(mail_settings(email)), config_path=tmp_path / "config.yaml")
    async with engine:
        with engine.bus.subscribe(types={EmailSent.type}) as sent:
            call = await engine.start_call("desk", caller_name="Eve <i>")
            await engine.user_said(call.call_id, "hello <script>x</script>")
            await engine.end_call(call.call_id)
            async with asyncio.timeout(20):
                await sent.get()
        metrics = engine.metrics.render().decode()
    assert 'ai_agent_email_total{kind="summary",status="queued"} 1.0' in metrics
    assert 'ai_agent_email_total{kind="summary",status="sent"} 1.0' in metrics
    (msg,) = smtp.received
    assert msg.message["Subject"] == "Call from Eve <i>"
    text, html = msg.part("plain"), msg.part("html")
    assert text.startswith("Custom for Eve <i> (0 s)") and "] Caller: hello <script>x</script>" in text
    assert html.startswith("<div class='mine'>Eve &lt;i&gt;</div>") and "$unknown_stays" in html
    assert "hello &lt;script&gt;x&lt;/script&gt;" in html and "<script>" not in html


async def test_with_e_mail_off_the_tools_say_so_and_store_nothing(tmp_path: Path) -> None:
    engine = Engine(Settings.model_validate(mail_settings({"enabled": False})), config_path=tmp_path / "c.yaml")
    async with engine:
        done = engine.bus.subscribe(types={ToolCompleted.type})
        call = await engine.start_call("desk")
        reply = await engine.user_said(call.call_id, "email me the transcript at bob at mail dot example")
        assert "can't send emails right now." in reply.text and "tools.email" not in reply.text  # said to a caller
        reply = await engine.user_said(call.call_id, "send the summary")
        assert "can't send emails right now." in reply.text and "tools.email" not in reply.text
        await engine.end_call(call.call_id)
        # the reason, for the operator: the log and the tool row
        said = [e.message for e in done.drain() if isinstance(e, ToolCompleted)]
        assert "can't send emails right now (e-mail is off" in said[0] and "cannot be sent: e-mail is off" in said[1]
    assert engine.email._outbox is None  # never opened: no file in the user data folder


async def test_a_reload_turns_e_mail_on_and_points_it_at_another_server(tmp_path: Path, smtp: SmtpServer) -> None:
    engine = Engine(Settings.model_validate(mail_settings({"enabled": False})), config_path=tmp_path / "c.yaml")
    async with engine:
        assert "email-outbox" not in engine.tasks.names()
        down = smtp.email_config(outbox=str(tmp_path / "o.sqlite3"), smtp_port=9, retry_first_s=60, retry_max_s=60)
        await engine.reload(Settings.model_validate(mail_settings(down)))
        assert "email-outbox" in engine.tasks.names()
        with engine.bus.subscribe(types={EmailSent.type, EmailFailed.type}) as sent:
            message_id = engine.email.queue_test("me@example.com")
            async with asyncio.timeout(20):
                failed = await sent.get()
            assert isinstance(failed, EmailFailed) and not failed.final and failed.message_id == message_id
            row = engine.email.outbox.get(message_id)
            assert row is not None and row.status == "pending"  # port 9 refused it: a minute to its retry
            await engine.reload(
                Settings.model_validate(mail_settings(smtp.email_config(outbox=str(tmp_path / "o.sqlite3"))))
            )
            assert engine.email.outbox.retry(message_id)  # the operator's "retry now"
            async with asyncio.timeout(20):
                ev = await sent.get()
        assert isinstance(ev, EmailSent) and ev.message_id == message_id and ev.attempts == 1
    assert [r.message["To"] for r in smtp.received] == ["me@example.com"]

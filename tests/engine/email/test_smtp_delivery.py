"""The e-mail tools deliver to a real SMTP server (aiosmtpd on loopback, STARTTLS and AUTH required).

A scripted call asks for its transcript (read-back first, then confirmed), says something with markup in it and
ends; the server receives the caller's transcript (admin in BCC) and the admin's summary, and the test reads them
as a mail client would: headers, both alternatives, the timestamps, the tool calls, escaping.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.app import Engine
from engine.config.models import Settings
from engine.events import EmailSent
from tests.engine.email.conftest import mail_settings
from tests.engine.email.smtp_fixture import Received, SmtpServer
from tests.waiting import wait_until

ADDRESS = "john.smith@example.com"
SAID = "john dot smith at example dot com"
MARKUP = "I said <script>alert('x')</script> & <b>bold</b>"


async def _wait_sent(engine: Engine, n: int, timeout_s: float = 20.0) -> list[EmailSent]:
    seen: list[EmailSent] = []
    with engine.bus.subscribe(types={EmailSent.type}) as sub:
        async with asyncio.timeout(timeout_s):
            while len(seen) < n:
                ev = await sub.get()
                assert isinstance(ev, EmailSent)
                seen.append(ev)
    return seen


def _by_kind(received: list[Received]) -> dict[str, Received]:
    out: dict[str, Received] = {}
    for r in received:
        kind = "summary" if str(r.message["Subject"]).startswith("Call summary") else "transcript"
        assert kind not in out, f"two {kind} messages"
        out[kind] = r
    return out


async def test_transcript_and_summary_reach_a_real_smtp_server(tmp_path: Path, smtp: SmtpServer) -> None:
    cfg = mail_settings(smtp.email_config(outbox=str(tmp_path / "outbox.sqlite3"), summary=True))
    engine = Engine(Settings.model_validate(cfg), config_path=tmp_path / "config.yaml")
    async with engine:
        with engine.bus.subscribe(types={EmailSent.type}) as sent:
            call = await engine.start_call("desk", caller_name="Bob <img src=x>", caller_number="+15551234")
            first = await engine.user_said(call.call_id, f"email me the transcript at {SAID}")
            assert "Is that right?" in first.text and SAID in first.text
            assert engine.email.outbox.counts()["held"] == 0  # the read-back sends and stores nothing
            done = await engine.user_said(call.call_id, f"yes, send it to {SAID}")
            assert "will be emailed" in done.text
            assert engine.email.outbox.counts()["held"] == 1  # stored, waiting for the end of the call
            again = await engine.user_said(call.call_id, f"yes, send it to {SAID}")
            assert "not be sent there twice" in again.text
            await engine.user_said(call.call_id, MARKUP)
            await engine.end_call(call.call_id, "caller hung up")
            async with asyncio.timeout(20):
                events = [await sent.get() for _ in range(2)]
        assert {e.kind for e in events if isinstance(e, EmailSent)} == {"transcript", "summary"}
        counts = engine.email.outbox.counts()
        assert counts["sent"] == 2 and counts["pending"] == counts["held"] == counts["failed"] == 0

    got = _by_kind(smtp.received)
    t, s = got["transcript"], got["summary"]
    # transcript: to the caller, the admin in the envelope only (BCC), no Bcc header
    assert t.message["To"] == ADDRESS and "Bcc" not in t.message
    assert sorted(t.rcpt_tos) == sorted([ADDRESS, "admin@example.com"])
    assert t.mail_from == "ava@example.com"
    assert t.message["Subject"].startswith("Your call transcript from ")
    assert t.message["Message-ID"] in {r.email.message_id for r in engine.email.outbox.rows("sent")}
    text, html = t.part("plain"), t.part("html")
    assert MARKUP in text  # the plain part says it as it was said
    assert "<script>" not in html and "<b>bold</b>" not in html  # never markup in the HTML part
    assert "I said &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert "] Caller: " + MARKUP in text and "] Agent: Help desk. How can I help?" in text
    assert "[+00:00 " in text  # timestamps from the start of the call
    # the whole call, even what was said after the confirmation
    assert text.index("email me the transcript") < text.index(MARKUP)
    # summary: to the admin, caller, duration, transcript, tool calls with results, transfer outcome
    assert s.message["To"] == "admin@example.com" and s.rcpt_tos == ["admin@example.com"]
    assert s.message["Subject"].startswith("Call summary: Bob <img src=x> on ")
    stext, shtml = s.part("plain"), s.part("html")
    assert "Caller:     Bob <img src=x>" in stext and "Bob &lt;img src=x&gt;" in shtml and "<img" not in shtml
    assert "+15551234" in stext and "Ended:      caller hung up" in stext and "Transfer:   none" in stext
    assert 'request_transcript({"confirmed": true, "email_address": "john dot smith at example dot com"})' in stext
    assert "-> success: Done: the transcript will be emailed" in stext
    assert "-> error: The transcript is already going" in stext
    assert MARKUP in stext and "&lt;script&gt;" in shtml


async def test_no_summary_when_off_and_a_manual_one_on_request(tmp_path: Path, smtp: SmtpServer) -> None:
    cfg = mail_settings(smtp.email_config(outbox=str(tmp_path / "o.sqlite3"), summary=False))
    engine = Engine(Settings.model_validate(cfg), config_path=tmp_path / "config.yaml")
    async with engine:
        call = await engine.start_call("desk", caller_name="Ann")
        reply = await engine.user_said(call.call_id, "please send the summary")
        assert "queued for the administrator" in reply.text
        await _wait_sent(engine, 1)
        await engine.end_call(call.call_id)
        await wait_until(lambda: engine.email.outbox.counts()["pending"] == 0, what="the outbox drained")
        assert engine.email.outbox.counts()["sent"] == 1
    assert len(smtp.received) == 1 and smtp.received[0].message["To"] == "admin@example.com"


async def test_an_unparseable_address_is_refused_and_nothing_is_stored(tmp_path: Path, smtp: SmtpServer) -> None:
    cfg = mail_settings(smtp.email_config(outbox=str(tmp_path / "o.sqlite3")))
    engine = Engine(Settings.model_validate(cfg), config_path=tmp_path / "config.yaml")
    async with engine:
        call = await engine.start_call("desk")
        reply = await engine.user_said(call.call_id, "yes, send it to the moon please")
        assert "not an email address I can use" in reply.text
        # confirmed for an address never read back: it is read back first, nothing is stored
        reply = await engine.user_said(call.call_id, f"yes, send it to {SAID}")
        assert "Is that right?" in reply.text
        assert sum(engine.email.outbox.counts().values()) == 0
        await engine.end_call(call.call_id)
    assert smtp.received == []


async def test_a_context_overrides_the_global_summary_switch(tmp_path: Path, smtp: SmtpServer) -> None:
    """tools.email.summary is the default; a context's email_summary says otherwise for its calls."""
    cfg = mail_settings(smtp.email_config(outbox=str(tmp_path / "o.sqlite3"), summary=False))
    cfg["contexts"]["vip"] = {**cfg["contexts"]["desk"], "email_summary": True}
    cfg["contexts"]["quiet"] = {**cfg["contexts"]["desk"], "email_summary": False}
    engine = Engine(Settings.model_validate(cfg), config_path=tmp_path / "config.yaml")
    async with engine:
        # the second vip call is the later marker: once its summary is out, a summary of quiet or desk (stored
        # before it) would have been sent or be waiting too
        for context in ("desk", "vip", "quiet", "vip"):
            call = await engine.start_call(context, caller_name=context)
            await engine.end_call(call.call_id)
        await _wait_sent(engine, 2)
        assert sum(engine.email.outbox.counts().values()) == 2  # nothing else was stored
    assert len(smtp.received) == 2 and all("vip" in m.part("plain") for m in smtp.received)

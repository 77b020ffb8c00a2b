"""Per-recipient outcomes and international addresses against the strict SMTP fixture (issue "Phone and mail under
real timing", items 9, 10 and 13).

A caller refused at RCPT while the admin's BCC is accepted: the caller's message is ``failed`` with the server's code
and text, the BCC's delivery is kept apart, and the events and ``ava-engine email outbox`` show both. A temporary
refusal retries only the recipient that was refused. Domains go out as IDNA A-labels; a non-ASCII local part goes
only to a server that offers SMTPUTF8 and is otherwise a permanent failure saying why; a caller who spells a local
part over 64 octets or an address over 254 hears why it cannot be used.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import yaml

from engine.app import Engine
from engine.config import load_settings
from engine.config.models.tools import EmailConfig
from engine.core.backoff import Backoff
from engine.email.delivery import SmtpTransport
from engine.email.outbox import Email, Outbox, new_message_id
from engine.email.spoken import AddressRefusal, parse_spoken_address
from engine.events import EmailFailed
from tests.engine.email.conftest import ava_engine, mail_settings
from tests.engine.email.smtp_fixture import SmtpServer

CALLER = "caller@example.com"
ADMIN = "admin@example.com"


def _email(to: str, bcc: tuple[str, ...] = ()) -> Email:
    sender = "ava@example.com"
    return Email(new_message_id(sender), "transcript", sender, (to,), bcc, "your transcript", "text ü", "<p>h</p>")


def _box(tmp_path: Path) -> Outbox:
    return Outbox(tmp_path / "o.sqlite3", backoff=Backoff(0.02, 0.1))


def _config(tmp_path: Path, smtp: SmtpServer) -> Path:
    config = tmp_path / "config.yaml"
    email = smtp.email_config(outbox=str(tmp_path / "outbox.sqlite3"), summary=False)
    config.write_text(yaml.safe_dump(mail_settings(email)), encoding="utf-8")
    return config


async def test_a_refused_caller_fails_with_the_servers_answer_and_the_bcc_is_recorded_apart(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    smtp.handler.refuse[CALLER] = f"550 5.1.1 <{CALLER}>: no such user here"
    config = _config(tmp_path, smtp)
    engine = Engine(load_settings(config), config_path=config)
    async with engine:
        with engine.bus.subscribe(types={EmailFailed.type}) as sub:
            call = await engine.start_call("desk", caller_name="Ann")
            said = "caller at example dot com"
            await engine.user_said(call.call_id, f"email me the transcript at {said}")
            done = await engine.user_said(call.call_id, f"yes, send it to {said}")
            assert "will be emailed" in done.text
            await engine.end_call(call.call_id, "caller hung up")
            async with asyncio.timeout(20):
                ev = await sub.get()
    assert isinstance(ev, EmailFailed) and ev.kind == "transcript" and ev.final
    assert "550 5.1.1" in ev.reason and "no such user here" in ev.reason and CALLER not in ev.reason
    outcomes = {(r.role, r.status) for r in ev.recipients}
    assert outcomes == {("to", "failed"), ("bcc", "sent")}
    refused = next(r for r in ev.recipients if r.role == "to")
    assert refused.reason is not None and refused.reason.startswith("550 5.1.1") and CALLER not in refused.reason
    # the server got it for the admin only, once
    assert [r.rcpt_tos for r in smtp.received] == [[ADMIN]]

    out = await ava_engine("--config", str(config), "email", "outbox", "--json")
    assert out.returncode == 0, out.stderr
    (message,) = json.loads(out.stdout)["messages"]
    assert message["status"] == "failed" and message["reason"].startswith("550 5.1.1")
    by_address = {r["address"]: r for r in message["recipients"]}
    assert by_address[CALLER]["role"] == "to" and by_address[CALLER]["status"] == "failed"
    assert by_address[CALLER]["reason"].startswith("550 5.1.1")
    assert by_address[ADMIN] == {"address": ADMIN, "role": "bcc", "status": "sent", "reason": None}
    text = await ava_engine("--config", str(config), "email", "outbox")
    assert f"{CALLER} failed 550 5.1.1" in text.stdout and f"{ADMIN} (bcc) sent" in text.stdout


async def test_a_temporary_refusal_retries_only_the_refused_recipient(tmp_path: Path, smtp: SmtpServer) -> None:
    smtp.handler.refuse[CALLER] = "452 4.2.2 mailbox full, try later"
    box = _box(tmp_path)
    transport = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    try:
        first = await box.send_one(box.enqueue(_email(CALLER, (ADMIN,))), transport)
        assert first.status == "pending" and first.last_error is not None and "452 4.2.2" in first.last_error
        assert {d.address: d.status for d in first.deliveries} == {CALLER: "pending", ADMIN: "sent"}
        del smtp.handler.refuse[CALLER]
        second = await box.send_one(first, transport)
    finally:
        await transport.aclose()
    assert second.status == "sent" and second.attempts == 2 and not second.resent
    assert {d.address: d.status for d in second.deliveries} == {CALLER: "sent", ADMIN: "sent"}
    # the admin got it once; the retry went to the caller alone, with the same message
    assert [r.rcpt_tos for r in smtp.received] == [[ADMIN], [CALLER]]
    assert len({str(r.message["Message-ID"]) for r in smtp.received}) == 1


async def test_a_domain_goes_out_as_its_idna_a_label(tmp_path: Path, smtp: SmtpServer) -> None:
    """The fixture offers no SMTPUTF8 and refuses any non-ASCII address, as real servers do."""
    box = _box(tmp_path)
    transport = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    try:
        got = await box.send_one(box.enqueue(_email("jose@bücher.example", (ADMIN,))), transport)
    finally:
        await transport.aclose()
    assert got.status == "sent", got.last_error
    (r,) = smtp.received
    assert r.rcpt_tos == ["jose@xn--bcher-kva.example", ADMIN]
    assert r.message["To"] == "jose@xn--bcher-kva.example"


async def test_a_non_ascii_local_part_needs_smtputf8(tmp_path: Path, smtp: SmtpServer) -> None:
    box = _box(tmp_path)
    plain = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    try:
        got = await box.send_one(box.enqueue(_email("jörg@bücher.example")), plain)
    finally:
        await plain.aclose()
    assert got.status == "failed" and got.attempts == 1  # permanent: no retry can help
    assert got.last_error is not None and "SMTPUTF8" in got.last_error and "non-ASCII" in got.last_error
    assert smtp.received == [] and smtp.handler.rcpts == []  # refused before any RCPT: said why, not a 553

    (tmp_path / "utf8").mkdir()
    utf8 = SmtpServer(tmp_path / "utf8", smtputf8=True)
    utf8.start()
    transport = SmtpTransport(EmailConfig.model_validate(utf8.email_config()))
    try:
        sent = await box.send_one(box.enqueue(_email("jörg@bücher.example", (ADMIN,))), transport)
    finally:
        await transport.aclose()
        utf8.stop()
    assert sent.status == "sent", sent.last_error
    (r,) = utf8.received
    assert r.rcpt_tos == ["jörg@xn--bcher-kva.example", ADMIN]
    # the header is raw UTF-8 (RFC 6532), which the parser keeps as escaped bytes
    assert str(r.message["To"]).encode("utf-8", "surrogateescape").decode() == "jörg@xn--bcher-kva.example"


def test_a_spelled_local_part_over_64_octets_or_address_over_254_is_refused_with_why() -> None:
    long_local = parse_spoken_address("a" * 65 + "@example.com")
    assert isinstance(long_local, AddressRefusal)
    assert "64" in long_local.reason and "65" in long_local.reason and "before the 'at'" in long_local.reason
    octets = parse_spoken_address("ö" * 33 + "@example.com")  # 33 characters, 66 octets
    assert isinstance(octets, AddressRefusal) and "64" in octets.reason
    domain = ".".join(["b" * 60] * 4) + ".com"
    whole = parse_spoken_address("a" * 20 + "@" + domain)
    assert isinstance(whole, AddressRefusal)
    assert "254" in whole.reason and "the whole address" in whole.reason
    fine = parse_spoken_address("a" * 64 + "@example.com")
    assert not isinstance(fine, AddressRefusal)


async def test_the_caller_hears_why_a_too_long_address_cannot_be_used(tmp_path: Path, smtp: SmtpServer) -> None:
    config = _config(tmp_path, smtp)
    engine = Engine(load_settings(config), config_path=config)
    async with engine:
        call = await engine.start_call("desk")
        reply = await engine.user_said(call.call_id, "email me the transcript at " + "x" * 70 + "@example.com")
        await engine.end_call(call.call_id)
        assert sum(engine.email.outbox.counts().values()) == 0
    assert "not an email address I can use" in reply.text and "64" in reply.text

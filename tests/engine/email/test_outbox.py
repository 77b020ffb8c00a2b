"""The outbox against real servers on loopback: retries on a 451 and a refused connection, a 550 kept as ``failed``
with the server's reason, the Resend request shape, and what a crash between "sent" and "done" does.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from engine.config.models.tools import EmailConfig
from engine.core.backoff import Backoff
from engine.email.delivery import ResendTransport, SmtpTransport
from engine.email.outbox import Email, Outbox, Row, new_message_id
from tests.engine.email.smtp_fixture import SmtpServer, free_port
from tests.waiting import forever, wait_until


def _email(n: int = 1, bcc: tuple[str, ...] = ()) -> Email:
    return Email(
        new_message_id("ava@example.com"),
        "test",
        "ava@example.com",
        (f"user{n}@example.com",),
        bcc,
        f"subject {n}",
        f"text {n}",
        f"<p>html {n}</p>",
    )


def _outbox(tmp_path: Path, changes: list[tuple[str, str]] | None = None, max_attempts: int = 10) -> Outbox:
    def note(row: Row, before: str) -> None:
        if changes is not None:
            changes.append((before, row.status))

    return Outbox(tmp_path / "o.sqlite3", backoff=Backoff(0.02, 0.1), max_attempts=max_attempts, notify=note)


async def test_temporary_failures_are_retried_until_the_server_takes_it(tmp_path: Path, smtp: SmtpServer) -> None:
    smtp.handler.reply = "451 4.3.0 mailbox busy, try later"
    changes: list[tuple[str, str]] = []
    box = _outbox(tmp_path, changes)
    transport = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    worker = asyncio.create_task(box.run(lambda: transport))
    try:
        row = box.enqueue(_email())
        await wait_until(lambda: (r := box.get(row.email.message_id)) is not None and r.attempts >= 2)
        got = box.get(row.email.message_id)
        assert got is not None and got.status in ("pending", "sending")
        assert got.last_error is not None and "451" in got.last_error
        smtp.handler.reply = None
        await wait_until(lambda: box.counts()["sent"] == 1)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
        await transport.aclose()
    assert ("", "pending") == changes[0] and ("sending", "sent") == changes[-1]
    assert len(smtp.received) == 1


async def test_a_permanent_refusal_ends_failed_with_the_reason(tmp_path: Path, smtp: SmtpServer) -> None:
    smtp.handler.reply = "550 5.1.1 <user1@example.com>: no such user"
    box = _outbox(tmp_path)
    transport = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    row = box.enqueue(_email())
    got = await box.send_one(row, transport)
    await transport.aclose()
    assert got.status == "failed" and got.attempts == 1
    assert got.last_error is not None and got.last_error.startswith("550 5.1.1") and "no such user" in got.last_error


async def test_wrong_password_is_permanent_and_a_down_server_temporary(tmp_path: Path, smtp: SmtpServer) -> None:
    box = _outbox(tmp_path, max_attempts=2)
    bad = SmtpTransport(EmailConfig.model_validate(smtp.email_config(password="wrong")))
    got = await box.send_one(box.enqueue(_email(1)), bad)
    assert got.status == "failed" and got.last_error is not None and got.last_error.startswith("535")
    down = SmtpTransport(EmailConfig.model_validate(smtp.email_config(smtp_port=free_port())))
    got = await box.send_one(box.enqueue(_email(2)), down)
    assert got.status == "pending" and got.next_at > got.updated_at  # retried later
    got = await box.send_one(got, down)
    assert got.status == "failed" and got.last_error is not None and "gave up after 2 attempts" in got.last_error
    assert smtp.received == []


async def test_pending_rows_survive_reopening_and_an_interrupted_send_is_resent_with_its_message_id(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    box = _outbox(tmp_path)
    rows = [box.enqueue(_email(n)) for n in range(3)]
    transport = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    await box.send_one(rows[0], transport)  # sent and marked done
    # the crash window: the server took row 1, the process died before marking it sent
    await transport.send(rows[1].email)
    box.db.execute("UPDATE messages SET status='sending' WHERE id=?", (rows[1].id,))
    box.close()  # the process is gone; a new one opens the same file
    again = _outbox(tmp_path)
    again.open()
    assert again.counts() == {"held": 0, "pending": 2, "sending": 0, "sent": 1, "failed": 0}
    resent = again.get(rows[1].email.message_id)
    assert resent is not None and resent.resent and resent.status == "pending"
    worker = asyncio.create_task(again.run(lambda: transport))
    try:
        await wait_until(lambda: again.counts()["sent"] == 3)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
        await transport.aclose()
    ids = [str(r.message["Message-ID"]) for r in smtp.received]
    # the one duplicate the guarantee allows: the message in flight at the crash, with the same Message-ID
    assert len(ids) == 4 and len(set(ids)) == 3 and ids.count(rows[1].email.message_id) == 2


async def test_resend_request_shape_retries_and_permanent_errors(tmp_path: Path) -> None:
    requests: list[dict[str, Any]] = []
    answers = [web.json_response({"statusCode": 500, "message": "internal"}, status=500)]

    async def emails(request: web.Request) -> web.Response:
        requests.append(
            {
                "path": request.path,
                "auth": request.headers.get("Authorization"),
                "key": request.headers.get("Idempotency-Key"),
                "type": request.headers.get("Content-Type", ""),
                "body": json.loads(await request.text()),
            }
        )
        if answers:
            return answers.pop(0)
        if requests[-1]["body"]["to"] == ["bad@example.com"]:
            return web.json_response(
                {"statusCode": 422, "name": "validation_error", "message": "Invalid `to` field."}, status=422
            )
        return web.json_response({"id": "49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"})

    app = web.Application()
    app.router.add_post("/emails", emails)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    cfg = EmailConfig.model_validate(
        {
            "enabled": True,
            "transport": "resend",
            "resend_api_key": "re_test_123",
            "resend_url": f"http://127.0.0.1:{port}",
            "from_address": "ava@example.com",
        }
    )
    transport = ResendTransport(cfg)
    box = _outbox(tmp_path)
    try:
        row = box.enqueue(_email(1, bcc=("admin@example.com",)))
        first = await box.send_one(row, transport)
        assert first.status == "pending" and first.last_error is not None and "HTTP 500" in first.last_error
        second = await box.send_one(first, transport)
        assert second.status == "sent" and second.attempts == 2
        bad = Email(
            new_message_id("ava@example.com"), "test", "ava@example.com", ("bad@example.com",), (), "s", "t", "<p>h</p>"
        )
        failed = await box.send_one(box.enqueue(bad), transport)
        assert failed.status == "failed" and failed.last_error is not None and "422" in failed.last_error
    finally:
        await transport.aclose()
        await runner.cleanup()
    r = requests[0]
    assert r["path"] == "/emails" and r["auth"] == "Bearer re_test_123" and r["type"].startswith("application/json")
    assert r["body"] == {
        "from": "ava@example.com",
        "to": ["user1@example.com"],
        "bcc": ["admin@example.com"],
        "subject": "subject 1",
        "html": "<p>html 1</p>",
        "text": "text 1",
    }
    # the retry carries the same idempotency key (the Message-ID), so Resend sends it once
    assert requests[0]["key"] == requests[1]["key"] == row.email.message_id.strip("<>")
    assert requests[2]["key"] != requests[0]["key"]


async def test_two_engines_on_one_file_never_send_the_same_row_nor_take_a_live_engines_rows(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    first, second = _outbox(tmp_path), _outbox(tmp_path)
    first.open()
    held = first.hold(_email(1))  # a transcript waiting for first's live call
    due = first.enqueue(_email(2))
    second.open()  # another engine on the same file (ava-engine email test beside serve)
    got = second.get(held.email.message_id)
    assert got is not None and got.status == "held"  # first still runs: its held row is left alone
    transport = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    try:
        sent = await second.send_one(due, transport)
        assert sent.status == "sent"
        again = await first.send_one(due, transport)  # first saw the same row pending a moment ago
        assert again.status == "sent" and again.attempts == 1  # not claimed, not sent twice
        # an engine that died (a pid that is not running) leaves rows that the next recovery takes over
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
        await proc.wait()  # its pid is free now
        first.db.execute("UPDATE messages SET owner=? WHERE id=?", (f"{proc.pid}:gone", held.id))
        assert second.recover() == 1
        got = second.get(held.email.message_id)
        assert got is not None and got.status == "pending" and not got.resent
    finally:
        await transport.aclose()
    assert len(smtp.received) == 1


async def test_a_message_stored_while_the_connection_closes_goes_out_at_once(tmp_path: Path) -> None:
    """The worker closes its connection between bursts; a message stored during that close was left until the next
    recovery sweep (a minute), because the wake-up was cleared after the close."""
    box = _outbox(tmp_path)
    sent: list[str] = []
    closing = asyncio.Event()
    release = asyncio.Event()

    class SlowClose:
        name = "slow-close"

        async def send(self, email: Email) -> None:
            sent.append(email.subject)

        async def aclose(self) -> None:
            closing.set()
            await release.wait()

    transport = SlowClose()
    worker = asyncio.create_task(box.run(lambda: transport))
    try:
        box.enqueue(_email(1))
        await wait_until(lambda: sent == ["subject 1"] and closing.is_set())  # the burst is over: the close begins
        box.enqueue(_email(2))  # stored while the connection is closing
        release.set()
        await wait_until(lambda: sent == ["subject 1", "subject 2"], within=5.0)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def test_a_cancel_the_transport_swallows_still_stops_the_worker(tmp_path: Path) -> None:
    """``asyncio.wait_for`` on 3.11 (inside aiosmtplib's quit) can swallow a cancellation that lands as it finishes:
    the worker then went back to its 30-second wait, and stopping it hung (found by CI: a test stuck 120 s)."""
    box = _outbox(tmp_path)
    closing = asyncio.Event()

    class SwallowingClose:
        name = "swallowing-close"

        async def send(self, email: Email) -> None:
            return None

        async def aclose(self) -> None:
            closing.set()
            try:
                await forever()
            except asyncio.CancelledError:  # what such a wait_for does: the cancel is lost, the close returns
                pass

    transport = SwallowingClose()
    worker = asyncio.create_task(box.run(lambda: transport))
    box.enqueue(_email(1))
    await wait_until(closing.is_set)  # the burst is over: the worker closes the connection
    worker.cancel()
    done, _ = await asyncio.wait({worker}, timeout=5.0)
    assert worker in done and worker.cancelled()


def test_resend_gets_international_domains_as_a_labels() -> None:
    """Resend validates addresses as ASCII: an IDN domain goes as its A-label, as the SMTP transport sends it."""
    cfg = EmailConfig.model_validate(
        {"enabled": True, "transport": "resend", "resend_api_key": "re_test_123", "from_address": "ava@example.com"}
    )
    email = Email(
        new_message_id("ava@bücher.example"),
        "test",
        "ava@bücher.example",
        ("anna@münchen.example",),
        ("chef@bücher.example",),
        "s",
        "t",
        "<p>h</p>",
    )
    body = ResendTransport(cfg).payload(email)
    assert body["from"] == "ava@xn--bcher-kva.example"
    assert body["to"] == ["anna@xn--mnchen-3ya.example"]
    assert body["bcc"] == ["chef@xn--bcher-kva.example"]

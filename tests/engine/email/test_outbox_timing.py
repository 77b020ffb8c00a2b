"""The outbox under real timing (issue "Phone and mail under real timing", items 11-13): a 24 h outage loses
nothing with the default settings, the maximum age is what ends a message that keeps failing temporarily, a storm
of 4xx is ridden out, a server that drops the connection after DATA gets its retry marked ``resent``, and a stop
during a send leaves no unmarked duplicate.

Time is an injected clock (the outbox's ``clock``): nothing here waits for a backoff or measures wall time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path

import pytest
import yaml

from engine.app import Engine
from engine.config import load_settings
from engine.config.models.tools import EmailConfig
from engine.core.backoff import Backoff
from engine.email.delivery import SmtpTransport
from engine.email.outbox import Email, Outbox, Row, new_message_id
from engine.events import EmailSent
from tests.engine.email.conftest import ava_engine, mail_settings
from tests.engine.email.smtp_fixture import SmtpServer

HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def _email(n: int = 1) -> Email:
    sender = "ava@example.com"
    return Email(new_message_id(sender), "summary", sender, ("admin@example.com",), (), f"s{n}", "t", "<p>h</p>")


def _defaults(smtp: SmtpServer, **over: object) -> EmailConfig:
    """The server's settings with the retry policy left at its defaults."""
    cfg = smtp.email_config(**over)
    for key in ("retry_first_s", "retry_max_s"):
        cfg.pop(key)
    return EmailConfig.model_validate(cfg)


def _box(tmp_path: Path, cfg: EmailConfig, clock: Clock) -> Outbox:
    return Outbox(
        tmp_path / "o.sqlite3",
        backoff=Backoff(cfg.retry_first_s, cfg.retry_max_s),
        max_attempts=cfg.max_attempts,
        max_age_s=cfg.max_age_s,
        clock=clock,
    )


async def _retry_until(box: Outbox, row: Row, transport: SmtpTransport, clock: Clock, until: float) -> list[float]:
    """Attempt after attempt, the clock moved to each next attempt, until ``until``; the waits in between."""
    waits: list[float] = []
    while clock.now < until:
        row = await box.send_one(row, transport)
        assert row.status == "pending", (row.status, row.last_error)
        waits.append(row.next_at - clock.now)
        clock.now = row.next_at
    return waits


def test_the_defaults_back_off_from_a_minute_to_half_an_hour_for_48_hours() -> None:
    cfg = EmailConfig()
    assert (cfg.retry_first_s, cfg.retry_max_s, cfg.max_age_s, cfg.max_attempts) == (60.0, 1800.0, 48 * HOUR, None)


async def test_a_24_hour_outage_loses_nothing_with_the_default_settings(tmp_path: Path, smtp: SmtpServer) -> None:
    smtp.stop()  # down: its port refuses connections
    clock = Clock()
    cfg = _defaults(smtp)
    box = _box(tmp_path, cfg, clock)
    transport = SmtpTransport(cfg)
    start = clock.now
    try:
        waits = await _retry_until(box, box.enqueue(_email()), transport, clock, start + 24 * HOUR)
        smtp.start()  # back after a day
        (row,) = box.rows()
        assert row.status == "pending" and row.next_at == clock.now
        sent = await box.send_one(row, transport)
    finally:
        await transport.aclose()
    assert sent.status == "sent" and sent.attempts == len(waits) + 1
    assert 30 <= waits[0] <= 60 and max(waits) <= 1800  # a minute (jittered) first, never more than half an hour
    assert waits[5] > 900  # doubled: 1, 2, 4, 8, 16, then the 30-minute cap
    assert len(smtp.received) == 1


async def test_the_maximum_age_ends_a_message_a_4xx_storm_keeps_refusing(tmp_path: Path, smtp: SmtpServer) -> None:
    smtp.handler.storm = 10_000  # every transaction: 421 and the connection closed
    clock = Clock()
    cfg = _defaults(smtp, max_age_s=48 * HOUR)
    box = _box(tmp_path, cfg, clock)
    transport = SmtpTransport(cfg)
    start = clock.now
    try:
        row = box.enqueue(_email())
        await _retry_until(box, row, transport, clock, start + 47.5 * HOUR)
        assert "421" in str(box.rows()[0].last_error)
        clock.now = start + 48 * HOUR + 1
        final = await box.send_one(box.rows()[0], transport)
    finally:
        await transport.aclose()
    assert final.status == "failed"
    assert final.last_error is not None and "gave up after 48 h" in final.last_error and "421" in final.last_error
    assert smtp.received == []


async def test_email_outbox_shows_when_the_next_attempt_is(tmp_path: Path, smtp: SmtpServer) -> None:
    smtp.handler.reply = "451 4.3.0 try later"
    config = tmp_path / "config.yaml"
    email = smtp.email_config(outbox=str(tmp_path / "outbox.sqlite3"), retry_first_s=600, retry_max_s=1200)
    config.write_text(yaml.safe_dump(mail_settings(email)), encoding="utf-8")
    settings = load_settings(config)
    box = Outbox(tmp_path / "outbox.sqlite3", backoff=Backoff(600, 1200))
    transport = SmtpTransport(settings.tools.email, config.parent)
    try:
        row = await box.send_one(box.enqueue(_email()), transport)
    finally:
        await transport.aclose()
        box.close()
    assert row.status == "pending"
    out = await ava_engine("--config", str(config), "email", "outbox", "--json")
    assert out.returncode == 0, out.stderr
    (message,) = json.loads(out.stdout)["messages"]
    assert message["next_attempt_at"] == pytest.approx(row.next_at)
    text = (await ava_engine("--config", str(config), "email", "outbox")).stdout
    assert "next attempt " in text and "451 4.3.0" in text


async def test_a_server_that_drops_the_connection_after_data_gets_a_marked_resend(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    smtp.handler.drop_after_data = True
    box = Outbox(tmp_path / "o.sqlite3", backoff=Backoff(0.01, 0.02))
    transport = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    try:
        first = await box.send_one(box.enqueue(_email()), transport)
        assert first.status == "pending" and first.resent  # the server may have it: the retry is marked
        smtp.handler.drop_after_data = False
        second = await box.send_one(first, transport)
    finally:
        await transport.aclose()
    assert second.status == "sent" and second.resent and second.attempts == 2
    ids = [str(r.message["Message-ID"]) for r in smtp.received]
    assert ids == [first.email.message_id] * 2  # the duplicate, with the same Message-ID


async def test_a_worker_cut_during_a_send_marks_the_message_possibly_sent(tmp_path: Path, smtp: SmtpServer) -> None:
    smtp.handler.hold = True
    box = Outbox(tmp_path / "o.sqlite3", backoff=Backoff(0.01, 0.02))
    transport = SmtpTransport(EmailConfig.model_validate(smtp.email_config()))
    worker = asyncio.create_task(box.run(lambda: transport))
    try:
        row = box.enqueue(_email())
        assert await asyncio.to_thread(smtp.handler.holding.wait, 20)  # the server has the message, no answer yet
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    finally:
        smtp.handler.release.set()
        await transport.aclose()
    got = box.get(row.email.message_id)
    assert got is not None and got.status == "pending" and got.resent


async def test_a_graceful_stop_during_a_send_waits_for_the_servers_answer(tmp_path: Path, smtp: SmtpServer) -> None:
    """The stop's drain (a few seconds for due messages) ends while the server still holds its answer: the send in
    flight is finished, not cut, and the next engine on the same outbox does not send it again."""
    waiting = threading.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting for the server's answer" in record.getMessage():
                waiting.set()

    watch = Watch()
    logging.getLogger("engine.email").addHandler(watch)
    logging.getLogger("engine.email").setLevel(logging.INFO)
    smtp.handler.hold = True
    config = tmp_path / "config.yaml"
    email = smtp.email_config(outbox=str(tmp_path / "outbox.sqlite3"), timeout_s=60)
    config.write_text(yaml.safe_dump(mail_settings(email)), encoding="utf-8")
    engine = Engine(load_settings(config), config_path=config)
    await engine.start()
    engine.email.drain_s = 0.05
    try:
        held = engine.email.queue_test("someone@example.com")
        assert await asyncio.to_thread(smtp.handler.holding.wait, 20)
        stopping = asyncio.create_task(engine.stop())
        assert await asyncio.to_thread(waiting.wait, 20)  # the drain is over, the send still in flight
        smtp.handler.release.set()
        async with asyncio.timeout(20):
            await stopping
    finally:
        smtp.handler.release.set()
        if engine.started:
            await engine.stop()
        logging.getLogger("engine.email").removeHandler(watch)
        logging.getLogger("engine.email").setLevel(logging.NOTSET)
    box = Outbox(tmp_path / "outbox.sqlite3")
    row = box.get(held)
    box.close()
    assert row is not None and row.status == "sent"

    smtp.handler.hold = False
    again = Engine(load_settings(config), config_path=config)
    async with again:
        with again.bus.subscribe(types={EmailSent.type}) as sub:
            later = again.email.queue_test("someone@example.com")
            async with asyncio.timeout(20):
                while getattr(await sub.get(), "message_id", None) != later:
                    pass
    ids = [str(r.message["Message-ID"]) for r in smtp.received]
    assert ids == [held, later]  # the one in flight at the stop went out once

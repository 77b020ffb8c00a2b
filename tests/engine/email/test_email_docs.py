"""docs/email.md's outbox section and the engine agree (issue "Phone and mail under real timing", item 14): every
``email.*`` event it names is published with the fields it names, and every kind and status it lists for
``ai_agent_email_total`` is counted — in one run against the strict SMTP fixture (a retry, a refusal, a call's
transcript and summary, a test message).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from engine.app import Engine
from engine.config.models import Settings
from engine.events import EmailFailed, EmailQueued, EmailSent
from tests.engine.email.conftest import mail_settings
from tests.engine.email.smtp_fixture import SmtpServer

EMAIL_PAGE = Path(__file__).resolve().parents[3] / "docs" / "email.md"
SECTION = "## The outbox and its guarantees"


def _section() -> str:
    text = EMAIL_PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION) + len(SECTION)
    end = re.compile(r"^#{2,3} ", re.M).search(text, start)
    return text[start : end.start() if end else len(text)]


def documented() -> tuple[dict[str, list[str]], list[str], list[str]]:
    """The events, their fields and the metric's kinds and statuses, as docs/email.md's outbox section names them."""
    section = " ".join(_section().split())
    events: dict[str, list[str]] = {}
    for name, inside in re.findall(r"`(email\.[a-z_]+)` \(([^)]*)\)", section):
        events[name] = re.findall(r"`([a-z_]+)`", inside)
    metric = re.search(r"`ai_agent_email_total\{kind,status\}` with kinds (.*?) and statuses (.*?)\.", section)
    assert metric is not None, "docs/email.md's outbox section names no ai_agent_email_total kinds and statuses"
    kinds = re.findall(r"`([a-z_]+)`", metric.group(1))
    statuses = re.findall(r"`([a-z_]+)`", metric.group(2))
    return events, kinds, statuses


def test_the_readme_names_the_outbox_events_and_the_metric() -> None:
    events, kinds, statuses = documented()
    assert {"email.queued", "email.sent", "email.failed"} <= set(events)
    assert kinds and statuses


async def test_every_event_field_kind_and_status_the_readme_names_is_real(tmp_path: Path, smtp: SmtpServer) -> None:
    events, kinds, statuses = documented()
    refused = "nobody@example.com"
    smtp.handler.refuse[refused] = f"550 5.1.1 <{refused}>: no such user"
    cfg = mail_settings(smtp.email_config(outbox=str(tmp_path / "o.sqlite3"), summary=True))
    engine = Engine(Settings.model_validate(cfg), config_path=tmp_path / "config.yaml")
    seen: dict[str, list[dict[str, Any]]] = {}
    async with engine:
        with engine.bus.subscribe(types={EmailQueued.type, EmailSent.type, EmailFailed.type}) as sub:

            async def until(done: Any) -> None:
                async with asyncio.timeout(20):
                    while not done():
                        ev = await sub.get()
                        seen.setdefault(ev.type, []).append(ev.to_dict())

            smtp.handler.storm = 1  # the first transaction: 421, so one retry
            engine.email.queue_test("someone@example.com")
            await until(lambda: any(not e["final"] for e in seen.get("email.failed", [])))
            await until(lambda: len(seen.get("email.sent", [])) == 1)
            engine.email.queue_test(refused)
            await until(lambda: any(e["final"] for e in seen.get("email.failed", [])))
            call = await engine.start_call("desk", caller_name="Ann")
            said = "ann at example dot com"
            await engine.user_said(call.call_id, f"email me the transcript at {said}")
            await engine.user_said(call.call_id, f"yes, send it to {said}")
            await engine.end_call(call.call_id)
            await until(lambda: len(seen.get("email.sent", [])) == 3)
        registry = engine.metrics.registry
        counted = {
            (kind, status): registry.get_sample_value("ai_agent_email_total", {"kind": kind, "status": status}) or 0.0
            for kind in kinds
            for status in statuses
        }
    for name, fields in events.items():
        assert name in seen, f"docs/email.md names {name}, which the run never published"
        for field in fields:
            assert all(field in e for e in seen[name]), f"{name} has no field {field!r} docs/email.md names"
    assert {e["kind"] for e in seen["email.sent"]} == {"test", "transcript", "summary"}
    for kind in kinds:
        assert counted[(kind, "queued")] >= 1 and counted[(kind, "sent")] >= 1, (kind, counted)
    for status in statuses:
        assert sum(n for (_, s), n in counted.items() if s == status) >= 1, f"nothing was counted as {status!r}"
    assert counted[("test", "retry")] == 1 and counted[("test", "failed")] == 1

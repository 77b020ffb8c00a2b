"""A tool's URL-mode question (open this link) e-mailed to the caller (``elicitation.url: email``), and e-mail
addresses answered by voice in form mode: text calls through the real engine (the caller's words handed to
``Engine.caller_answered`` as a voice driver does), the fixture server in both protocol eras, and a real SMTP server
(aiosmtpd on loopback, STARTTLS and AUTH) that receives the link.

Covered: a fixed ``url_to``; the caller spelling their address, hearing it read back spelled and saying yes (the
server gets accept, the message arrives with the link escaped in HTML, the link's token is in no event); a second
link in the same call going to the confirmed address without asking again; a caller saying no to the read-back
twice (declined with the spoken reason, nothing sent); a non-http link (declined, said why, nothing sent); a form
field with format email answered by spelling it.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app import Engine
from engine.config import load_settings
from engine.elicitation.desk import GIVE_UP
from engine.elicitation.links import ASK_ADDRESS, NOT_A_WEB_LINK
from engine.events import ElicitationResolved, ElicitationWaiting, EmailSent, Event, TranscriptAdded
from tests.engine.elicitation.helpers import ERAS, SERVER
from tests.engine.email.smtp_fixture import PASSWORD, SmtpServer

TOKEN = "tok-LINK-CANARY-7f3a"
LINK = f"https://example.test/sign-up?code={TOKEN}&step=2"
ASKED = "Please open the sign-up page to finish <now>."
SAID = "j o h n dot smith at example dot com"
ADDRESS = "john.smith@example.com"
SPELLED = "j-o-h-n dot smith at example dot com"


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    server = SmtpServer(tmp_path)
    server.start()
    yield server
    server.stop()


def intent(name: str, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "patterns": [rf"\b{name}\b"],
        "examples": [name],
        "reply": "{result}",
        "tools": [{"name": tool, "args": args or {}}],
    }


def write_config(tmp_path: Path, smtp: SmtpServer, era: str, link: str = LINK) -> Path:
    script = {
        "greeting": "Sign-up line.",
        "intents": [
            intent("signup", f"mcp_{era}_open_link", {"url": link, "message": ASKED}),
            intent("subscribe", f"mcp_{era}_subscribe"),
            intent("secret", f"mcp_{era}_open_link", {"url": link, "message": f"Sign in with {PASSWORD}."}),
        ],
        "fallback": "Say signup.",
    }
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script))
    server = {"command": [sys.executable, str(SERVER)], "mode": ERAS[era], "connect_timeout_ms": 60_000}
    tools = [f"mcp_{era}_*"]
    caller = {"ask": "caller", "timeout_ms": 30_000, "url": "email"}
    config = {
        "engine": {"http": {"enabled": False}, "tool_timeout_ms": 3000},
        "providers": {"s": {"type": "scripted", "script": "script.yaml"}},
        "mcp": {"servers": {era: server}},
        "contexts": {
            "caller": {"provider": "s", "tools": tools, "elicitation": caller},
            "office": {"provider": "s", "tools": tools, "elicitation": {**caller, "url_to": "Links@Example.com"}},
        },
        "tools": {"email": smtp.email_config(outbox=str(tmp_path / "outbox.sqlite3"))},
    }
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    return cfg


async def engine_at(cfg: Path) -> Engine:
    return Engine(load_settings(cfg), config_path=cfg)


async def answering(engine: Engine, call_id: str, answers: list[str], sub: Any) -> list[str]:
    """The caller's answers, one to each question the engine waits for; returns the prompts heard."""
    prompts: list[str] = []
    async for ev in sub:
        if isinstance(ev, ElicitationWaiting) and ev.who == "caller":
            prompts.append(ev.prompt)
            assert engine.caller_answered(call_id, answers.pop(0))
            if not answers:
                return prompts
    return prompts


async def turn_with_answers(engine: Engine, call_id: str, text: str, answers: list[str]) -> tuple[str, list[str]]:
    sub = engine.bus.subscribe(types={ElicitationWaiting.type})
    task = asyncio.create_task(answering(engine, call_id, list(answers), sub)) if answers else None
    try:
        reply = await asyncio.wait_for(engine.user_said(call_id, text), 30)
    finally:
        sub.close()
    prompts = await asyncio.wait_for(task, 5) if task is not None else []
    return reply.text, prompts


async def wait_sent(engine: Engine, sub: Any, n: int) -> list[EmailSent]:
    got: list[EmailSent] = []
    async with asyncio.timeout(20):
        async for ev in sub:
            if isinstance(ev, EmailSent):
                got.append(ev)
                if len(got) == n:
                    return got
    return got


def agent_lines(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, TranscriptAdded) and e.role == "assistant"]


@pytest.mark.parametrize("era", list(ERAS))
async def test_the_caller_spells_an_address_and_the_link_arrives(
    tmp_path: Path, smtp: SmtpServer, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    engine = await engine_at(write_config(tmp_path, smtp, era))
    async with engine:
        log = engine.bus.subscribe(maxsize=100_000)  # read at the end: nothing may be dropped meanwhile
        sent = engine.bus.subscribe(types={EmailSent.type})
        call = await engine.start_call("caller")
        reply, prompts = await turn_with_answers(engine, call.call_id, "signup please", [SAID, "yes"])
        assert reply == "accept"
        assert prompts == [ASK_ADDRESS, f"I heard {SPELLED}. Is that right?"]
        (mail,) = await wait_sent(engine, sent, 1)
        assert mail.kind == "link" and mail.call_id == call.call_id
        # a second link in the same call goes to the address confirmed for the first, without asking again
        reply, prompts = await turn_with_answers(engine, call.call_id, "signup again", [])
        assert (reply, prompts) == ("accept", [])
        await wait_sent(engine, sent, 1)
        await engine.end_call(call.call_id, "caller hung up")
        log.close()
        events = [e async for e in log]
    agent = agent_lines(events)
    assert agent[agent.index(ASKED) + 1 :][:2] == [ASK_ADDRESS, f"I heard {SPELLED}. Is that right?"]
    assert "I've sent the link to john dot smith at example dot com." in agent
    assert f"{ASKED} I've sent the link to john dot smith at example dot com." in agent  # the second link: told at once
    done = [(e.action, e.by) for e in events if isinstance(e, ElicitationResolved)]
    assert done == [("accept", "caller"), ("accept", "caller")]
    asked = [e for e in events if e.type == "elicitation.requested"]
    assert [getattr(e, "url", None) for e in asked] == ["https://example.test/••••••"] * 2
    # the link's token is in no event but the tool's own arguments (this fixture is handed the link to ask with)
    assert [e.type for e in events if TOKEN in e.to_json()] == ["tool.requested"] * 2
    ours = [r.getMessage() for r in caplog.records if not r.name.startswith("mail.log")]  # not the SMTP server's
    assert ours and not any(TOKEN in line for line in ours)
    # one message per link (a slow attempt retried may deliver one twice: the Message-ID says so)
    first, second = {str(r.message["Message-ID"]): r for r in smtp.received}.values()
    assert first.rcpt_tos == [ADDRESS] and first.message["To"] == ADDRESS and second.rcpt_tos == [ADDRESS]
    assert first.message["Subject"].startswith("The link from your call on ")
    text, html = first.part("plain"), first.part("html")
    assert LINK in text and ASKED in text
    escaped = LINK.replace("&", "&amp;")
    assert f'<a href="{escaped}">{escaped}</a>' in html
    assert "Please open the sign-up page to finish &lt;now&gt;." in html and "<now>" not in html


async def test_a_fixed_address_gets_the_link_without_asking(tmp_path: Path, smtp: SmtpServer) -> None:
    engine = await engine_at(write_config(tmp_path, smtp, "new"))
    async with engine:
        log = engine.bus.subscribe(types={TranscriptAdded.type, ElicitationWaiting.type})
        sent = engine.bus.subscribe(types={EmailSent.type})
        call = await engine.start_call("office")
        reply, prompts = await turn_with_answers(engine, call.call_id, "signup", [])
        assert (reply, prompts) == ("accept", [])
        await wait_sent(engine, sent, 1)
        # a configured secret (the SMTP password) in the server's message is masked in the mail and on the call
        reply, prompts = await turn_with_answers(engine, call.call_id, "secret", [])
        assert reply == "accept"
        await wait_sent(engine, sent, 1)
        log.close()
        events = [e async for e in log]
    assert not any(isinstance(e, ElicitationWaiting) for e in events)
    assert f"{ASKED} I've sent the link to links at example dot com." in agent_lines(events)
    got, masked = {str(r.message["Message-ID"]): r for r in smtp.received}.values()
    assert got.rcpt_tos == ["Links@example.com"] and LINK in got.part("plain")
    assert "Sign in with ••••••." in masked.part("plain") and "Sign in with ••••••." in masked.part("html")
    assert not any(PASSWORD in line for line in [*agent_lines(events), masked.part("plain"), masked.part("html")])


async def test_a_read_back_refused_twice_sends_nothing(tmp_path: Path, smtp: SmtpServer) -> None:
    engine = await engine_at(write_config(tmp_path, smtp, "old"))
    async with engine:
        log = engine.bus.subscribe(maxsize=100_000)  # read at the end: nothing may be dropped meanwhile
        call = await engine.start_call("caller")
        reply, prompts = await turn_with_answers(engine, call.call_id, "signup", [SAID, "no", SAID, "no"])
        assert reply == "decline"
        assert prompts[2] == f"Sorry, let's try again. {ASK_ADDRESS}"
        log.close()
        events = [e async for e in log]
        assert engine.email.outbox.counts()["pending"] == engine.email.outbox.counts()["sent"] == 0
    (done,) = [e for e in events if e.type == "elicitation.resolved"]
    assert (getattr(done, "action", ""), getattr(done, "by", "")) == ("decline", "caller")
    assert getattr(done, "reason", "") == "the caller did not confirm the answers 2 times"
    assert GIVE_UP in agent_lines(events)
    assert not any(e.type == "email.queued" for e in events)
    assert smtp.received == []


@pytest.mark.parametrize("link", ["javascript:alert(1)", "ftp://example.test/file", "https:///no-host"])
async def test_a_link_that_is_not_http_is_declined(tmp_path: Path, smtp: SmtpServer, link: str) -> None:
    engine = await engine_at(write_config(tmp_path, smtp, "new", link=link))
    async with engine:
        log = engine.bus.subscribe(maxsize=100_000)  # read at the end: nothing may be dropped meanwhile
        call = await engine.start_call("caller")
        reply, prompts = await turn_with_answers(engine, call.call_id, "signup", [])
        assert (reply, prompts) == ("decline", [])
        log.close()
        events = [e async for e in log]
    assert f"{ASKED} {NOT_A_WEB_LINK}" in agent_lines(events)
    (done,) = [e for e in events if e.type == "elicitation.resolved"]
    assert getattr(done, "by", "") == "policy"
    reason = getattr(done, "reason", "")
    assert reason.startswith("only http(s) links") or reason == "the link has no host"
    assert not any(e.type == "email.queued" for e in events) and smtp.received == []


@pytest.mark.parametrize("era", list(ERAS))
async def test_a_form_asks_for_an_email_address_by_voice(tmp_path: Path, smtp: SmtpServer, era: str) -> None:
    engine = await engine_at(write_config(tmp_path, smtp, era))
    async with engine:
        call = await engine.start_call("caller")
        reply, prompts = await turn_with_answers(engine, call.call_id, "subscribe", ["mary at example dot com", "yes"])
    assert prompts == [
        "Which e-mail address should get the newsletter? Email: where the newsletter goes? Please spell it.",
        "I heard mary at example dot com. Is that right?",
    ]
    assert reply == 'accept {"email":"mary@example.com"}'

"""``contexts.<name>.elicitation.url`` / ``url_to`` through the installed ``ava-engine`` (``check`` and ``schema``):
e-mailing links needs e-mail on, and the refusal names the file, the line, the context and the key; ``url_to`` is
``caller`` or an address. Plus the parts the link flow is built from: which links are sent, how an event masks one,
and an e-mail address answered by voice in a form (parsed, checked, read back spelled)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.elicitation import answers, dialogue
from engine.elicitation.desk import VOICELESS
from engine.elicitation.links import LinkSender, link_refusal, masked_url
from engine.elicitation.schema import FormField
from engine.sessions.session import CallSession

EXE = Path(sys.executable).parent / "ava-engine"
EMAIL = {"enabled": True, "from_address": "ava@example.com", "outbox": "o.sqlite3"}


def check(tmp_path: Path, elicitation: dict[str, Any], email: dict[str, Any] | None = None) -> tuple[int, str]:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"greeting": "Hi.", "intents": [], "fallback": "what?"}))
    config: dict[str, Any] = {
        "engine": {"http": {"enabled": False}},
        "providers": {"s": {"type": "scripted", "script": "s.yaml"}},
        "contexts": {"front": {"provider": "s", "elicitation": elicitation}},
    }
    if email is not None:
        config["tools"] = {"email": email}
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    done = subprocess.run([str(EXE), "--config", str(cfg), "check"], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_links_by_email_need_email_on(tmp_path: Path) -> None:
    code, out = check(tmp_path, {"ask": "caller", "url": "email"})
    assert code == 2
    assert f"{tmp_path / 'config.yaml'}:" in out and "contexts.front.elicitation.url" in out
    assert "context 'front' sends links by e-mail" in out and "tools.email.enabled" in out
    code, out = check(tmp_path, {"ask": "caller", "url": "email"}, {**EMAIL, "enabled": False})
    assert code == 2 and "tools.email.enabled" in out


def test_url_to_is_caller_or_an_address_and_url_a_known_word(tmp_path: Path) -> None:
    code, out = check(tmp_path, {"ask": "caller", "url": "email", "url_to": "the front desk"}, EMAIL)
    assert code == 2
    assert "contexts.front.elicitation.url_to" in out and "url_to must be 'caller' or an e-mail address" in out
    code, out = check(tmp_path, {"ask": "caller", "url": "sms"}, EMAIL)
    assert code == 2 and "contexts.front.elicitation.url" in out and "'decline' or 'email'" in out


def test_a_good_config_passes_and_the_schema_has_the_keys(tmp_path: Path) -> None:
    code, out = check(tmp_path, {"ask": "caller", "url": "email", "url_to": "desk@example.com"}, EMAIL)
    assert code == 0, out
    done = subprocess.run([str(EXE), "schema"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (full,) = [s for s in json.loads(done.stdout)["$defs"]["ElicitationConfig"]["anyOf"] if "properties" in s]
    props = full["properties"]
    assert props["url"]["enum"] == ["decline", "email"] and props["url"]["default"] == "decline"
    assert props["url_to"]["default"] == "caller"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://example.test/a?b=c", None),
        ("HTTP://example.test", None),
        ("javascript:alert(1)", "only http(s) links are sent by e-mail (scheme 'javascript')"),
        ("mailto:a@example.test", "only http(s) links are sent by e-mail (scheme 'mailto')"),
        ("//example.test/x", "only http(s) links are sent by e-mail (scheme none)"),
        ("https:///path", "the link has no host"),
        ("https://example.test/a b", "the link contains spaces or control characters"),
        ("https://example.test/\r\nBcc: x", "the link contains spaces or control characters"),
        ("http://[::1", "the link is not a valid URL"),
    ],
)
def test_which_links_are_sent(url: str, why: str | None) -> None:
    assert link_refusal(url) == why


def test_an_event_shows_a_link_up_to_its_host() -> None:
    assert masked_url("https://example.test/reset/s3cret?t=1#x") == "https://example.test/••••••"
    assert masked_url("https://user:pw@example.test:8443/") == "https://example.test:8443/"
    assert masked_url("https://example.test") == "https://example.test/"
    assert masked_url("javascript:alert(1)") == "••••••"


def test_an_email_field_is_answered_by_spelling_it() -> None:
    f = FormField("email", "string", "Email", required=True, format="email")
    today = date(2026, 11, 28)
    assert "email" not in VOICELESS and "uri" in VOICELESS
    said = "my email is m a r y underscore jones at example dot com"
    assert answers.parse(f, said, today) == "mary_jones@example.com"
    assert answers.parse(f, "mary at", today) is None
    assert answers.confirmation(f, "mary_jones@example.com", said) == (
        "I heard m-a-r-y underscore jones at example dot com. Is that right?"
    )
    assert answers.confirmation(f, "ann@example.com") == "I heard ann at example dot com. Is that right?"
    assert dialogue.phrases(f) == []  # the general model listens: no short grammar holds a spelled address


def test_a_confirmed_transcript_address_is_used_for_a_link() -> None:
    sender = LinkSender(None)
    session = CallSession(call_id="c1", context="front", provider="s")
    assert sender._known(session) is None
    session.transcript_recipients.append("ann@example.com")
    assert sender._known(session) == "ann@example.com"
    sender.confirmed["c1"] = "bob@example.com"
    assert sender._known(session) == "bob@example.com"
    sender.call_ended("c1")
    assert sender._known(session) == "ann@example.com"

"""The redactor and the boundaries it guards: tool results (message and data), the event bus, log records, the
CLI's streams, and which config values count as secrets."""

from __future__ import annotations

import io
import json
import logging
from typing import Any
from urllib.parse import quote

import pytest

from engine.app import Engine
from engine.config.loader import load_settings_text
from engine.config.models import Settings
from engine.events import EventBus, ToolCompleted, TranscriptAdded
from engine.redaction.redactor import MASK, MIN_SECRET_LENGTH, RedactingFilter, RedactingWriter, Redactor, secret_values
from engine.sessions.session import CallSession
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult

SECRET = 'sk-"quoted"\\back-é-0123456789'


def test_masks_plain_json_escaped_twice_escaped_ascii_and_url_forms() -> None:
    r = Redactor([SECRET])
    once = json.dumps(SECRET)[1:-1]
    texts = [
        f"x {SECRET} y",
        json.dumps({"k": SECRET}),
        json.dumps({"k": SECRET}, ensure_ascii=False),
        json.dumps({"outer": json.dumps({"k": SECRET})}),
        f"https://h/?token={quote(SECRET, safe='')}",
        f"escaped {once}",
    ]
    for text in texts:
        clean = r(text)
        assert "0123456789" not in clean and MASK in clean, text


def test_short_values_are_not_secrets() -> None:
    r = Redactor(["on", "abc", "a" * MIN_SECRET_LENGTH])
    assert r("on abc") == "on abc"
    assert r("x aaaa y") == f"x {MASK} y"
    assert not Redactor(["abc"]).active


def test_value_masks_nested_data_keys_and_keeps_identity_when_clean() -> None:
    r = Redactor([SECRET])
    data: dict[str, Any] = {"env": {"KEY": SECRET, SECRET: 1}, "list": [1, None, (SECRET,)], "n": 2.5}
    clean = r.value(data)
    dumped = json.dumps(clean)
    assert "0123456789" not in dumped and clean["n"] == 2.5 and clean["list"][:2] == [1, None]
    untouched = {"a": ["b", {"c": 1}]}
    assert r.value(untouched) is untouched
    assert Redactor().value(data) is data


def test_update_adds_secrets_and_keeps_the_old_ones() -> None:
    r = Redactor(["first-secret"])
    r.update(["second-secret"])
    assert r("first-secret second-secret") == f"{MASK} {MASK}"


def test_settings_secrets_include_keyring_values_and_env_values_in_credential_places() -> None:
    text = """
engine:
  http: {host: "${HOST_NAME}"}
mcp:
  servers:
    s:
      command: [python, server.py, --token, "${CLI_TOKEN}"]
      env: {API: "${keyring:api}"}
      cwd: "${WORK_DIR}"
"""
    env = {"HOST_NAME": "localhost", "CLI_TOKEN": "cli-token-value", "WORK_DIR": "/srv/work"}
    settings = load_settings_text(text, env=env, lookup_secret=lambda name: f"keyring-{name}-value")
    found = secret_values(settings)
    assert {"cli-token-value", "keyring-api-value"} <= found
    assert "localhost" not in found and "/srv/work" not in found  # plain settings, not credentials


def test_keyring_value_anywhere_is_a_secret() -> None:
    text = 'mcp:\n  servers:\n    s:\n      command: [python, x.py]\n      cwd: "/data/${keyring:dir_secret}"\n'
    settings = load_settings_text(text, env={}, lookup_secret=lambda name: "hidden-dir-name")
    assert "hidden-dir-name" in secret_values(settings)


def test_bus_masks_every_event_before_subscribers_see_it() -> None:
    r = Redactor([SECRET])
    bus = EventBus(redactor=r)
    sub = bus.subscribe()
    clean = TranscriptAdded(call_id="c", role="user", text="nothing here")
    bus.publish(clean)
    bus.publish(
        ToolCompleted(
            call_id="c",
            tool_call_id="t",
            exposed_name="x",
            server="s",
            tool="x",
            status="success",
            latency_ms=1.0,
            message=f"m {SECRET}",
            data={"d": [SECRET]},
        )
    )
    first, second = sub.drain()
    assert first is clean  # nothing to mask: the same object, no copy
    assert isinstance(second, ToolCompleted)
    assert "0123456789" not in second.to_json() and second.message == f"m {MASK}"


def test_logging_filter_masks_message_args_and_exception_text() -> None:
    r = Redactor([SECRET])
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactingFilter(r))
    logger = logging.getLogger("test.redact.filter")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("token %s in args", SECRET)
        try:
            raise ValueError(f"bad {SECRET}")
        except ValueError:
            logger.exception("failed with %r", {"k": SECRET})
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert "0123456789" not in text and "ValueError: bad" in text and text.count(MASK) >= 3


def test_writer_masks_a_secret_written_in_pieces() -> None:
    inner = io.StringIO()
    w = RedactingWriter(inner, Redactor([SECRET]))
    for piece in (SECRET[:5], SECRET[5:], "\n", "tail ", SECRET):
        w.write(piece)
    w.flush()
    assert inner.getvalue() == f"{MASK}\ntail {MASK}"


def _echo_tool() -> FunctionTool:
    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        payload = {"key": SECRET, "nested": [{"json": json.dumps({"k": SECRET})}]}
        return ToolResult.success(f"your key is {SECRET}", payload)

    return FunctionTool(ToolDefinition("echo_secret", "Echo a secret."), run)


@pytest.fixture
def settings_with_secret() -> Settings:
    text = 'engine:\n  mcp_server: {auth_token: "${keyring:k}"}\n'
    return load_settings_text(text, env={}, lookup_secret=lambda name: SECRET)


async def test_execution_masks_message_and_data_for_every_consumer(settings_with_secret: Settings) -> None:
    """Before: only ``message`` was masked; ``data`` carried the secret to providers, events and the CLI."""
    engine = Engine(settings_with_secret, extra_tools=[_echo_tool()])
    sub = engine.bus.subscribe(types={"tool.completed"})
    session = CallSession(call_id="c1", context="x", provider="p")
    session.shown_tools = frozenset({"echo_secret"})
    result = await engine.execute_tool(session, "echo_secret", {})
    assert result.status == "success"
    dumped = json.dumps(result.to_dict()) + json.dumps(result.to_dict(), ensure_ascii=False)
    assert "0123456789" not in dumped and MASK in result.data["key"]
    event = sub.get_nowait()
    assert event is not None and "0123456789" not in event.to_json()


def test_secret_made_only_of_escaped_characters_is_still_found_in_nested_data() -> None:
    """Such a secret has no run of characters every encoding keeps, so the quick pre-check cannot be used."""
    odd = '"\\"é€'
    r = Redactor([odd])
    data = {"a": [{"b": f"x{odd}y"}], "j": json.dumps({"k": odd})}
    assert r.value(data) == {"a": [{"b": f"x{MASK}y"}], "j": json.dumps({"k": MASK}, ensure_ascii=False)}


def test_event_with_a_secret_only_in_its_data_is_masked() -> None:
    r = Redactor([SECRET])
    ev = ToolCompleted(
        call_id="c",
        tool_call_id="t",
        exposed_name="x",
        server="s",
        tool="x",
        status="success",
        latency_ms=1.0,
        message="fine",
        data={"deep": [{"json": json.dumps([SECRET])}]},
    )
    clean = r.event(ev)
    assert clean is not ev and "0123456789" not in clean.to_json() and clean.message == "fine"

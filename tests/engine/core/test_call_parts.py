"""The call manager's usage part works alone, given only the narrow things it uses (issue 35 item 1).

A mixin could only be tested as the whole CallManager; a part is built here from plain callables, a bus and
metrics, with no manager and no engine.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.calls.runtime import CallRuntime
from engine.calls.usage import UsageCalls
from engine.config.models import Settings
from engine.core.metrics import Metrics
from engine.events import EventBus
from engine.providers.scripted import ScriptedProvider
from engine.sessions.session import CallSession


def _settings(tmp_path: Path) -> Settings:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"greeting": "hi", "intents": [], "fallback": "what?"}))
    return Settings.model_validate(
        {
            "providers": {"s": {"type": "scripted", "script": str(script)}},
            "contexts": {"c": {"provider": "s", "farewell": "Bye from the desk."}, "d": {"provider": "s"}},
        }
    )


async def test_the_usage_part_wraps_up_through_the_callables_it_was_given(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    said: list[tuple[str, str]] = []
    ended: list[tuple[str, str]] = []

    async def say(session: CallSession, text: str) -> None:
        said.append((session.call_id, text))

    async def end_call(call_id: str, reason: str) -> None:
        ended.append((call_id, reason))

    usage = UsageCalls(
        settings=lambda: settings,
        bus=EventBus(),
        metrics=Metrics(),
        runtime=lambda _call_id: None,
        live_session=lambda _call_id: None,
        say=say,
        end_call=end_call,
    )
    session = CallSession(call_id="c-1", context="c", provider="s", state="active")
    provider = ScriptedProvider("s", settings.providers["s"])
    rt = CallRuntime(provider.open_session(session), "s")
    await usage.wrap_up(session, rt)  # the budget is not used up: nothing to do
    rt.budget_action = "wrap_up"
    await usage.wrap_up(session, rt)
    assert said == [("c-1", "Bye from the desk.")]
    assert ended == [("c-1", "budget reached")]
    other = CallSession(call_id="d-1", context="d", provider="s")
    assert usage.farewell(other) == settings.tools.hangup.farewell  # no farewell of its own: the hang-up tool's
    assert usage.budget_wrap_up("c-1") is False  # its runtime callable knows no such call
    assert usage.meter("c-1") is None

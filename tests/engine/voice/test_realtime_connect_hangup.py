"""A caller who hangs up while the realtime provider is still connecting ends the call then, not once the
provider has answered: the connection attempt is given up, the call ends with the caller's reason, and the
provider never gets to greet a line nobody is on."""

from __future__ import annotations

import asyncio

import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, ProviderConfig, Settings
from engine.events import CallEnded
from engine.realtime.call import RealtimeVoiceCall
from engine.sessions.session import CallError
from tests.fixtures.audio_backends import FeedBackend
from tests.fixtures.realtime_scripted import provider_of, use_scripted_realtime
from tests.waiting import wait_until


def _settings() -> Settings:
    return Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={"rt": ProviderConfig(type="openai_realtime", model="m", options={"hold_start": True})},
        contexts={"desk": ContextConfig(provider="rt", greeting="Hello, desk here.", tools=[])},
    )


async def test_hanging_up_while_the_provider_connects_ends_the_call_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    use_scripted_realtime(monkeypatch)
    async with Engine(_settings()) as engine:
        sub = engine.bus.subscribe(types={CallEnded.type})
        provider = provider_of(engine)
        call = RealtimeVoiceCall(engine.voice_parts, FeedBackend(16000, 20), "desk")
        run = asyncio.create_task(call.run())
        await wait_until(lambda: provider.connecting, what="the session connecting")
        call.stop("caller hung up")
        with pytest.raises(CallError, match="caller hung up"):
            async with asyncio.timeout(10):  # the provider never answers: only giving up ends the run
                await run
        ended = await asyncio.wait_for(sub.get(), 10)
        assert isinstance(ended, CallEnded) and ended.reason == "caller hung up"
        session = provider.connecting[0]
        assert session.start_cancelled and session.setup is None
        assert not call.started.is_set()

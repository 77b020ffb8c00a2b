"""Ending phone calls when the engine stops: the AI falls silent, the caller hears a short farewell if it fits,
and every Asterisk request is answered (or given up) inside one budget.

Why it exists: ``ava-engine serve`` must exit 0 within 3 s of SIGTERM (the console's quit stops the same engine),
and a caller must not be left in a bridge nobody serves. ``StopBudget`` is the clock every step reads: the AI's
playback stops at once, the farewell (the context's ``farewell``, else ``tools.hangup.farewell``) is synthesised
here and played straight into the call's media stream only when it can end ``RELEASE_RESERVE_S`` before the
budget does, and the release requests (caller, media channel, bridge) run together, each bounded by what is
left. The farewell is the engine's own TTS, not the provider's: the provider session is being closed, and a
realtime provider could not be trusted to answer in time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from typing import Any

from engine.config.models import Settings
from engine.realtime.call import RealtimeVoiceCall
from engine.realtime.host import RealtimeHost
from engine.telephony.ari import AriError
from engine.voice.backend import AudioBackend
from engine.voice.pipeline import VoiceCall, resolve_voice
from engine.voice.tts import Synthesizer

log = logging.getLogger(__name__)

#: From the stop until every release request was answered or given up (serve's own deadline is a little longer).
STOP_BUDGET_S = 2.6
#: The release requests' share of the budget: a farewell that would end later is not played (the default one,
#: "Thank you for calling. Goodbye!", is 2.0 s long).
RELEASE_RESERVE_S = 0.25
#: How long the AI gets to end its turn after being told to stop, before the farewell plays over whatever it does.
AI_STOP_WAIT_S = 0.5


class StopBudget:
    """The one deadline of a stop, on the event loop's clock."""

    def __init__(self, budget_s: float = STOP_BUDGET_S) -> None:
        self.deadline = asyncio.get_running_loop().time() + budget_s

    def left(self) -> float:
        return max(0.0, self.deadline - asyncio.get_running_loop().time())


def farewell_text(settings: Settings, context: str | None) -> str:
    ctx = settings.contexts.get(context) if context else None
    return (ctx.farewell if ctx is not None and ctx.farewell else None) or settings.tools.hangup.farewell


def hush(voice: VoiceCall | RealtimeVoiceCall | None, reason: str) -> None:
    """Stop the AI: its call ends, and what it is saying stops within one packet (a greeting included)."""
    if voice is None:
        return
    voice.stop(reason)
    if isinstance(voice, RealtimeVoiceCall):
        if voice.playout is not None:
            voice.playout.interrupt()
    else:
        voice.speaker.interrupt()


async def say_farewell(
    host: RealtimeHost, context: str | None, backend: AudioBackend, budget: StopBudget, channel_id: str
) -> bool:
    """Play the farewell on ``backend`` when it can end in time; True when it played out."""
    text = farewell_text(host.settings, context)
    try:
        options = resolve_voice(host, context)[0] if context else None
        synth = Synthesizer(
            options.voice if options else "en-us",
            options.rate if options else 170,
            options.pitch if options else 50,
            sample_rate=backend.sample_rate,
        )
        async with asyncio.timeout(max(0.0, budget.left() - RELEASE_RESERVE_S)):
            audio = await synth.synthesize(text)
    except TimeoutError:
        log.warning("telephony: no time left to synthesise the farewell for %s; hanging up", channel_id)
        return False
    except Exception as e:  # the farewell is a courtesy: a TTS failure must not keep the caller's line up
        log.warning("telephony: the farewell for %s could not be synthesised (%s); hanging up", channel_id, e)
        return False
    length_s = audio.num_samples / audio.sample_rate
    if length_s > budget.left() - RELEASE_RESERVE_S:
        log.warning("telephony: the %.1f s farewell does not fit the stop budget; hanging up %s", length_s, channel_id)
        return False
    log.info("telephony: saying farewell to %s (%.1f s): %r", channel_id, length_s, text)
    try:
        async with asyncio.timeout(max(0.0, budget.left() - RELEASE_RESERVE_S)):
            return await backend.play([audio])
    except TimeoutError:
        backend.stop_playback()
        log.warning("telephony: the farewell to %s did not play out in time; hanging up", channel_id)
        return False


async def bounded(steps: Sequence[tuple[str, Awaitable[Any]]], budget: StopBudget | None) -> list[tuple[str, Any]]:
    """Run release steps together (in order when there is no budget); each ``(what, error)`` that failed."""
    if budget is None:
        failed: list[tuple[str, Any]] = []
        for what, step in steps:
            try:
                await step
            except AriError as e:
                failed.append((what, e))
        return failed
    left = budget.left()

    async def one(step: Awaitable[Any]) -> None:
        try:
            async with asyncio.timeout(left):
                await step
        except TimeoutError:
            raise AriError("release", f"no answer within the {STOP_BUDGET_S:g} s stop budget") from None

    results = await asyncio.gather(*(one(s) for _, s in steps), return_exceptions=True)
    return [(what, r) for (what, _), r in zip(steps, results, strict=True) if isinstance(r, BaseException)]

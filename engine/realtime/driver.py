"""``voice_call``: the voice driver for a call of a context, the realtime one or the cascaded pipeline.

Apart from ``engine.realtime.host`` (what a driver needs of the engine) and from both drivers, because it builds
either: the drivers import the host's Protocols, this module imports the drivers.
"""

from __future__ import annotations

from typing import Any

from engine.realtime.call import RealtimeVoiceCall
from engine.realtime.host import RealtimeHost, is_realtime
from engine.voice.backend import AudioBackend
from engine.voice.pipeline import VoiceCall


def voice_call(host: RealtimeHost, backend: AudioBackend, context: str, **kw: Any) -> VoiceCall | RealtimeVoiceCall:
    """The voice driver for a call of ``context``: speech-to-speech when its provider is a realtime one, else the
    cascaded pipeline (``kw`` as either takes: provider, caller_name, caller_number, on_state, on_level …).
    ``host`` is the engine's ``VoiceParts`` (``Engine.voice_parts``), never the Engine."""
    made: list[VoiceCall | RealtimeVoiceCall] = []
    backend = host.record_audio(backend, lambda: made[0].call_id if made else None)  # the flight recorder's tap
    call: VoiceCall | RealtimeVoiceCall
    if is_realtime(host, context, kw.get("provider")):
        kw.pop("recognizer", None)  # the provider hears the caller itself
        kw.pop("synthesizer", None)
        call = RealtimeVoiceCall(host, backend, context, **kw)
    else:
        call = VoiceCall(host, backend, context, **kw)
    made.append(call)
    return call

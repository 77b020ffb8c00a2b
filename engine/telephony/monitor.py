"""The operator on the line: listen to a live phone call, whisper into it, take it over and hand it back.

Why it exists: no anchor lets the person running the agents step into a real call. Every mode is one ARI channel
carrying the operator's audio over RTP to the operator's own sound card (an ``AudioBackend``, the console's
softphone devices):

- **listen**: a snoop channel on the caller (``spy=both``: what the caller says and hears) bridged with an
  external media channel; the operator hears, nobody hears the operator;
- **whisper to the agent**: the same snoop with ``whisper=in``: the operator's voice is mixed into what the caller's
  channel sends, so the agent (AI or human) hears it and the caller does not;
- **whisper to the caller**: ``whisper=out``: mixed into what the caller hears, the agent does not hear it;
- **take over**: the AI's media channel leaves the call's bridge and its session ends; the operator's media channel
  joins, so the caller and the operator talk; **hand back** (mode ``off``) removes the operator and brings the AI
  back with a note of what happened: while the operator has the call, both sides of the line feed a
  ``TakeoverTranscript`` (``engine.telephony.handback``).

Each mode change tears down the previous line first; nothing is left in Asterisk after ``off`` (tested by listing
channels and bridges). The operator's media and snoop channels are bridged only once each entered Stasis, which
Asterisk does after answering the request that made it (``AriClient.entering``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Literal

from engine.telephony.ari import AriError
from engine.telephony.handback import TakeoverTranscript
from engine.telephony.link import AsteriskLink
from engine.telephony.rtp import PortPool, RtpStream
from engine.voice.audio import AudioFrame, StreamResampler
from engine.voice.backend import AudioBackend
from engine.voice.g711 import ulaw_decode, ulaw_encode

log = logging.getLogger(__name__)

MonitorMode = Literal["off", "listen", "whisper_agent", "whisper_caller", "takeover"]
MODES: tuple[str, ...] = ("off", "listen", "whisper_agent", "whisper_caller", "takeover")
_SNOOP = {"listen": "none", "whisper_agent": "in", "whisper_caller": "out"}


class MonitorError(RuntimeError):
    """A monitor request that cannot be done (no such phone call, unknown mode, Asterisk refused)."""


@dataclass
class OperatorLine:
    """The operator's audio on one call: the ARI channels it created and the pumps between RTP and the backend."""

    mode: str
    stream: RtpStream
    backend: AudioBackend
    channels: list[str] = field(default_factory=list)
    bridge_id: str | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    #: On a take-over: what the caller and the operator say, for the AI's hand-back (None otherwise).
    transcript: TakeoverTranscript | None = None


class CallMonitor:
    def __init__(self, link: AsteriskLink, pool: PortPool) -> None:
        self.link = link
        self.pool = pool
        self.lines: dict[str, OperatorLine] = {}  # caller channel id -> the operator's line

    def mode(self, channel_id: str) -> str:
        line = self.lines.get(channel_id)
        return line.mode if line is not None else "off"

    async def open(
        self,
        channel_id: str,
        call_bridge: str | None,
        mode: str,
        backend: AudioBackend,
        transcript: TakeoverTranscript | None = None,
    ) -> OperatorLine:
        """The operator's line for ``mode`` on the caller ``channel_id`` (the previous one must be closed);
        ``transcript`` hears both sides of a take-over."""
        if mode not in MODES or mode == "off":
            raise MonitorError(f"unknown monitor mode {mode!r} (one of {', '.join(MODES)})")
        ari, config, ids, own = self.link.ari, self.link.config, self.link.ids, self.link.own
        stream = await RtpStream.bind(config.rtp_host, self.pool)
        line = OperatorLine(mode, stream, backend, transcript=transcript)
        try:
            media_id = ids.make("op", channel_id)
            own.add(media_id)
            line.channels.append(media_id)
            timeout = config.request_timeout_s
            async with ari.entering(media_id, "POST /channels/externalMedia (operator)") as media_entered:
                media = await ari.external_media(f"{config.rtp_host}:{stream.port}", channel_id=media_id)
                variables = media.get("channelvars") or {}
                host, port = variables.get("UNICASTRTP_LOCAL_ADDRESS"), str(variables.get("UNICASTRTP_LOCAL_PORT", ""))
                if not host or not port.isdigit():
                    raise MonitorError("Asterisk did not say where to send the operator's RTP")
                stream.set_remote(str(host), int(port))
                if mode == "takeover":
                    assert call_bridge is not None
                    await media_entered.wait(timeout)
                    await ari.add_to_bridge(call_bridge, [media_id])
                else:
                    snoop_id = ids.make("snoop", channel_id)
                    own.add(snoop_id)
                    line.channels.insert(0, snoop_id)
                    async with ari.entering(snoop_id, f"POST /channels/{channel_id}/snoop") as snoop_entered:
                        await ari.snoop(
                            channel_id, spy="both", whisper=_SNOOP[mode], app_args=["monitor"], snoop_id=snoop_id
                        )
                        bridge = await ari.create_bridge(ids.make("mon", channel_id), kind="mixing", name="operator")
                        line.bridge_id = bridge["id"]
                        await media_entered.wait(timeout)
                        await snoop_entered.wait(timeout)
                    await ari.add_to_bridge(line.bridge_id, [snoop_id, media_id])
        except (AriError, MonitorError):
            await self.close(line)
            raise
        line.tasks.append(self.link.spawn(self._to_operator(line), name=f"monitor:{channel_id}:hear"))
        if mode != "listen":
            line.tasks.append(self.link.spawn(self._from_operator(line), name=f"monitor:{channel_id}:speak"))
        self.lines[channel_id] = line
        return line

    async def close(self, line: OperatorLine) -> None:
        """Tear the line down: pumps, channels, the monitor bridge, the port, the operator's devices."""
        for t in line.tasks:
            t.cancel()
        for t in line.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        for cid in line.channels:
            with contextlib.suppress(AriError):
                await self.link.ari.hangup(cid)
            self.link.own.discard(cid)
        if line.bridge_id is not None:
            with contextlib.suppress(AriError):
                await self.link.ari.destroy_bridge(line.bridge_id)
        await line.stream.aclose()
        await line.backend.close()
        if line.transcript is not None:  # not handed back (the call ended): nobody needs the transcript
            await line.transcript.aclose()

    async def close_for(self, channel_id: str) -> OperatorLine | None:
        line = self.lines.pop(channel_id, None)
        if line is not None:
            await self.close(line)
        return line

    async def _to_operator(self, line: OperatorLine) -> None:
        """What the line carries (the snooped call, or the caller on a take-over) to the operator's speaker."""
        async for payload in line.stream.frames():
            frame = AudioFrame(ulaw_decode(payload), 8000)
            if line.transcript is not None:
                line.transcript.heard("caller", frame)
            await line.backend.write(frame)

    async def _from_operator(self, line: OperatorLine) -> None:
        """The operator's microphone, at 8 kHz μ-law, into the line."""
        resampler = StreamResampler(line.backend.sample_rate, 8000)
        async for frame in line.backend.frames():
            samples = resampler.process(frame.samples)
            if line.transcript is not None:
                line.transcript.heard("operator", AudioFrame(samples, 8000))
            line.stream.queue(ulaw_encode(samples))

"""Transfers on a phone call: originate the target directly, and hand the caller over in four steps once it answers.

Why it exists: AVA's transfers must end with a bridge that holds exactly the caller and the agent, reached by
dialling the target's own endpoint (``PJSIP/6000``, never a ``Local/`` channel) with the AI's identity as caller
ID. Warm: the tool returns at once (the model tells the caller), the caller hears music on hold while the target
rings, and when the target's channel enters Stasis (awaited by the id the engine gave it, ``AriClient.entering``;
the leg names the caller as ``originator`` so Asterisk links their CDRs and ``linkedid``) the hand-off runs:
(1) the AI's media channel leaves the bridge, (2) the provider session stops, (3) music stops and the agent's
channel joins, (4) the call is marked transferred. A busy, failing or never-answering target (``timeout_s``) stops
the music and the AI tells the caller; ``cancel_transfer`` hangs up the ringing channel and stops the music, and
refuses once the target answered. Blind: the AI leaves at once and the caller hears ringing; if the target fails,
the AI comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.config.models.tools import TransferTarget
from engine.telephony.ari import AriError, Entering
from engine.telephony.link import AsteriskLink
from engine.tools.base import ToolResult
from engine.tools.builtin.transfer import TransferMode

log = logging.getLogger(__name__)

_ids = itertools.count(1)
#: Hang-up cause → (the reason in events, how the caller is told).
FAILED_CAUSES = {
    17: ("busy", "is busy"),
    19: ("no_answer", "did not answer"),
    21: ("rejected", "did not take the call"),
}
UNREACHABLE = ("unreachable", "could not be reached")
#: How long to wait for the model's "please hold" before the music starts anyway.
HOLD_AFTER_S = 4.0


class Line(Protocol):
    """What a transfer needs of its phone call."""

    channel_id: str
    bridge_id: str | None
    media_channel_id: str | None

    def stop_ai(self, reason: str) -> None: ...

    async def ai_idle(self, within_s: float) -> None: ...

    async def resume_ai(self, note: str) -> None: ...

    def tell(self, text: str) -> None: ...

    def publish(self, kind: str, **fields: object) -> None: ...


@dataclass
class Transfer:
    name: str
    target: TransferTarget
    mode: TransferMode
    channel_id: str
    started: float = field(default_factory=time.monotonic)
    state: str = "ringing"  # ringing | answered | failed | cancelled
    outcome: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    handoff_ms: float | None = None
    #: The wait for the target's channel to enter Stasis (it answered).
    entering: Entering | None = None


def _answered(xfer: Transfer, entered: asyncio.Future[dict[str, Any]]) -> None:
    """The target's channel entered Stasis: it answered (a failure or a cancel is told by its own event)."""
    if not entered.cancelled() and entered.exception() is None and not xfer.outcome.done():
        xfer.outcome.set_result("answered")


class PhoneTransfers:
    """The ``TransferControl`` of one phone call (registered in ``PhoneLines`` under its engine call id)."""

    def __init__(self, link: AsteriskLink, line: Line) -> None:
        self.link = link
        self.line = line
        self.current: Transfer | None = None
        self.transferred = False
        self.holding = False
        #: Set when no transfer is in a state the call's owner must wait out: a hand-off half done, or a blind
        #: transfer ringing (the AI already left; what happens next depends on the outcome).
        self._settled: asyncio.Event = asyncio.Event()
        self._settled.set()

    @property
    def joining(self) -> bool:
        """A human answered and is being joined to the caller: the hand-off's steps are under way."""
        return self.current is not None and self.current.state == "answered" and not self.transferred

    # -------------------------------------------------------------------------------------- TransferControl

    async def transfer(self, name: str, target: TransferTarget, mode: TransferMode) -> ToolResult:
        if self.transferred:
            return ToolResult.error("This call has already been transferred.")
        if self.current is not None and self.current.state == "ringing":
            return ToolResult.error(f"A transfer to {self.current.name} is already ringing.")
        xfer = Transfer(name, target, mode, self.link.ids.make("xfer", self.line.channel_id, next(_ids)))
        self.link.own.add(xfer.channel_id)
        # The target answering is its channel entering Stasis: awaited by id from before the request on.
        xfer.entering = self.link.ari.entering(xfer.channel_id, f"POST /channels/{xfer.channel_id} (originate)")
        xfer.entering.future.add_done_callback(lambda f: _answered(xfer, f))
        try:
            await self.link.ari.originate(
                target.destination,
                app_args=["transfer", self.line.channel_id],
                caller_id=self.link.config.caller_id,
                timeout_s=target.timeout_s,
                channel_id=xfer.channel_id,
                originator=self.line.channel_id,
            )
        except AriError as e:
            xfer.entering.cancel()
            self.link.own.discard(xfer.channel_id)
            return ToolResult.error(f"I couldn't reach {name} right now.", {"error": str(e)})
        self.current = xfer
        self.line.publish("call.transfer_started", target=name, destination=target.destination, mode=mode)
        self.link.spawn(self._follow(xfer), name=f"transfer:{xfer.channel_id}")
        if mode == "blind":
            return ToolResult.success(f"Transferring you to {name} now.", {"target": name, "mode": mode})
        return ToolResult.success(
            f"Transferring you to {name}; please hold while it rings.", {"target": name, "mode": mode}
        )

    async def cancel_transfer(self) -> ToolResult:
        xfer = self.current
        if xfer is None or xfer.state in ("failed", "cancelled"):
            return ToolResult.error("There is no transfer ringing to cancel.")
        if xfer.state == "answered":
            return ToolResult.error(f"{xfer.name} already answered; the transfer can't be cancelled now.")
        xfer.state = "cancelled"
        if xfer.entering is not None:
            xfer.entering.cancel()  # answering now is too late: the engine hangs that channel up
        with contextlib.suppress(AriError):
            await self.link.ari.hangup(xfer.channel_id)
        await self._hold(False)
        if not xfer.outcome.done():
            xfer.outcome.set_result("cancelled")
        self.line.publish("call.transfer_cancelled", target=xfer.name)
        return ToolResult.success(f"I've cancelled the transfer to {xfer.name}. I'm still here.")

    # -------------------------------------------------------------------------------------- events

    def on_gone(self, channel_id: str, cause: int) -> bool:
        xfer = self.current
        if xfer is None or xfer.channel_id != channel_id:
            return False
        if not xfer.outcome.done():
            xfer.outcome.set_result(FAILED_CAUSES.get(cause, UNREACHABLE)[0])
        return True

    # -------------------------------------------------------------------------------------- the flow

    async def _hold(self, on: bool) -> None:
        if not on and not self.holding:
            return
        self.holding = on
        try:
            if self.current is not None and self.current.mode == "blind":
                await self.link.ari.ring(self.line.channel_id, on)
            else:
                await self.link.ari.moh(self.line.channel_id, on)
        except AriError as e:
            what = "starting" if on else "stopping"
            log.warning("transfer: %s hold for %s failed: %s", what, self.line.channel_id, e)

    async def _follow(self, xfer: Transfer) -> None:
        try:
            await self._follow_outcome(xfer)
        finally:
            self._settled.set()

    async def _follow_outcome(self, xfer: Transfer) -> None:
        if xfer.mode == "blind":
            self._settled.clear()
            await self._ai_leaves_bridge()
            self.line.stop_ai("transferred")
            await self._hold(True)
        else:
            # Music once the AI's "please hold" has played, unless the target answers (or fails) first.
            idle: asyncio.Future[Any] = asyncio.ensure_future(self.line.ai_idle(HOLD_AFTER_S))
            outcome: asyncio.Future[Any] = xfer.outcome
            await asyncio.wait({idle, outcome}, return_when=asyncio.FIRST_COMPLETED)
            idle.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await idle
            if not xfer.outcome.done() and xfer.state == "ringing":
                await self._hold(True)
        try:
            async with asyncio.timeout(xfer.target.timeout_s + 5):  # Asterisk's own timeout comes first
                result = await xfer.outcome
        except TimeoutError:
            result = "no_answer"
            with contextlib.suppress(AriError):
                await self.link.ari.hangup(xfer.channel_id)
        if result != "answered" and xfer.entering is not None:
            xfer.entering.cancel()
        if result == "cancelled":
            return
        if result == "answered" and xfer.state == "ringing":
            await self._hand_off(xfer)
            return
        xfer.state = "failed"
        await self._hold(False)
        self.link.own.discard(xfer.channel_id)
        self.line.publish("call.transfer_failed", target=xfer.name, reason=result)
        told = next((t for r, t in (*FAILED_CAUSES.values(), UNREACHABLE) if r == result), UNREACHABLE[1])
        message = f"I'm sorry, {xfer.name} {told}. Is there anything else I can do for you?"
        if xfer.mode == "blind":
            await self.line.resume_ai(message)
        else:
            self.line.tell(message)

    async def _ai_leaves_bridge(self) -> None:
        if self.line.bridge_id and self.line.media_channel_id:
            await self.link.ari.remove_from_bridge(self.line.bridge_id, [self.line.media_channel_id])

    async def settled(self) -> None:
        """Until no hand-off is half done and no blind transfer rings (the call's owner looks at
        ``transferred`` and the AI's return only after this)."""
        await self._settled.wait()

    async def _hand_off(self, xfer: Transfer) -> None:
        """The four steps, timed from the answer: AI media out, AI stopped, agent in, session updated."""
        xfer.state = "answered"
        self._settled.clear()
        try:
            await self._steps(xfer)
        finally:
            self._settled.set()

    async def _steps(self, xfer: Transfer) -> None:
        t0 = time.perf_counter()
        if xfer.mode == "warm":
            await self._ai_leaves_bridge()  # 1
            self.line.stop_ai("transferred")  # 2
        await self._hold(False)
        assert self.line.bridge_id is not None
        try:
            await self.link.ari.add_to_bridge(self.line.bridge_id, [xfer.channel_id])  # 3
        except AriError as e:  # the target hung up between answering and joining: the AI comes back
            log.warning("transfer: %s could not join the caller: %s", xfer.name, e)
            xfer.state = "failed"
            self.link.own.discard(xfer.channel_id)
            self.line.publish("call.transfer_failed", target=xfer.name, reason="hung_up")
            await self.line.resume_ai(
                f"I'm sorry, {xfer.name} hung up before I could connect you. Is there anything else I can do for you?"
            )
            return
        xfer.handoff_ms = (time.perf_counter() - t0) * 1000
        self.transferred = True  # 4
        self.line.publish("call.transfer_answered", target=xfer.name, handoff_ms=round(xfer.handoff_ms, 2))

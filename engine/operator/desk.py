"""The operator's commands on a live phone call, on the e-mail outbox and on the engine's capacity.

Why apart from ``engine.app``: they are thin doors onto three parts (telephony's monitor and the phone lines, the
e-mail outbox, the admission of new calls), kept out of the composition root so ``app.py`` stays about lifecycle and
wiring. The engine's facade forwards to an ``OperatorDesk`` that is handed exactly those parts (``PhoneMonitor``,
the outbox, ``Admission``, the store's status) and the steering part's ``say_now``, never the engine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from engine.calls.capacity import Admission, CapacityStatus
from engine.config.models import Settings
from engine.sessions.session import CallError
from engine.sessions.snapshot import OutboxMessage
from engine.tools.builtin.transfer import PhoneLines, TransferMode, resolve_destination

if TYPE_CHECKING:
    from engine.email.outbox import Outbox
    from engine.voice.backend import AudioBackend


class PhoneMonitor(Protocol):
    """Telephony's side of the operator on a live phone call."""

    async def monitor(self, channel_id: str, mode: str, backend: Callable[[], AudioBackend]) -> str: ...


class OperatorDesk:
    def __init__(
        self,
        *,
        settings: Callable[[], Settings],
        lines: PhoneLines,
        phone: PhoneMonitor,
        outbox: Callable[[], Outbox],
        admission: Admission,
        store_status: Callable[[], dict[str, Any] | None],
        say_now: Callable[[str, str], Awaitable[str]],
    ) -> None:
        self._settings = settings
        self.lines = lines
        self._phone = phone
        self._outbox = outbox
        self.admission = admission
        self._store_status = store_status
        self._say_now = say_now

    async def monitor_call(
        self,
        channel_id: str,
        mode: str,
        backend_factory: Callable[[], AudioBackend] | None = None,
        devices: tuple[str | int | None, str | int | None] | None = None,
    ) -> str:
        """Put the operator on a live phone call: ``listen``, ``whisper_agent``, ``whisper_caller``, ``takeover``,
        or ``off`` (leaving a take-over hands the caller back to the AI). The operator's audio uses ``devices``
        (input, output; default the softphone's config) unless ``backend_factory`` gives another backend.
        Publishes ``call.monitor_changed``; raises with the reason when it cannot be done."""
        from engine.voice.softphone import device_backend

        phone = self._settings().softphone
        mic, speaker = devices if devices is not None else (phone.input_device, phone.output_device)

        def devices_backend() -> AudioBackend:
            return device_backend(mic, speaker, phone.sample_rate, 20)

        return await self._phone.monitor(channel_id, mode, backend_factory or devices_backend)

    async def transfer_call(self, call_id: str, destination: str, mode: TransferMode = "blind") -> dict[str, object]:
        """The operator transfers a live phone call to a destination of ``tools.extensions`` (its name or an alias,
        as the transfer tools take it), through the call's own transfer control, so the result is the same as when
        the AI does it: ``blind`` (the AI leaves at once; a target that fails brings it back to tell the caller) or
        ``warm`` (the AI tells the caller to hold, music while the target rings, the AI steps out on answer).
        Returns ``{"ok", "message", "target", "mode"}``; ``CallError`` for an unknown call, a call without a phone
        line, an unknown destination (naming the valid ones) or a transfer Asterisk refused."""
        if mode not in ("blind", "warm"):
            raise ValueError(f"transfer mode must be 'blind' or 'warm', not {mode!r}")
        control = self.lines.get(call_id)
        if control is None:
            raise CallError(f"call {call_id!r} has no phone line (only phone calls can be transferred)")
        extensions = self._settings().tools.extensions
        found = resolve_destination(extensions, destination)
        if found is None:
            valid = ", ".join(extensions) or "none: tools.extensions is empty"
            raise CallError(f"no transfer destination {destination!r} in tools.extensions (valid: {valid})")
        result = await control.transfer(found[0], found[1], mode)
        if result.status != "success":
            raise CallError(f"transfer of call {call_id} to {found[0]} failed: {result.message}")
        if mode == "warm":  # what the model says after the transfer tool: the caller is told to hold
            await self._say_now(call_id, result.message)
        return {"ok": True, "message": result.message, "target": found[0], "mode": mode}

    # ---- e-mail outbox (engine/email)

    def outbox_messages(self, status: str | None = None, limit: int = 200) -> list[OutboxMessage]:
        """The outbox's messages, newest first (all, or those of one status: pending, sending, sent, failed)."""
        from engine.email.mail import STATUSES

        if status is not None and status not in STATUSES:
            raise ValueError(f"unknown outbox status {status!r} (one of {', '.join(STATUSES)})")
        return [
            OutboxMessage(
                message_id=r.email.message_id,
                kind=r.email.kind,
                to=r.email.to,
                subject=r.email.subject,
                status=r.status,
                attempts=r.attempts,
                resent=r.resent,
                updated_at=r.updated_at,
                last_error=r.last_error,
                call_id=r.email.call_id,
                next_attempt_at=r.next_at if r.status == "pending" else None,
            )
            for r in self._outbox().rows(status, limit)
        ]

    def retry_email(self, message_id: str) -> bool:
        """Send a pending or failed message again now; False when there is no such message to retry."""
        return self._outbox().retry(message_id)

    def drop_email(self, message_id: str) -> bool:
        """Forget a message (not while it is being sent); False when there was none to drop."""
        return self._outbox().drop(message_id)

    # ---- capacity (engine/capacity): engine.max_calls and drain, for rolling restarts

    def drain(self) -> dict[str, object]:
        """Take no new calls (they are refused; phone callers hear busy) and let the live ones finish."""
        return self.capacity(self.admission.drain())

    def resume(self) -> dict[str, object]:
        """Take new calls again after ``drain``."""
        return self.capacity(self.admission.resume())

    def capacity(self, status: object = None) -> dict[str, object]:
        """Live calls, ``engine.max_calls``, whether draining, calls refused so far, and the store's state."""
        now = status if isinstance(status, CapacityStatus) else self.admission.status()
        return {**now.to_dict(), "refused": dict(self.admission.refused), "store": self._store_status()}

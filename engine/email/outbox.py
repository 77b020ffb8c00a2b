"""The durable outbox: every e-mail is a row in SQLite before anyone is told it is queued.

Why: e-mail is where a voice agent most easily loses data (an SMTP server that is down, a crash between "sent" and
"done"). ``enqueue`` is one local SQLite insert (WAL journal, ``synchronous=NORMAL``: a committed row survives the
process being killed, SIGKILL included; only an OS crash or power loss may take the last commits) and returns at
once. One worker (``run``, spawned by the e-mail component in the engine's task group) sends due rows one at a time
through a ``Transport``; a temporary failure (SMTP 4xx, a timeout, a refused connection, HTTP 429/5xx) is retried
with exponential backoff (``engine.core.backoff.Backoff``, 1 min doubling to 30 min by default) until the message is
``max_age_s`` old (48 h by default; ``max_attempts`` only when set); a permanent one (SMTP 5xx, HTTP 4xx) ends the
row ``failed`` with the server's reason kept. Outcomes are per recipient (``engine.email.recipients``).

Delivery guarantee (at least once, duplicates bounded and marked): a row is set ``sending`` (committed) before its
attempt and ``sent`` after the server accepted it. A crash in between leaves it ``sending``; the next start puts it
back to ``pending`` with ``resent`` set (as does a lost answer after the message went, or a worker cut during a
send), so it is sent again — with the same ``Message-ID`` (fixed at enqueue, stored
in the row), and with Resend the same ``Idempotency-Key``, so Resend drops the copy (24 h window) and mail stores
that fold messages by Message-ID show one. The worker sends one message at a time, so a crash duplicates at most
the one message that was in flight. Rows ``held`` (a caller's transcript waiting for the end of its call) are
released as they are at the next start: the call they belong to ended with the old process.

Several engines may share one file (``serve`` and ``ava-engine email test`` on the same machine): a row goes from
``pending`` to ``sending`` in one conditional UPDATE, so only one engine sends it, and rows ``sending`` or ``held``
carry their engine's pid and token, so only those of an engine that is no longer running are taken over (at open,
and every ``RECOVER_EVERY_S`` while the worker runs).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from engine.core.backoff import Backoff
from engine.email.mail import (
    STATUSES,
    Delivery,
    DeliveryError,
    Email,
    Notify,
    Prepare,
    Row,
    Status,
    Transport,
    mask_addresses,
    new_message_id,
)
from engine.email.outbox_db import COLUMNS, PROCESS_TOKEN, connect, decode, owner_alive
from engine.email.recipients import applied, initial, pending, to_json
from engine.email.retry_policy import after_attempt

__all__ = ["DeliveryError", "Email", "Outbox", "Row", "Transport", "mask_addresses", "new_message_id"]

log = logging.getLogger(__name__)


#: How often a running worker looks for rows another engine on the same file left behind when it died.
RECOVER_EVERY_S = 30.0
#: A message that keeps failing temporarily ends ``failed`` this long after it became due (``tools.email.max_age_s``).
MAX_AGE_S = 48 * 3600.0


class Outbox:
    """Rows in one SQLite file; ``enqueue``/``hold`` from anywhere on the loop, ``run`` in one worker task."""

    def __init__(
        self,
        path: Path,
        *,
        backoff: Backoff | None = None,
        max_attempts: int | None = None,
        max_age_s: float = MAX_AGE_S,
        notify: Notify | None = None,
        prepare: Prepare | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.backoff = backoff or Backoff(60.0, 1800.0)
        self.max_attempts = max_attempts
        self.max_age_s = max_age_s
        self.notify = notify
        self.prepare = prepare
        self._clock = clock
        self._db: sqlite3.Connection | None = None
        #: Marks the rows this engine is sending or holding (pid and a random token).
        self.owner = f"{os.getpid()}:{PROCESS_TOKEN}"
        self._recovered_at = 0.0
        self._wake = asyncio.Event()
        #: Set while the worker has nothing due (``stop`` waits for it to let a just-stored summary go out).
        self.idle = asyncio.Event()
        #: Messages handed to the transport by this process (a test or bench reads it).
        self.attempts_made = 0
        #: Set by ``finish``: the worker returns once the message it is sending (if any) has its answer.
        self.stopping = False
        #: The row being sent right now, if any.
        self.in_flight: Row | None = None

    # ---------------------------------------------------------------------------------------------- storage

    def open(self) -> None:
        """Open (creating) the file; rows a previous process left ``sending`` or ``held`` become ``pending``."""
        if self._db is not None:
            return
        self._db = connect(self.path)
        self.recover()

    def recover(self) -> int:
        """Rows a dead engine left ``sending`` (sent again, ``resent``) or ``held`` (its call is over) become
        ``pending``; returns how many."""
        now = self._clock()
        self._recovered_at = now
        rows = self.db.execute("SELECT id, status, owner FROM messages WHERE status IN ('sending', 'held')").fetchall()
        n = 0
        for id_, status, owner in rows:
            if owner_alive(owner, self.owner):
                continue
            resent = 1 if status == "sending" else 0
            n += self.db.execute(
                "UPDATE messages SET status='pending', resent=MAX(resent, ?), next_at=?, updated_at=?, owner=NULL"
                " WHERE id=? AND status=?",
                (resent, now, now, id_, status),
            ).rowcount
        if n:
            self._wake.set()
        return n

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.open()
        assert self._db is not None
        return self._db

    def _insert(self, email: Email, status: Status) -> Row:
        now = self._clock()
        cur = self.db.execute(
            "INSERT INTO messages (message_id, kind, call_id, status, sender, recipients, bcc, subject, text, html,"
            " next_at, created_at, updated_at, record, owner, deliveries, due_since)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                email.message_id,
                email.kind,
                email.call_id,
                status,
                email.sender,
                json.dumps(list(email.to)),
                json.dumps(list(email.bcc)),
                email.subject,
                email.text,
                email.html,
                now,
                now,
                now,
                email.record,
                self.owner if status == "held" else None,
                to_json(initial(email)),
                now,
            ),
        )
        assert cur.lastrowid is not None
        return Row(cur.lastrowid, email, status, 0, False, now, now, now, None, initial(email), now)

    def get(self, message_id: str) -> Row | None:
        r = self.db.execute(f"SELECT {COLUMNS} FROM messages WHERE message_id=?", (message_id,)).fetchone()
        return decode(r) if r is not None else None

    def rows(self, status: Status | None = None, limit: int = 200) -> list[Row]:
        """The newest rows first (all, or those of one status)."""
        if status is None:
            q = self.db.execute(f"SELECT {COLUMNS} FROM messages ORDER BY id DESC LIMIT ?", (limit,))
        else:
            q = self.db.execute(
                f"SELECT {COLUMNS} FROM messages WHERE status=? ORDER BY id DESC LIMIT ?", (status, limit)
            )
        return [decode(r) for r in q.fetchall()]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for status, n in self.db.execute("SELECT status, COUNT(*) FROM messages GROUP BY status"):
            out[str(status)] = int(n)
        return out

    def due(self) -> int:
        """Rows being sent or due now (not those waiting for a retry)."""
        (n,) = self.db.execute(
            "SELECT COUNT(*) FROM messages WHERE status='sending' OR (status='pending' AND next_at <= ?)",
            (self._clock(),),
        ).fetchone()
        return int(n)

    def _set(self, row: Row, status: Status, *, quiet: bool = False, **changes: object) -> Row:
        new = replace(row, status=status, updated_at=self._clock(), **changes)  # type: ignore[arg-type]
        self.db.execute(
            "UPDATE messages SET status=?, attempts=?, next_at=?, last_error=?, updated_at=?, resent=?, deliveries=?,"
            " due_since=? WHERE id=?",
            (
                status,
                new.attempts,
                new.next_at,
                new.last_error,
                new.updated_at,
                int(new.resent),
                to_json(new.deliveries),
                new.due_since,
                row.id,
            ),
        )
        if status != row.status and not quiet:
            self._tell(new, row.status)
        return new

    # ---------------------------------------------------------------------------------------------- commands

    def enqueue(self, email: Email) -> Row:
        """Store a message for sending (committed when this returns) and wake the worker."""
        row = self._insert(email, "pending")
        self._tell(row, "")
        self.idle.clear()
        self._wake.set()
        return row

    def hold(self, email: Email) -> Row:
        """Store a message that waits for ``release`` (a transcript waiting for the end of its call)."""
        row = self._insert(email, "held")
        self._tell(row, "")
        return row

    def release(self, message_id: str, record: str) -> bool:
        """A held message becomes due, to be rendered from ``record`` (the whole call); False when it is not held."""
        now = self._clock()
        cur = self.db.execute(
            "UPDATE messages SET status='pending', record=?, next_at=?, updated_at=?, due_since=?"
            " WHERE message_id=? AND status='held'",
            (record, now, now, now, message_id),
        )
        if cur.rowcount:
            self.idle.clear()
            self._wake.set()
        return bool(cur.rowcount)

    def retry(self, message_id: str) -> bool:
        """Operator: send a pending or failed message now to the recipients that did not get it (attempts and age
        start again)."""
        row = self.get(message_id)
        if row is None or row.status not in ("pending", "failed"):
            return False
        again = tuple(replace(d, status="pending") if d.status == "failed" else d for d in row.deliveries)
        now = self._clock()
        self._set(row, "pending", attempts=0, next_at=now, due_since=now, deliveries=again)
        self._wake.set()
        return True

    def drop(self, message_id: str) -> bool:
        """Operator: forget a message that is not being sent right now."""
        cur = self.db.execute("DELETE FROM messages WHERE message_id=? AND status != 'sending'", (message_id,))
        return bool(cur.rowcount)

    def _tell(self, row: Row, before: str) -> None:
        if self.notify is not None:
            try:
                self.notify(row, before)
            except Exception as e:  # a listener must never stop the outbox
                log.warning("outbox listener failed: %s: %s", type(e).__name__, e)

    # ---------------------------------------------------------------------------------------------- worker

    def _next_due(self) -> tuple[Row | None, float | None]:
        """The oldest due row, or None and when the next one will be due."""
        now = self._clock()
        r = self.db.execute(
            f"SELECT {COLUMNS} FROM messages WHERE status='pending' ORDER BY next_at, id LIMIT 1"
        ).fetchone()
        if r is None:
            return None, None
        row = decode(r)
        return (row, None) if row.next_at <= now else (None, row.next_at - now)

    async def run(self, transport: Callable[[], Transport]) -> None:
        """Send due rows forever (until cancelled). ``transport`` is read per message: a reload applies at once."""
        self.open()
        task = asyncio.current_task()
        while not self.stopping:
            self._wake.clear()  # before looking: a message stored from here on wakes the wait below
            row, wait_s = self._next_due()
            if row is None:
                if self._clock() - self._recovered_at > RECOVER_EVERY_S:
                    self.recover()  # rows of an engine that died while this one runs
                    continue
                await self._idle(transport())  # a kept SMTP connection is closed between bursts
                if task is not None and task.cancelling():  # the close swallowed our cancellation (3.11's wait_for can)
                    raise asyncio.CancelledError
                if self._wake.is_set():  # stored while the connection was closing: not idle, look again
                    continue
                self.idle.set()
                if wait_s is None or wait_s > RECOVER_EVERY_S:
                    wait_s = RECOVER_EVERY_S
                try:
                    async with asyncio.timeout(wait_s):
                        await self._wake.wait()
                except TimeoutError:
                    pass
                continue
            self.idle.clear()
            await self.send_one(row, transport())
            if task is not None and task.cancelling():  # so did the send: stop as asked
                raise asyncio.CancelledError
        await self._idle(transport())

    def finish(self) -> None:
        """Stopping: the worker sends nothing new, and returns once the message in flight (if any) is answered."""
        self.stopping = True
        self._wake.set()

    async def _idle(self, transport: Transport) -> None:
        try:
            await transport.aclose()
        except Exception as e:
            log.debug("closing the %s transport failed: %s", transport.name, e)

    async def send_one(self, row: Row, transport: Transport) -> Row:
        """One attempt at one row: ``sending`` first (committed), then ``sent``, back to ``pending``, or ``failed``."""
        if row.email.record is not None and self.prepare is not None:
            try:
                row = self._rendered(row, self.prepare(row.email))
            except Exception as e:  # a broken user template: kept failed with the reason, never retried blindly
                row = self._set(row, "sending", attempts=row.attempts + 1)
                error = DeliveryError(f"rendering the message failed: {type(e).__name__}: {e}", permanent=True)
                return self._settle(row, applied(row.deliveries, pending(row.deliveries), None, error))
        claimed = self._claim(row)
        if claimed is None:  # another engine on this file took it (or an operator dropped it)
            return self.get(row.email.message_id) or row
        row = claimed
        envelope = pending(row.deliveries)
        email = row.email if envelope == row.email.recipients else replace(row.email, envelope=envelope)
        self.attempts_made += 1
        self.in_flight = row
        try:
            refused = await transport.send(email)
        except asyncio.CancelledError:
            # cut mid-send: the server may have the message, so its next attempt (here or after a restart) is marked
            self._set(row, "pending", quiet=True, resent=True)
            raise
        except DeliveryError as e:
            resent = row.resent or e.maybe_sent
            return self._settle(replace(row, resent=resent), applied(row.deliveries, envelope, None, e))
        except Exception as e:  # a transport bug or an unforeseen error: retried, never the worker's end
            error = DeliveryError(f"{type(e).__name__}: {e}", permanent=False)
            return self._settle(row, applied(row.deliveries, envelope, None, error))
        finally:
            self.in_flight = None
        if refused and any(e.maybe_sent for e in refused.values()):
            row = replace(row, resent=True)
        return self._settle(row, applied(row.deliveries, envelope, refused, None))

    def _claim(self, row: Row) -> Row | None:
        """``pending`` -> ``sending`` only if nobody else did it first (one UPDATE: atomic across processes)."""
        now = self._clock()
        cur = self.db.execute(
            "UPDATE messages SET status='sending', attempts=attempts+1, owner=?, updated_at=?"
            " WHERE id=? AND status='pending'",
            (self.owner, now, row.id),
        )
        if not cur.rowcount:
            return None
        new = replace(row, status="sending", attempts=row.attempts + 1, updated_at=now)
        self._tell(new, row.status)
        return new

    def _rendered(self, row: Row, email: Email) -> Row:
        """Keep the rendered message (every retry sends the same bytes) and drop the record it came from."""
        self.db.execute(
            "UPDATE messages SET subject=?, text=?, html=?, record=NULL WHERE id=?",
            (email.subject, email.text, email.html, row.id),
        )
        return replace(row, email=replace(email, record=None))

    def _settle(self, row: Row, deliveries: tuple[Delivery, ...]) -> Row:
        """After an attempt: ``sent``, ``failed``, or ``pending`` again with the next attempt backed off
        (``engine.email.retry_policy``)."""
        step = after_attempt(row, deliveries, self._clock(), self.backoff, self.max_age_s, self.max_attempts)
        e, reason = row.email, mask_addresses(step.reason or "")
        if step.retry_at is not None:
            log.info("e-mail %s (%s) attempt %d failed: %s", e.message_id, e.kind, row.attempts, reason)
            return self._set(row, "pending", next_at=step.retry_at, last_error=step.reason, deliveries=step.deliveries)
        if step.status == "failed":
            log.info("e-mail %s (%s) failed: %s", e.message_id, e.kind, reason)
        return self._set(row, step.status, last_error=step.reason, deliveries=step.deliveries)

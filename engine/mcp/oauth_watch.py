"""Keeping a running engine true to the OAuth tokens in the keyring, which has no change notification.

Why it exists: ``ava-engine mcp login`` and ``mcp logout`` run in another process (a terminal beside ``serve`` or the
console), yet the running engine must act on them within seconds, without a restart. So the keyring entry itself is
read again, every ``SIGN_IN_POLL_S``, in a worker thread (never on a call's path), and only for servers with
``auth.oauth``. A generation marker that ``logout`` bumps would still have to be polled from a shared place, and
would miss tokens deleted by anything else (the keyring's own tools, another engine); reading the entry catches
every change. Each read also renews what the status shows (``KeyringTokenStorage.last_status``).

- ``wait_for_sign_in``: a server in ``needs sign-in`` connects once other tokens than the failed ones are stored.
- ``watch_sign_out``: an up server whose tokens are gone ends its connection (tools withdrawn, ``needs sign-in``).
- ``keep_fresh``: an idle server's token is refreshed on time (``tend`` runs it beside ``watch_sign_out``).

Only a digest of the access token is kept in memory here.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from engine.mcp.oauth import EngineOAuth, sign_in_hint
from engine.mcp.token_store import KeyringTokenStorage

log = logging.getLogger(__name__)

#: How often the keyring entry of a server with ``auth.oauth`` is read (a sign-in or sign-out shows within this).
SIGN_IN_POLL_S = 2.0


def _fingerprint(storage: KeyringTokenStorage) -> str | None:
    tokens = storage.tokens()
    return hashlib.sha256(tokens.access_token.encode()).hexdigest() if tokens is not None else None


async def _read(storage: KeyringTokenStorage) -> tuple[bool, str | None]:
    """(read at all, fingerprint); a keyring that cannot be read now is retried on the next round."""
    try:
        return True, await asyncio.to_thread(_fingerprint, storage)
    except Exception as e:
        log.debug("server %s: reading the keyring failed: %s", storage.server_id, type(e).__name__)
        return False, None


async def wait_for_sign_in(storage: KeyringTokenStorage, stop: asyncio.Event) -> bool:
    """Until other tokens than the ones that failed are stored for the server (True), or ``stop`` is set (False)."""
    _, seen = await _read(storage)
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), SIGN_IN_POLL_S)
            return False
        ok, now = await _read(storage)
        if ok and now is not None and now != seen:
            log.info("server %s: new OAuth tokens were stored; connecting", storage.server_id)
            return True
    return False


async def watch_sign_out(storage: KeyringTokenStorage, on_signed_out: Callable[[str], None]) -> None:
    """Until the server's tokens are gone from the keyring; then ``on_signed_out`` with the reason, once."""
    while True:
        await asyncio.sleep(SIGN_IN_POLL_S)
        ok, now = await _read(storage)
        if ok and now is None:
            sid = storage.server_id
            log.info("server %s: its OAuth tokens were deleted (signed out); waiting for a sign-in", sid)
            on_signed_out(f"{sign_in_hint(sid)} (signed out: its OAuth tokens were deleted)")
            return


async def keep_fresh(auth: EngineOAuth, touch: Callable[[], Awaitable[Any]]) -> None:
    """Refresh an idle connection's token before it expires: ``touch`` (a cheap request) when the refresh is due;
    the SDK refreshes on the way, or the flow ends in ``SignInRequired`` and the server in ``needs sign-in``."""
    while True:
        due = auth.refresh_due_in()
        if due is None:
            return
        await asyncio.sleep(due + 0.05)
        try:
            await touch()
        except Exception as e:  # the connection's own death or sign-in state is reported by its callbacks
            log.info("server %s: keeping the token fresh failed: %s", auth.server_id, auth.fault or type(e).__name__)
            if auth.refresh_due_in() == 0.0:
                return


async def tend(
    auth: EngineOAuth,
    storage: KeyringTokenStorage,
    touch: Callable[[], Awaitable[Any]],
    on_signed_out: Callable[[str], None],
) -> None:
    """While a server with ``auth.oauth`` is up: its token kept fresh, and a sign-out elsewhere noticed (a grant
    without a person fetches a new token itself: a sign-out only drops the stored one)."""
    if auth.machine:
        await keep_fresh(auth, touch)
        return
    await asyncio.gather(keep_fresh(auth, touch), watch_sign_out(storage, on_signed_out))


def auth_status(storage: KeyringTokenStorage | None) -> dict[str, Any]:
    """For the status: whether OAuth tokens are stored and when they expire (never a value), as last read — the
    status never waits for the keyring; ``signed_in`` is None until the server's first attempt read it."""
    last = storage.last_status if storage is not None else None
    return {"type": "oauth", **(last or {"signed_in": None})}

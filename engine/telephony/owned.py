"""Which Asterisk channels and bridges this engine made, by their ids, and releasing what an earlier run left.

Why it exists: a killed engine (SIGKILL, OOM, a power cut) leaves its bridges, media channels and callers up in
Asterisk, and a caller in a dead engine's bridge hears silence until they hang up. Every id the engine chooses
names its owner: ``ava-<kind>-<owner>.<pid>-<caller channel id>[-<n>]``, where ``owner`` is a short hash of the
engine's ``engine.id`` (else the host name) and the Stasis app, and ``pid`` is the process that made it. On start
(once the events socket is up, before any call is taken) the engine lists ``GET /channels`` and ``GET /bridges``
and releases what carries its own owner and either its own pid (a restart that got the same pid, as in a
container) or the pid of a process that no longer runs on this host. Everything else stays: another engine's
resources (another owner; engines sharing one Asterisk through the Redis store have distinct ids), those of a
process of this same engine that still runs, and anything no id scheme of ours names (dialplan bridges, callers
of other apps). The id alone decides, never "in our Stasis app with no live call": several engines can share one
app, and a caller in another engine's call is in Stasis too. A call that was handed to a human (a transfer
channel of ours in the call's bridge) keeps its bridge, caller and agent; only the AI's side goes.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
import socket
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from engine.core.processes import pid_alive
from engine.telephony.ari import AriClient, AriError

log = logging.getLogger(__name__)

#: The kinds of ids: the call's bridge, its media channel, a transfer's channel, the operator's media, snoop and
#: monitor bridge.
KINDS = ("call", "em", "xfer", "op", "snoop", "mon")
BRIDGE_KINDS = ("call", "mon")
_ID = re.compile(r"ava-(call|em|xfer|op|snoop|mon)-([0-9a-f]{8})\.([0-9]+)-(.+)")


@dataclass(frozen=True)
class Owned:
    """An id made by some engine's ``ResourceIds``: who made it, what it is, for which caller."""

    id: str
    kind: str
    owner: str
    pid: int
    caller: str


def parse(resource_id: str) -> Owned | None:
    """The parts of an id ``ResourceIds`` made, or None for any other id."""
    m = _ID.fullmatch(resource_id)
    if m is None:
        return None
    kind, owner, pid, rest = m.groups()
    caller = rest.rsplit("-", 1)[0] if kind == "xfer" else rest
    return Owned(resource_id, kind, owner, int(pid), caller)


@dataclass(frozen=True)
class ResourceIds:
    """The ids one engine process gives the channels and bridges it creates."""

    owner: str
    pid: int

    @classmethod
    def for_engine(cls, engine_id: str | None, app: str) -> ResourceIds:
        """``engine_id`` (``engine.id``) when configured, else this host's name, with the Stasis ``app``."""
        source = f"id:{engine_id}" if engine_id else f"host:{socket.gethostname()}"
        return cls(hashlib.sha256(f"{source}/{app}".encode()).hexdigest()[:8], os.getpid())

    def make(self, kind: str, caller: str, n: int | None = None) -> str:
        if kind not in KINDS:
            raise ValueError(f"unknown resource kind {kind!r} (one of {', '.join(KINDS)})")
        return f"ava-{kind}-{self.owner}.{self.pid}-{caller}" + ("" if n is None else f"-{n}")

    def left_over(self, owned: Owned) -> bool:
        """Made by this engine in a process that is gone (or by this very pid before this process started)."""
        return owned.owner == self.owner and (owned.pid == self.pid or not pid_alive(owned.pid))


async def release_leftovers(ari: AriClient, ids: ResourceIds, timeout_s: float) -> dict[str, list[str]]:
    """Release what an earlier run of this engine left in Asterisk (see the module's docstring); returns what was
    released (``bridges``, ``channels``, ``callers``) and what was kept for a human (``kept``)."""
    channels = {str(c.get("id", "")): c for c in await ari.channels()}
    bridges = {str(b.get("id", "")): b for b in await ari.bridges()}
    ours = [o for o in map(parse, [*channels, *bridges]) if o is not None and ids.left_over(o)]
    alive_elsewhere = sorted(
        {o.pid for o in map(parse, [*channels, *bridges]) if o and o.owner == ids.owner} - {o.pid for o in ours}
    )
    if alive_elsewhere:
        log.info("telephony: leaving the Asterisk resources of running engine processes %s alone", alive_elsewhere)
    human = _handed_to_humans(ours, bridges)
    released: dict[str, list[str]] = {"bridges": [], "channels": [], "callers": [], "kept": []}
    steps: list[tuple[str, str, Awaitable[Any]]] = []
    for o in ours:
        if o.caller in human and o.kind in ("call", "xfer"):
            released["kept"].append(o.id)
        elif o.id in bridges and o.kind in BRIDGE_KINDS:
            steps.append(("bridges", o.id, ari.destroy_bridge(o.id)))
        elif o.id in channels:
            steps.append(("channels", o.id, ari.hangup(o.id)))
    callers = {o.caller for o in ours if o.kind in ("call", "em") and o.caller not in human}
    for caller in sorted(callers & set(channels)):
        steps.append(("callers", caller, ari.hangup(caller)))
    if human:
        released["kept"].extend(sorted(human))
    results = await asyncio.gather(*(_bounded(s, timeout_s) for _, _, s in steps), return_exceptions=True)
    for (what, rid, _), result in zip(steps, results, strict=True):
        if isinstance(result, AriError) and result.status == 404:
            continue  # gone meanwhile (its caller hung up)
        if isinstance(result, BaseException):
            log.warning("telephony: releasing %s left by an earlier run failed: %s", rid, result)
            continue
        released[what].append(rid)
    _log_released(released)
    return released


def _handed_to_humans(ours: list[Owned], bridges: dict[str, dict[str, Any]]) -> set[str]:
    """Callers whose call an agent took (an ``xfer`` channel of theirs in the call's bridge): their bridge, caller
    and agent stay."""
    human: set[str] = set()
    for o in ours:
        if o.kind == "call" and o.id in bridges:
            members = [str(c) for c in bridges[o.id].get("channels") or []]
            if any((m := parse(c)) is not None and m.kind == "xfer" and m.caller == o.caller for c in members):
                human.add(o.caller)
    return human


def _log_released(released: dict[str, list[str]]) -> None:
    if any(released[k] for k in ("bridges", "channels", "callers")):
        log.warning(
            "telephony: released what an earlier run of this engine left in Asterisk: bridges %s, channels %s, "
            "callers hung up %s",
            released["bridges"],
            released["channels"],
            released["callers"],
        )
    if released["kept"]:
        log.info("telephony: left up calls an earlier run handed to a human: %s", released["kept"])


async def _bounded(step: Awaitable[Any], timeout_s: float) -> Any:
    try:
        async with asyncio.timeout(timeout_s):
            return await step
    except TimeoutError:
        raise AriError("release", f"no answer within {timeout_s:g} s") from None

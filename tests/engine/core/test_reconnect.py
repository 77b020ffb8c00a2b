"""The one reconnect loop on ``Backoff``: the waits it sleeps, when it gives up, stops, and why (no wall clock)."""

from __future__ import annotations

import pytest

from engine.core.backoff import Backoff, Retry, reconnect

STEPS = Backoff(1.0, 4.0, jitter=0)  # no jitter: every wait is its step


class Refused(Exception):
    def __init__(self, why: str, fatal: bool = False) -> None:
        super().__init__(why)
        self.fatal = fatal


class Peer:
    """Fails with the given errors in turn, then answers ``"up"``; records what the loop slept between tries."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.tries = 0
        self.log: list[str] = []

    async def connect(self) -> str:
        self.tries += 1
        self.log.append("try")
        if self.failures:
            raise self.failures.pop(0)
        return "up"

    async def sleep(self, s: float) -> None:
        self.log.append(f"sleep {s:g}")


async def test_waits_the_backoff_before_every_try_and_returns_the_connection() -> None:
    peer = Peer(Refused("a"), Refused("b"))
    retry = Retry(STEPS, tries=5, sleep=peer.sleep)
    assert await reconnect(peer.connect, retry, Refused) == "up"
    assert peer.log == ["sleep 1", "try", "sleep 2", "try", "sleep 4", "try"]
    assert retry.failures == 2 and retry.reason == "b"


async def test_at_once_skips_only_the_first_wait() -> None:
    peer = Peer(Refused("a"))
    assert await reconnect(peer.connect, Retry(STEPS, tries=3, sleep=peer.sleep), Refused, at_once=True) == "up"
    assert peer.log == ["try", "sleep 2", "try"]


async def test_gives_up_after_its_tries_and_keeps_the_last_reason() -> None:
    peer = Peer(*(Refused(f"down {n}") for n in range(10)))
    retry = Retry(STEPS, tries=3, sleep=peer.sleep)
    assert await reconnect(peer.connect, retry, Refused) is None
    assert peer.tries == 3 and retry.spent and not retry.stopped
    assert retry.reason == "down 2"
    assert await reconnect(peer.connect, Retry(STEPS, tries=0, sleep=peer.sleep), Refused) is None
    assert peer.tries == 3  # no tries: reconnecting is off


async def test_a_fatal_refusal_ends_it_at_once_and_a_free_one_does_not_count() -> None:
    peer = Peer(Refused("handle expired"), Refused("bad key", fatal=True), Refused("never reached"))
    retry = Retry(STEPS, tries=5, sleep=peer.sleep)
    fatal = lambda e: isinstance(e, Refused) and e.fatal  # noqa: E731
    got = await reconnect(peer.connect, retry, Refused, fatal=fatal, free=lambda e: str(e) == "handle expired")
    assert got is None and retry.reason == "bad key" and not retry.spent
    assert peer.log == ["sleep 1", "try", "sleep 1", "try"]  # the free failure waited the same step again


async def test_stops_when_told_between_the_wait_and_the_try() -> None:
    peer = Peer(Refused("a"), Refused("b"))
    stop = {"now": False}

    async def sleep(s: float) -> None:
        await peer.sleep(s)
        stop["now"] = peer.tries == 1  # told to stop while waiting before the second try

    retry = Retry(STEPS, tries=5, sleep=sleep)
    assert await reconnect(peer.connect, retry, Refused, stopped=lambda: stop["now"]) is None
    assert retry.stopped and peer.tries == 1 and retry.reason == "a"


async def test_other_errors_pass_up() -> None:
    peer = Peer(KeyError("a bug"))
    with pytest.raises(KeyError):
        await reconnect(peer.connect, Retry(STEPS, tries=5, sleep=peer.sleep), Refused)


async def test_a_loop_that_runs_forever_restarts_its_backoff_after_a_success() -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    retry = Retry(STEPS, sleep=sleep)
    for n in range(5):
        await retry.pause(f"down {n}")
    assert slept == [1, 2, 4, 4, 4] and not retry.spent and retry.reason == "down 4"
    retry.succeeded()
    assert retry.failed("down again") == 1 and retry.reason == "down again"


def test_bad_tries_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="reconnect tries"):
        Retry(STEPS, tries=-1)

"""The one backoff policy: doubling steps up to a cap, each wait in the upper half of its step."""

from __future__ import annotations

import random

import pytest

from engine.config.models import McpServerConfig
from engine.core.backoff import Backoff
from engine.mcp.supervisor import Supervisor
from engine.providers.http import HttpClient, HttpSettings


def test_steps_double_up_to_the_cap_and_waits_stay_in_the_upper_half() -> None:
    b = Backoff(0.5, 4.0)
    assert [b.step_s(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    rng = random.Random(7)
    for n in range(8):
        for _ in range(50):
            assert b.step_s(n) / 2 <= b.delay_s(n, rng) <= b.step_s(n)
    assert b.step_s(10_000) == 4.0  # no overflow however many retries
    assert Backoff(1.0, 1.0, jitter=0).delay_s(3) == 1.0
    with pytest.raises(ValueError):
        Backoff(1.0, 1.0, jitter=2)


def test_supervisor_restarts_and_provider_retries_wait_by_the_same_policy() -> None:
    cfg = McpServerConfig.model_validate(
        {"transport": "inprocess", "target": "m:x", "restart": {"backoff_ms": 100, "backoff_max_ms": 350}}
    )
    waits: list[float] = []
    sup = Supervisor.__new__(Supervisor)  # only the policy is exercised: no services, no loop
    sup.cfg = cfg
    for restarts in range(1, 6):
        sup.restarts = restarts
        waits.append(sup._backoff_s())
    policy = Backoff(0.1, 0.35)
    assert all(policy.step_s(n) / 2 <= w <= policy.step_s(n) for n, w in enumerate(waits))
    client = HttpClient("p", HttpSettings(timeout_s=1, max_retries=3, backoff_s=0.2, max_backoff_s=0.5))
    provider = Backoff(0.2, 0.5)
    assert all(provider.step_s(n) / 2 <= client._delay(n, None) <= provider.step_s(n) for n in range(5))
    assert client._delay(0, "7") == 7.0  # Retry-After still wins

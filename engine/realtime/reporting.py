"""What a realtime adapter reports to the engine besides its session events: events it did not handle, rate limits.

Why it exists: the speech-to-speech providers add server event types without notice, and an adapter that drops
what it does not know leaves the operator blind to a provider's changes and failures. Every adapter keeps the
same rule here: an event type it does not handle is counted for every occurrence
(``ai_agent_provider_events_ignored_total{provider,type}``) and logged once per type per session. Rate limits a
provider reports become a ``provider.rate_limits`` event and the ``ai_agent_provider_rate_limit_remaining``
gauge. The adapters reach the engine's bus and metrics through the tool gateway they were given (the engine's
gateway runs tools through the executor, which holds both); a gateway without them (a test's stub) reports
through the log only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from engine.core.metrics import Metrics
from engine.events import Event, ProviderRateLimits, RateLimit

#: How many distinct ignored types one session logs (the rest are still counted).
_LOGGED_MAX = 64


class EngineReports:
    """One session's reports to the engine: ``unhandled`` for server events, ``rate_limits``, ``publish``."""

    def __init__(self, provider: str, log: logging.Logger) -> None:
        self.provider = provider
        self._log = log
        self._bus: Any = None
        self._metrics: Metrics | None = None
        self._logged: set[str] = set()
        self.call_id: str | None = None

    def bind(self, gateway: object, call_id: str | None) -> None:
        """Find the engine's bus and metrics behind ``gateway`` (the call's ``ToolGateway``)."""
        executor = getattr(gateway, "executor", None)
        bus = getattr(executor, "bus", None)
        self._bus = bus if callable(getattr(bus, "publish", None)) else None
        metrics = getattr(executor, "metrics", None)
        self._metrics = metrics if isinstance(metrics, Metrics) else None
        self.call_id = call_id

    def publish(self, event: Event) -> bool:
        """Put ``event`` on the engine's bus; False when this session has none."""
        if self._bus is None:
            return False
        self._bus.publish(event)
        return True

    def unhandled(self, kind: object, what: str = "event") -> None:
        """A server event of type ``kind`` that the adapter does not handle: counted; logged the first time."""
        label = kind if isinstance(kind, str) and kind else "(no type)"
        if self._metrics is not None:
            self._metrics.count_ignored(self.provider, label)
        if label not in self._logged and len(self._logged) < _LOGGED_MAX:
            self._logged.add(label)
            self._log.warning(
                "%s: ignored an unknown %s type %.80r (logged once; every one is counted in "
                "ai_agent_provider_events_ignored_total)",
                self.provider,
                what,
                label,
            )

    def rate_limits(self, raw: Sequence[Any]) -> tuple[RateLimit, ...]:
        """A provider's list of rate limits (OpenAI's ``{name, limit, remaining, reset_seconds}``): published as
        one ``provider.rate_limits`` event, each ``remaining`` set on the gauge. Malformed entries are skipped."""
        limits = tuple(r for r in (_rate_limit(x) for x in raw) if r is not None)
        if not limits:
            return limits
        if self._metrics is not None:
            gauge = self._metrics.provider_rate_limit_remaining
            for r in limits:
                if r.remaining is not None:
                    gauge.labels(self.provider, r.name).set(r.remaining)
        self.publish(ProviderRateLimits(call_id=self.call_id, provider=self.provider, limits=limits))
        return limits


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _rate_limit(raw: Any) -> RateLimit | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw["name"]:
        return None
    limit, remaining = _number(raw.get("limit")), _number(raw.get("remaining"))
    return RateLimit(
        name=raw["name"][:32],
        limit=int(limit) if limit is not None else None,
        remaining=int(remaining) if remaining is not None else None,
        reset_seconds=_number(raw.get("reset_seconds")),
    )

"""``ava-engine check --connect``: reach every configured provider and Asterisk's ARI, and say what failed.

Why it exists: a wrong key, a misspelt model, an exhausted quota or an Asterisk that refuses the ARI credentials
must show up before the first call, as one clear line per target and never with the key in it. Each realtime
adapter already proves its key, model and endpoint with ``check_connection()`` (a handshake and a minimal setup,
no call); ARI is proven with ``GET /asterisk/info``. The targets run concurrently, each under one timeout, and a
target that fails never hides the others. Text providers have no connection check (proving them would cost a
billed request), so they are listed as not checked. What this module prints leaves through the CLI's redacting
stdout like every command's output.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.cli.common import EXIT_FAILED, EXIT_OK, UsageError, print_json

Status = Literal["ok", "failed", "not_checked"]
Probe = Callable[[], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one target answered: ``message`` is the failure (or why it was not checked), ``detail`` what it said."""

    target: str
    kind: str
    status: Status
    message: str = ""
    elapsed_ms: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"target": self.target, "kind": self.kind, "status": self.status}
        if self.message:
            out["message"] = self.message
        if self.status != "not_checked":
            out["elapsed_ms"] = round(self.elapsed_ms, 1)
        if self.detail:
            out["detail"] = self.detail
        return out

    def line(self) -> str:
        what = f"{self.target} ({self.kind})"
        if self.status == "ok":
            return f"  ok      {what:<40} {self.elapsed_ms:.0f} ms"
        if self.status == "failed":
            return f"  FAILED  {what:<40} {self.message}"
        return f"  -       {what:<40} not checked: {self.message}"


async def _probe(target: str, kind: str, probe: Probe, timeout_s: float) -> Outcome:
    """Run one probe under the timeout; every failure becomes the outcome's message (a bug's type is named)."""
    from engine.providers.base import ProviderError
    from engine.telephony.ari import AriError

    start = time.perf_counter()

    def done(status: Status, message: str = "", detail: dict[str, Any] | None = None) -> Outcome:
        elapsed = (time.perf_counter() - start) * 1000
        return Outcome(target, kind, status, message, elapsed, detail or {})

    try:
        async with asyncio.timeout(timeout_s):
            detail = await probe()
    except TimeoutError:
        return done("failed", f"no answer within {timeout_s:g} s")
    except (ProviderError, AriError) as e:
        return done("failed", str(e))
    except Exception as e:  # an adapter bug or an unexpected library error: still one line, never a traceback
        return done("failed", f"{type(e).__name__}: {e}")
    return done("ok", detail=detail)


def _ari_probe(settings: Any) -> Probe:
    async def probe() -> dict[str, Any]:
        from engine.telephony.component import ari_client

        async with ari_client(settings.asterisk) as ari:
            info = await ari.info()
        system = info.get("system") if isinstance(info.get("system"), Mapping) else {}
        version = system.get("version") if isinstance(system, Mapping) else None
        return {"url": settings.asterisk.ari_url, **({"version": version} if version else {})}

    return probe


async def check_connections(settings: Any, base_dir: Path | None, timeout_s: float) -> list[Outcome]:
    """One outcome per provider (in config order) and, when ``asterisk.enabled``, one for ARI."""
    from engine.providers.base import ProviderError
    from engine.providers.factory import create_provider

    outcomes: dict[int, Outcome] = {}
    jobs: dict[int, Awaitable[Outcome]] = {}
    providers = []
    targets = list(settings.providers.items())
    for i, (name, cfg) in enumerate(targets):
        target = f"providers.{name}"
        try:
            provider = create_provider(name, cfg, base_dir=base_dir)
        except ProviderError as e:
            outcomes[i] = Outcome(target, cfg.type, "failed", str(e))
            continue
        providers.append(provider)
        check = getattr(provider, "check_connection", None)
        if check is None:
            outcomes[i] = Outcome(target, cfg.type, "not_checked", "this provider type has no connection check")
        else:
            jobs[i] = _probe(target, cfg.type, check, timeout_s)
    if settings.asterisk.enabled:
        jobs[len(targets)] = _probe("asterisk", "ari", _ari_probe(settings), timeout_s)
    try:
        results = await asyncio.gather(*jobs.values())
    finally:
        for provider in providers:
            try:
                await provider.aclose()
            except Exception:  # closing a provider that never connected must not hide the outcomes
                pass
    outcomes.update(zip(jobs, results, strict=True))
    return [outcomes[i] for i in sorted(outcomes)]


def report(args: argparse.Namespace, settings: Any, summary: dict[str, Any]) -> int:
    """``check --connect``: the config summary, then one line (or JSON row) per target; exit 1 when any failed."""
    if not args.timeout > 0:
        raise UsageError(f"--timeout: must be more than 0 seconds, not {args.timeout:g}")
    outcomes = asyncio.run(check_connections(settings, args.config_path.parent, args.timeout))
    ok = all(o.status != "failed" for o in outcomes)
    if args.json:
        print_json({**summary, "ok": ok, "connections": [o.to_json() for o in outcomes]})
    else:
        counts = {s: sum(o.status == s for o in outcomes) for s in ("ok", "failed", "not_checked")}
        print(
            f"{args.config_path}: config OK; connections: {counts['ok']} ok, {counts['failed']} failed, "
            f"{counts['not_checked']} not checked"
        )
        for o in outcomes:
            print(o.line())
    return EXIT_OK if ok else EXIT_FAILED

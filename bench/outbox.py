"""E-mail outbox: what the automatic summary adds to a call's cleanup, and how fast the outbox drains.

1. Cleanup: ``engine.end_call`` timed for calls of 12 turns (a realistic transcript and tool calls), with
   ``tools.email.summary`` off and on, the two engines' calls interleaved round by round so load on the machine hits
   both alike. With the summary on, the end of the call renders the summary and stores it (one SQLite commit);
   sending happens in the outbox's worker, against a real SMTP server on loopback (STARTTLS and AUTH).
   Goal: ≤ 1 ms added at p50.
2. Throughput: N messages stored at once, timed until the outbox has them all ``sent`` to the loopback SMTP server
   (one connection, TLS handshake and AUTH per burst).
3. Outage: with the default retry settings, one message against an SMTP port that refuses connections for 24 hours
   (an injected clock moved to each next attempt; every attempt is a real connection on loopback), then the server
   back: attempts, the longest wait between two, and whether it was delivered.

The SMTP server (aiosmtpd, the tests' fixture) runs in a process of its own: in this one it would share the GIL and
every SMTP round trip would wait for a thread switch.

Prints p50/p95 per configuration, the p50 difference, messages per second, and the outage's figures.
Run: ``.venv/bin/python bench/outbox.py``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.app import Engine  # noqa: E402
from engine.config.models import Settings  # noqa: E402
from engine.config.models.tools import EmailConfig  # noqa: E402
from engine.core.backoff import Backoff  # noqa: E402
from engine.core.stats import percentiles  # noqa: E402
from engine.email.delivery import SmtpTransport  # noqa: E402
from engine.email.outbox import Email, Outbox, new_message_id  # noqa: E402
from tests.engine.email.conftest import mail_settings  # noqa: E402
from tests.engine.email.smtp_fixture import SmtpServer, free_port  # noqa: E402

ROUNDS = 3
CALLS_PER_ROUND = 100
TURNS = 12
THROUGHPUT_N = 300


async def _until(done: Callable[[], bool], timeout_s: float) -> None:
    async with asyncio.timeout(timeout_s):
        while True:
            if done():
                return
            await asyncio.sleep(0.01)


async def _cleanup_times(engine: Engine, n: int) -> list[float]:
    out: list[float] = []
    for i in range(n):
        call = await engine.start_call("desk", caller_name=f"caller {i}", caller_number="+15550100")
        for t in range(TURNS):
            await engine.user_said(call.call_id, f"turn {t}: a sentence of ordinary length about the order <{i}>")
        t0 = time.perf_counter()
        await engine.end_call(call.call_id, "caller hung up")
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _engine(tmp: Path, smtp: SmtpServer, summary: bool, name: str) -> Engine:
    email: dict[str, Any] = smtp.email_config(outbox=str(tmp / f"{name}.sqlite3"), summary=summary)
    return Engine(Settings.model_validate(mail_settings(email)), config_path=tmp / "config.yaml")


async def cleanup(tmp: Path, smtp: SmtpServer) -> None:
    off, on = _engine(tmp, smtp, False, "off"), _engine(tmp, smtp, True, "on")
    times: dict[str, list[float]] = {"off": [], "on": []}
    async with off, on:
        await _cleanup_times(off, 5)  # warm-up: imports, first SQLite commit, first SMTP connection
        await _cleanup_times(on, 5)
        for r in range(ROUNDS):
            for name, engine in (("off", off), ("on", on)) if r % 2 == 0 else (("on", on), ("off", off)):
                times[name] += await _cleanup_times(engine, CALLS_PER_ROUND)
        await _until(lambda: on.email.outbox.counts()["sent"] >= CALLS_PER_ROUND * ROUNDS + 5, 60)
    p = {k: percentiles(v, 0.5, 0.95) for k, v in times.items()}
    print(f"call cleanup (end_call, {TURNS}-turn calls, {len(times['on'])} per configuration)")
    for k in ("off", "on"):
        print(f"  summary {k:<3}  p50 {p[k][0]:7.3f} ms   p95 {p[k][1]:7.3f} ms")
    print(f"  added by the summary at p50: {p['on'][0] - p['off'][0]:+.3f} ms (goal <= 1 ms)")
    print(f"  summaries delivered to the loopback SMTP server: {on.email.outbox.counts()['sent']}")


async def throughput(tmp: Path, smtp: SmtpServer) -> None:
    engine = _engine(tmp, smtp, False, "throughput")
    async with engine:
        box = engine.email.outbox
        before = box.counts()["sent"]
        t0 = time.perf_counter()
        for i in range(THROUGHPUT_N):
            sender = "ava@example.com"
            box.enqueue(
                Email(new_message_id(sender), "test", sender, (f"u{i}@example.com",), (), f"s{i}", "text", "<p>h</p>")
            )
        stored = time.perf_counter() - t0
        await _until(lambda: box.counts()["sent"] - before >= THROUGHPUT_N, 120)
        total = time.perf_counter() - t0
    print(f"outbox throughput ({THROUGHPUT_N} messages, SMTP on loopback with STARTTLS and AUTH)")
    print(f"  stored in {stored * 1000:.1f} ms ({stored / THROUGHPUT_N * 1e6:.0f} us per enqueue)")
    print(f"  delivered in {total:.2f} s: {THROUGHPUT_N / total:.0f} messages/s")


async def outage(tmp: Path, smtp: SmtpServer, hours: float = 24.0) -> None:
    now = [1_800_000_000.0]
    cfg = {k: v for k, v in smtp.email_config().items() if k not in ("retry_first_s", "retry_max_s")}
    defaults = EmailConfig.model_validate(cfg)
    box = Outbox(
        tmp / "outage.sqlite3",
        backoff=Backoff(defaults.retry_first_s, defaults.retry_max_s),
        max_age_s=defaults.max_age_s,
        clock=lambda: now[0],
    )
    down = SmtpTransport(EmailConfig.model_validate({**cfg, "smtp_port": free_port()}))
    up = SmtpTransport(defaults)
    sender = "ava@example.com"
    row = box.enqueue(Email(new_message_id(sender), "test", sender, ("o@example.com",), (), "outage", "t", "<p>h</p>"))
    start, waits = now[0], []
    while now[0] - start < hours * 3600:
        row = await box.send_one(row, down)
        if row.status != "pending":
            break
        waits.append(row.next_at - now[0])
        now[0] = row.next_at
    status_during = row.status
    row = await box.send_one(row, up)
    await up.aclose()
    box.close()
    print(f"outage of {hours:g} h with the default settings (retry {defaults.retry_first_s:g} s doubling to ", end="")
    print(f"{defaults.retry_max_s:g} s, max age {defaults.max_age_s / 3600:g} h)")
    print(f"  attempts while down: {len(waits)}; still {status_during} after {(now[0] - start) / 3600:.1f} h")
    print(f"  longest wait between attempts: {max(waits) / 60:.1f} min; first {waits[0]:.0f} s")
    print(f"  after the server came back: {row.status} on attempt {row.attempts}")


async def measure(tmp: Path, smtp: SmtpServer) -> None:
    await cleanup(tmp, smtp)
    await throughput(tmp, smtp)
    await outage(tmp, smtp)


def main() -> None:
    warnings.filterwarnings("ignore", message="Session.login_data is deprecated")  # aiosmtpd's own
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        smtp = SmtpServer(tmp)  # its certificate and settings; the server itself runs in a process of its own
        server = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "engine" / "email" / "smtp_fixture.py"), str(tmp), str(smtp.port)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"},
        )
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            asyncio.run(measure(tmp, smtp))
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()

"""``ava-engine email test ADDRESS`` sends one test message through the configured transport and says how it went;
``email outbox`` lists the outbox (pending, sent, failed with the server's reason), ``email retry|drop MESSAGE_ID``
sends a message again now or forgets it — the operator's keys when no console is open.

Why through the outbox: the test proves the path real messages take (templates, Message-ID, the transport with its
TLS and AUTH), not a side door. A test message that fails is dropped from the outbox again (it is not worth
retrying in the background), and the server's reason is printed; secrets never are.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from typing import Any

from engine.cli.common import CommandFailed, UsageError, load, print_json, running_engine


def register(sub: Any) -> None:
    p = sub.add_parser("email", help="e-mail: a test message through tools.email, and the outbox")
    actions = p.add_subparsers(dest="email_command", metavar="ACTION", required=True, parser_class=type(p))
    t = actions.add_parser("test", help="send a test message to ADDRESS and report the server's answer")
    t.add_argument("address", metavar="ADDRESS", help="where to send it")
    t.set_defaults(func=cmd_email_test)
    o = actions.add_parser("outbox", help="the outbox's messages, newest first (failed ones with the reason)")
    o.add_argument("--status", choices=["held", "pending", "sending", "sent", "failed"], help="only these")
    o.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    o.set_defaults(func=cmd_email_outbox)
    for name, text in (("retry", "send a pending or failed message now"), ("drop", "remove a message from the outbox")):
        a = actions.add_parser(name, help=text)
        a.add_argument("message_id", metavar="MESSAGE_ID", help="as `email outbox` shows it")
        a.set_defaults(func=cmd_email_change)


def _outbox(args: argparse.Namespace) -> Any:
    from engine.email.component import outbox_path
    from engine.email.outbox import Outbox

    settings = load(args)
    path = outbox_path(settings.tools.email, args.config_path.parent)
    if not path.exists():
        raise CommandFailed(f"there is no outbox at {path} yet (nothing was ever queued)")
    return Outbox(path)


def cmd_email_outbox(args: argparse.Namespace) -> int:
    if args.limit <= 0:
        raise UsageError(f"--limit must be a positive number, got {args.limit}")
    box = _outbox(args)
    try:
        rows = box.rows(args.status, args.limit)
        counts = box.counts()
    finally:
        box.close()
    out = [
        {
            "message_id": r.email.message_id,
            "kind": r.email.kind,
            "status": r.status,
            "to": list(r.email.to),
            "attempts": r.attempts,
            "resent": r.resent,
            "reason": r.last_error,
            "call_id": r.email.call_id,
            "next_attempt_at": r.next_at if r.status == "pending" else None,
            "recipients": [
                {"address": d.address, "role": d.role, "status": d.status, "reason": d.reason} for d in r.deliveries
            ],
        }
        for r in rows
    ]
    if args.json:
        print_json({"counts": counts, "messages": out})
        return 0
    print(", ".join(f"{n} {s}" for s, n in counts.items()))
    for m in out:
        reason = f"  {m['reason']}" if m["reason"] and m["status"] != "sent" else ""
        print(f"  {m['status']:<8} {m['kind']:<10} {m['message_id']}  {', '.join(m['to'])}  x{m['attempts']}{reason}")
        if m["next_attempt_at"] is not None:
            when = datetime.fromtimestamp(m["next_attempt_at"], UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            print(f"           next attempt {when}")
        if len(m["recipients"]) > 1 or any(d["status"] != m["status"] for d in m["recipients"]):
            for d in m["recipients"]:
                role = " (bcc)" if d["role"] == "bcc" else ""
                why = f" {d['reason']}" if d["reason"] and d["status"] != "sent" else ""
                print(f"           {d['address']}{role} {d['status']}{why}")
    return 0


def cmd_email_change(args: argparse.Namespace) -> int:
    box = _outbox(args)
    try:
        done = box.retry(args.message_id) if args.email_command == "retry" else box.drop(args.message_id)
    finally:
        box.close()
    if not done:
        raise CommandFailed(
            f"{args.message_id}: no such message, or not one to {args.email_command} now "
            "(retry: pending or failed ones; drop: any not being sent)"
        )
    if args.json:
        print_json({"message_id": args.message_id, "done": args.email_command})
    else:
        print(f"{args.message_id}: {'due now' if args.email_command == 'retry' else 'dropped'}")
    return 0


async def cmd_email_test(args: argparse.Namespace) -> int:
    from engine.config.models.tools import operator_address
    from engine.events import EmailFailed, EmailSent

    try:
        address = operator_address(args.address)
    except ValueError as e:
        raise UsageError(f"ADDRESS: {e}") from None
    settings = load(args)
    cfg = settings.tools.email
    if not cfg.enabled:
        raise UsageError("tools.email.enabled is false in the config: e-mail is off")
    async with running_engine(args, settings) as engine:
        ev: Any = None
        with engine.bus.subscribe(types={EmailSent.type, EmailFailed.type}) as sub:
            message_id = engine.email.queue_test(address)
            try:
                async with asyncio.timeout(cfg.timeout_s * 2 + 5):
                    async for ev in sub:
                        if getattr(ev, "message_id", None) == message_id:
                            break
            except TimeoutError:
                engine.email.outbox.drop(message_id)
                raise CommandFailed(
                    f"no answer from the {cfg.transport} server within {cfg.timeout_s * 2 + 5:.0f} s"
                ) from None
        if not isinstance(ev, EmailSent):
            engine.email.outbox.drop(message_id)
            raise CommandFailed(
                f"the {cfg.transport} server did not take the test message: {getattr(ev, 'reason', 'no answer')}"
            )
    if args.json:
        print_json({"status": "sent", "transport": cfg.transport, "message_id": message_id, "to": address})
    else:
        print(f"sent through {cfg.transport}: message {message_id} to {address}")
    return 0

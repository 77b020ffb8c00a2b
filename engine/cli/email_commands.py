"""``ava-engine email test ADDRESS``: send one test message through the configured transport, and say how it went.

Why through the outbox: the test proves the path real messages take (templates, Message-ID, the transport with its
TLS and AUTH), not a side door. A test message that fails is dropped from the outbox again (it is not worth
retrying in the background), and the server's reason is printed; secrets never are.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from engine.cli.common import CommandFailed, UsageError, load, print_json, running_engine


def register(sub: Any) -> None:
    p = sub.add_parser("email", help="e-mail: send a test message through tools.email")
    actions = p.add_subparsers(dest="email_command", metavar="ACTION", required=True, parser_class=type(p))
    t = actions.add_parser("test", help="send a test message to ADDRESS and report the server's answer")
    t.add_argument("address", metavar="ADDRESS", help="where to send it")
    t.set_defaults(func=cmd_email_test)


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

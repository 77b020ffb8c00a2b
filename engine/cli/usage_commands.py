"""``ava-engine usage [--since WHEN]``: what the recorded calls used and cost, summed per provider and model.

Why from the recordings: calls run in the console, in ``serve``, in other processes and on other days; the
flight recorder keeps each call's ``usage.updated``/``call.usage`` lines (engine.recorder.export_usage reads
them), so the sum needs no running engine. ``--since`` takes a date (``2026-11-01``), a date and time
(``2026-11-01T08:00``, local time) or an age (``90m``, ``24h``, ``7d``).
"""

from __future__ import annotations

import argparse
import datetime
import re
import time
from typing import Any

from engine.cli.common import UsageError, print_json

_AGE = re.compile(r"(\d+(?:\.\d+)?)([mhd])")
_UNIT_S = {"m": 60, "h": 3600, "d": 86400}


def register(sub: Any) -> None:
    p = sub.add_parser("usage", help="tokens and cost of the recorded calls, per provider and model")
    p.add_argument("--since", metavar="WHEN", help="only calls started since: 2026-11-01, 2026-11-01T08:00, 24h, 7d")
    p.set_defaults(func=cmd_usage)


def since_epoch(text: str, now: float) -> float:
    """``--since`` as a Unix time; ``UsageError`` naming the value when it is neither a date nor an age."""
    age = _AGE.fullmatch(text.strip())
    if age:
        return now - float(age.group(1)) * _UNIT_S[age.group(2)]
    try:
        return datetime.datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise UsageError(
            f"--since {text!r} is neither a date (2026-11-01, 2026-11-01T08:00) nor an age (90m, 24h, 7d)"
        ) from None


def cmd_usage(args: argparse.Namespace) -> int:
    from engine.cli.export_commands import recordings_directory
    from engine.recorder.codec import RecordingError, read_recording
    from engine.recorder.export_usage import usage_summary
    from engine.recorder.files import list_recordings
    from engine.usage.report import UsageReport

    since = since_epoch(args.since, time.time()) if args.since else None
    directory = recordings_directory(args)
    total, cost, calls, metered, unreadable = UsageReport(), 0.0, 0, 0, 0
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in list_recordings(directory):
        if since is not None and r.started < since:
            continue
        calls += 1
        try:
            u = usage_summary(read_recording(r.path).lines)
        except (RecordingError, OSError):
            unreadable += 1
            continue
        if u is None:
            continue
        metered += 1
        used = UsageReport.from_dict(u["total"])
        total, cost = total + used, cost + u["cost"]
        key = (str(u["provider"]), str(u.get("model") or ""))
        row = rows.setdefault(
            key,
            {
                "provider": key[0],
                "model": key[1] or None,
                "calls": 0,
                "cost": 0.0,
                "priced": u["priced"],
                "usage": UsageReport(),
            },
        )
        row["calls"] += 1
        row["cost"] += u["cost"]
        row["usage"] = row["usage"] + used
    by = sorted(rows.values(), key=lambda x: (-x["cost"], x["provider"], x["model"] or ""))
    out = {
        "dir": str(directory),
        "since": since,
        "calls": calls,
        "calls_with_usage": metered,
        "unreadable": unreadable,
        "total": {**total.to_dict(), "cost": round(cost, 9)},
        "by_provider": [{**x, "cost": round(x["cost"], 9), "usage": x["usage"].to_dict()} for x in by],
    }
    if args.json:
        print_json(out)
        return 0
    _print_table(out)
    return 0


def _print_table(out: dict[str, Any]) -> None:
    when = f" since {time.strftime('%Y-%m-%d %H:%M', time.localtime(out['since']))}" if out["since"] else ""
    print(f"{out['calls']} recorded call(s){when} in {out['dir']}, {out['calls_with_usage']} with usage")
    if not out["by_provider"]:
        return
    print(f"{'provider':<16} {'model':<28} {'calls':>5} {'tokens in':>10} {'cached':>8} {'out':>8} {'cost $':>10}")
    for x in out["by_provider"]:
        u = x["usage"]
        cost = f"{x['cost']:.4f}" if x["priced"] else "-"
        print(
            f"{x['provider']:<16} {(x['model'] or '?'):<28} {x['calls']:>5} {u['input_tokens']:>10} "
            f"{u['cached_input_tokens']:>8} {u['output_tokens']:>8} {cost:>10}"
        )
    t = out["total"]
    print(
        f"{'total':<45} {out['calls_with_usage']:>5} {t['input_tokens']:>10} {t['cached_input_tokens']:>8} "
        f"{t['output_tokens']:>8} {t['cost']:>10.4f}"
    )

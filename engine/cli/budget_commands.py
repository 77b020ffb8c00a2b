"""``ava-engine mcp calibrate SERVER``: probe a server's idempotent tools and print what was measured.

It joins the ``mcp`` command group, so ``engine.cli.COMMAND_MODULES`` lists this module after ``mcp_commands``.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli.common import CommandFailed, UsageError, load, print_json, running_engine
from engine.cli.mcp_commands import _mcp_actions


def register(sub: Any) -> None:
    p = _mcp_actions(sub).add_parser(
        "calibrate", help="probe a server's idempotent tools (never the others) and report tiers and latency"
    )
    p.add_argument("server", metavar="SERVER", help="the MCP server id")
    p.add_argument("--probes", type=int, default=None, help="probes per tool (default: budget.calibration_probes)")
    p.set_defaults(func=cmd_calibrate)


async def cmd_calibrate(args: argparse.Namespace) -> int:
    from engine.budget.calibration import CalibrationError

    settings = load(args)
    if args.server not in settings.mcp.servers:
        known = ", ".join(sorted(settings.mcp.servers)) or "none"
        raise UsageError(f"SERVER: unknown MCP server {args.server!r} (configured: {known})")
    if args.probes is not None and args.probes <= 0:
        raise UsageError(f"--probes must be a positive number, got {args.probes}")
    async with running_engine(args, settings) as engine:
        if not await engine.ensure_server_started(args.server):
            raise CommandFailed(f"MCP server {args.server!r} did not come up, so it cannot be calibrated")
        try:
            report: dict[str, Any] = await engine.calibrate(args.server, args.probes)
        except CalibrationError as e:
            raise CommandFailed(str(e)) from e
    if args.json:
        print_json(report)
        return 0
    print(
        f"server {report['server']} ({report['environment']}): {report['calibrated']} calibrated, "
        f"{report['skipped']} skipped, {report['probes_per_tool']} probes per tool"
    )
    for row in report["tools"]:
        if row["result"] == "calibrated":
            p50 = f"{row['p50_ms']:.1f}" if row["p50_ms"] is not None else "-"
            p99 = f"{row['p99_ms']:.1f}" if row["p99_ms"] is not None else "-"
            print(
                f"  {row['exposed_name']:<40} {str(row['tier']).upper():<9} p50 {p50:>8} ms  p99 {p99:>8} ms  "
                f"{row['badge']:<10} {row['health']}"
            )
        else:
            print(f"  {row['exposed_name']:<40} skipped: {row['reason']}")
    return 0

"""``ava-console``'s command line: the options, and what each way of starting runs (the console in this terminal,
in a browser tab with ``--web``, a replay, or attached to engines elsewhere).

Apart from ``console.app`` (the app's wiring): the command line builds an app (``console.launch.make_console``) or
runs something else entirely, and needs none of the app's own code. ``console.app`` re-exports ``main`` and
``build_parser`` (the entry point is ``console.app:main``).
"""

from __future__ import annotations

import argparse
import sys

from console.host import resolve_path
from console.launch import add_arguments, make_console, serve_web
from console.web_access import access_from_args, add_web_arguments


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ava-console", description="Operator console for the ava voice engine.")
    p.add_argument("--config", help="config file (default: your user config, copied from the demo on first run)")
    add_web_arguments(p)  # --web, --port, --host, --public-url, --allow-host, --allow-origin (console/web_serve.py)
    p.add_argument("--replay", metavar="FILE", help="replay a recorded call (.jsonl) through the screens; no engine")
    p.add_argument("--speed", default="1", help="replay speed: 1, 4 or instant (default 1; Ctrl+R switches)")
    p.add_argument(
        "--attach",
        metavar="URL",
        help="attach to engines elsewhere instead of running one: redis://… or rediss://… (engines sharing a store), "
        "http(s)://host:port (one engine's HTTP API)",
    )
    p.add_argument("--token", help="bearer token for --attach http(s)://… (default: $AVA_ENGINE_TOKEN)")
    add_arguments(p)  # --http, --http-port (console/launch.py)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.replay is not None:
        from console.replay_controls import replay_main

        return replay_main(args.replay, args.speed)
    if args.attach is not None:
        from console.launch import attach_main

        return attach_main(args.attach, args.token)
    try:
        path = resolve_path(args.config)
    except Exception as e:  # a config dir we cannot create, a missing demo file
        print(f"ava-console: cannot find a config file: {e}", file=sys.stderr)
        return 2
    if not path.exists():
        print(f"ava-console: config file {path} does not exist", file=sys.stderr)
        return 2
    if args.web:
        try:
            access = access_from_args(args)
        except ValueError as e:
            print(f"ava-console: {e}", file=sys.stderr)
            return 2
        http = ["--http-port", str(args.http_port)] if args.http_port is not None else ["--http"] * args.http
        serve_web(path, access, http)
        return 0
    try:
        app = make_console(args, path)
    except ValueError as e:
        print(f"ava-console: {e}", file=sys.stderr)
        return 2
    app.run()
    return 0

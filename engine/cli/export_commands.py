"""``ava-engine export CALL_ID [--format md|json] [-o FILE]``: a recorded call's transcript, tools and tiers.

Why from the recording: the call usually ended in another process (the console, ``serve``), maybe days ago; the
flight recorder's JSON lines are the one complete account (``engine.recorder``), so no running engine is needed.
``CALL_ID`` is a call id as the console and events show it (the newest recording of that id in ``recording.dir``)
or the path of a ``.jsonl`` recording. ``list`` shows the recordings there are.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from engine.cli.common import CommandFailed, load, print_json


def register(sub: Any) -> None:
    p = sub.add_parser("export", help="a recorded call's transcript, tools and tiers as Markdown or JSON")
    p.add_argument("call_id", metavar="CALL_ID", help="a call id (its newest recording), or a recording's .jsonl path")
    p.add_argument("--format", "-f", choices=["md", "json"], default=None, help="md (default) or json")
    p.add_argument("-o", "--output", metavar="FILE", help="write the export to FILE instead of printing it")
    p.set_defaults(func=cmd_export)
    r = sub.add_parser("recordings", help="the flight recorder's recordings, newest first")
    r.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    r.set_defaults(func=cmd_recordings)


def recordings_directory(args: argparse.Namespace) -> Path:
    """The config's ``recording.dir`` (relative to the config file)."""
    from engine.recorder.files import recordings_dir

    settings = load(args)
    return recordings_dir(settings.recording.dir, args.config_path.parent)


def _find(args: argparse.Namespace) -> Path:
    from engine.recorder.files import EVENTS_SUFFIX, find_recording

    given = Path(args.call_id).expanduser()
    if given.suffix == EVENTS_SUFFIX or given.is_file():
        if not given.is_file():
            raise CommandFailed(f"there is no recording file {given}")
        return given
    directory = recordings_directory(args)
    path = find_recording(directory, args.call_id)
    if path is None:
        raise CommandFailed(
            f"no recording of call {args.call_id!r} in {directory} "
            "(see `ava-engine recordings`; is recording.enabled false in the config?)"
        )
    return path


def cmd_export(args: argparse.Namespace) -> int:
    from engine.recorder.codec import RecordingError, read_recording
    from engine.recorder.export import render

    path = _find(args)
    fmt = args.format or ("json" if args.json else "md")
    try:
        text = render(read_recording(path), fmt)
    except RecordingError as e:
        raise CommandFailed(str(e)) from None
    if args.output:
        out = Path(args.output).expanduser()
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as e:
            raise CommandFailed(f"cannot write {out}: {e.strerror or e}") from None
        if args.json:
            print_json({"recording": str(path), "output": str(out), "format": fmt})
        else:
            print(f"exported {path.name} as {fmt} to {out}")
        return 0
    if args.json and fmt != "json":
        print_json({"recording": str(path), "format": fmt, "text": text})
    else:
        print(text, end="")
    return 0


def cmd_recordings(args: argparse.Namespace) -> int:
    from engine.cli.common import UsageError
    from engine.recorder.files import list_recordings

    if args.limit <= 0:
        raise UsageError(f"--limit must be a positive number, got {args.limit}")
    directory = recordings_directory(args)
    recs = list_recordings(directory)[: args.limit]
    if args.json:
        print_json(
            {
                "dir": str(directory),
                "recordings": [
                    {"call_id": r.call_id, "path": str(r.path), "started": r.started, "bytes": r.size} for r in recs
                ],
            }
        )
        return 0
    if not recs:
        print(f"no recordings in {directory}")
        return 0
    for r in recs:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started))
        print(f"{when}  {r.call_id:<14} {r.size / 1024:8.1f} KiB  {r.path}")
    return 0

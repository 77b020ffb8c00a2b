"""``ava-engine secrets set|get|list|delete``: named secrets in the OS keyring (service ava-console).

Apart from the core commands because none of them loads a config: ``set``, ``get`` and ``delete`` touch only the
keyring, and ``list`` reads the ``--config`` file (or the user config if it exists) for references, never creating
one as a side effect. Values are never printed unless ``get --reveal``.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any

from engine.cli.common import CommandFailed, UsageError, print_json


def register(sub: Any) -> None:
    p = sub.add_parser("secrets", help="secrets in the OS keyring (service ava-console)")
    ssub = p.add_subparsers(dest="secrets_command", metavar="ACTION", required=True)
    s = ssub.add_parser("set", help="store a secret (value from --value, stdin, or a hidden prompt)")
    s.add_argument("name")
    s.add_argument("--value", help="the value (avoid: it stays in your shell history)")
    s.set_defaults(func=cmd_secrets_set)
    s = ssub.add_parser("get", help="show whether a secret is set and its length (the value only with --reveal)")
    s.add_argument("name")
    s.add_argument("--reveal", action="store_true")
    s.set_defaults(func=cmd_secrets_get)
    s = ssub.add_parser("list", help="names of stored secrets and where the config references them")
    s.set_defaults(func=cmd_secrets_list)
    s = ssub.add_parser("delete", help="delete a secret")
    s.add_argument("name")
    s.set_defaults(func=cmd_secrets_delete)


def _warn_unencrypted() -> str | None:
    """Say on stderr when the keyring keeps secrets unencrypted; the warning (also for ``--json`` output)."""
    from engine.config.secrets import unencrypted_warning

    warning = unencrypted_warning()
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)
    return warning


def _secrets_config(args: argparse.Namespace) -> Path | None:
    """The config whose references ``secrets list`` shows: ``--config``, else the user config when it exists.

    Never creates the user config (other commands copy the demo there on first run; listing secrets must not
    write a file as a side effect): without one, the list has no references and says so on stderr.
    """
    from engine.config import user_config_path

    if args.config:
        return Path(args.config).expanduser()
    path = user_config_path()
    if path.exists():
        return path
    print(
        f"note: no config read (no --config, and no user config at {path}); "
        "pass --config PATH to see where secrets are referenced",
        file=sys.stderr,
    )
    return None


def cmd_secrets_set(args: argparse.Namespace) -> int:
    from engine.config.secrets import set_secret

    value = args.value
    if value is None:
        value = getpass.getpass(f"value for {args.name}: ") if sys.stdin.isatty() else sys.stdin.read().rstrip("\n")
    if not value:
        raise UsageError("the secret's value is empty")
    set_secret(args.name, value)
    warning = _warn_unencrypted()
    if args.json:
        print_json({"stored": args.name, "unencrypted": warning is not None})
    else:
        print(f"stored {args.name}; reference it in config as ${{keyring:{args.name}}}")
    return 0


def cmd_secrets_get(args: argparse.Namespace) -> int:
    from engine.config.secrets import get_secret, mask

    value = get_secret(args.name)
    if value is None:
        raise CommandFailed(f"secret {args.name!r} is not in the keyring")
    shown = value if args.reveal else mask(value)
    _warn_unencrypted()
    if args.json:
        print_json({"name": args.name, "value": shown, "masked": not args.reveal, "length": len(value)})
    else:
        print(shown)
    return 0


def cmd_secrets_list(args: argparse.Namespace) -> int:
    from engine.config.secrets import list_secrets

    names = list_secrets()
    refs: dict[str, list[str]] = {}
    path = _secrets_config(args)
    if path is not None:
        try:
            from engine.config.loader import references  # the config's own walk of its secret references

            refs = references(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"note: cannot read references from {path}: {e}", file=sys.stderr)
    rows: list[dict[str, Any]] = [{"name": n, "referenced_by": refs.get(n, [])} for n in sorted(set(names) | set(refs))]
    for r in rows:
        r["stored"] = r["name"] in names
    warning = _warn_unencrypted()
    if args.json:
        print_json({"secrets": rows, "unencrypted": warning is not None})
    else:
        for r in rows:
            where = ", ".join(r["referenced_by"]) or "not referenced"
            print(f"{r['name']:<30} {'stored' if r['stored'] else 'MISSING':<8} {where}")
    return 0


def cmd_secrets_delete(args: argparse.Namespace) -> int:
    from engine.config.secrets import delete_secret

    if not delete_secret(args.name):
        raise CommandFailed(f"secret {args.name!r} is not in the keyring")
    if args.json:
        print_json({"deleted": args.name})
    else:
        print(f"deleted {args.name}")
    return 0

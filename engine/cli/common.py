"""Shared plumbing for CLI commands: argument errors, exit codes, JSON output, loading config and the engine."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, NoReturn

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line arguments (exit 2)."""


class CommandFailed(Exception):
    """The operation failed (exit 1)."""


class ArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def fail_usage(message: str, as_json: bool) -> int:
    emit_error(message, as_json)
    return EXIT_USAGE


def emit_error(message: str, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"error": message}))
    else:
        print(f"error: {message}", file=sys.stderr)


def print_json(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, default=str))


def setup_logging(level: str | None, as_json: bool) -> None:
    logging.basicConfig(
        level=getattr(logging, (level or "warning").upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def load(args: argparse.Namespace) -> Any:
    """Load the settings named by --config (or the user config); ConfigError propagates (exit 2)."""
    from engine.config import load_settings, resolve_config_path

    path = resolve_config_path(args.config)
    args.config_path = path
    return load_settings(path)


@asynccontextmanager
async def running_engine(args: argparse.Namespace, settings: Any, *, http: bool = False) -> AsyncIterator[Any]:
    """An engine for one command; its HTTP server only when asked (``serve``), so commands never fight over ports."""
    from engine.app import Engine

    engine = Engine(settings, config_path=args.config_path, serve_http=http)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


Handler = Callable[[argparse.Namespace], Awaitable[int] | int]


def run(args: argparse.Namespace) -> int:
    from engine.calls import CallError
    from engine.config import ConfigError, SecretsError
    from engine.providers.base import ProviderError

    setup_logging(args.log_level, args.json)
    try:
        out = args.func(args)
        if asyncio.iscoroutine(out):
            out = asyncio.run(out)
        return int(out or 0)
    except ConfigError as e:
        emit_error(str(e), args.json)
        return EXIT_USAGE
    except UsageError as e:
        emit_error(str(e), args.json)
        return EXIT_USAGE
    except (CommandFailed, ProviderError, SecretsError, CallError) as e:
        emit_error(str(e), args.json)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130

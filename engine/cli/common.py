"""Shared plumbing for CLI commands: argument errors, exit codes, JSON output, loading config and the engine.

Every command runs inside ``redacted_output``: whatever it prints (text or ``--json``) and every log record pass
the process's ``REDACTOR``, which knows the secrets of the config ``load`` read.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, NoReturn

from engine.redaction.redactor import RedactingWriter, Redactor

log = logging.getLogger(__name__)

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


#: Every secret this process knows (filled by ``load``): masks all CLI output, text and JSON, and every log record.
REDACTOR = Redactor()


def load(args: argparse.Namespace, *, default_level: str = "warning") -> Any:
    """Load the settings named by --config (or the user config); ConfigError propagates (exit 2).

    The config's secrets join ``REDACTOR`` and ``engine.logging`` is applied (``--log-level`` still wins; without
    either, stderr gets ``default_level``: warnings for one-shot commands, ``serve`` asks for info).
    """
    from engine.config import load_settings, resolve_config_path
    from engine.core.logs import configure_logging

    path = resolve_config_path(args.config)
    args.config_path = path
    settings = load_settings(path)
    remember_secrets(settings)
    configure_logging(
        settings.engine.logging,
        REDACTOR,
        cli_level=args.log_level,
        stream=sys.stderr,
        default_level=default_level,
        base_dir=path.parent,
    )
    log.debug("ava-engine %s: config %s", getattr(args, "command", "?"), path)
    return settings


def remember_secrets(settings: Any) -> None:
    """Mask this config's secrets in all further output (``load`` does it; ``serve`` on reload too)."""
    from engine.redaction.redactor import secret_values

    REDACTOR.update(secret_values(settings))


@contextmanager
def redacted_output() -> Iterator[None]:
    """stdout and stderr masked by ``REDACTOR`` for one command: every print, whatever the command."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingWriter(out, REDACTOR), RedactingWriter(err, REDACTOR)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = out, err


@contextmanager
def imports_without_gc() -> Iterator[None]:
    """The garbage collector paused while a command imports the engine, on again after.

    The import (the MCP SDK, pydantic models) makes ~110,000 long-lived objects and almost no garbage, yet the
    collector walked them ~275 times meanwhile: ~15 % of the import's CPU, paid by every command that runs an engine.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@asynccontextmanager
async def running_engine(args: argparse.Namespace, settings: Any, *, http: bool = False) -> AsyncIterator[Any]:
    """An engine for one command; its HTTP server only when asked (``serve``), so commands never fight over ports."""
    with imports_without_gc():
        from engine.app import Engine

    engine = Engine(settings, config_path=args.config_path, serve_http=http)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


def reader_gone() -> int:
    """stdout's reader left (``ava-engine schema | head``): normal in a pipeline, so no traceback.

    stdout is pointed at /dev/null so the interpreter's final flush cannot raise again ("Exception ignored …").
    Exit 1: the output was not all delivered.
    """
    import os

    with suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]
        os.close(devnull)
    return EXIT_FAILED


Handler = Callable[[argparse.Namespace], Awaitable[int] | int]


def run(args: argparse.Namespace) -> int:
    from engine.core.logs import configure_logging

    with redacted_output():
        configure_logging(None, REDACTOR, cli_level=args.log_level, stream=sys.stderr)
        return _run(args)


def _failures() -> tuple[type[Exception], ...]:
    """What means "the operation failed" (exit 1), evaluated when a command raised.

    ``CallError`` counts only once ``engine.calls.manager`` was imported: a command that never loaded the call machinery
    cannot raise it, so ``check``, ``schema`` … don't import it (and the tool path, metrics …) just to name it.
    """
    from engine.config import SecretsError
    from engine.providers.base import ProviderError

    calls = sys.modules.get("engine.calls.manager")
    call_error: tuple[type[Exception], ...] = (calls.CallError,) if calls is not None else ()
    return (CommandFailed, ProviderError, SecretsError, *call_error)


def _run(args: argparse.Namespace) -> int:
    from engine.config import ConfigError

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
    except _failures() as e:
        emit_error(str(e), args.json)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return reader_gone()
    except Exception:  # a bug: its traceback leaves through the redacting stderr, not Python's raw hook
        traceback.print_exc()
        return EXIT_FAILED

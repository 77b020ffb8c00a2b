"""``ava-engine serve``: the engine headless until a signal — reloads on SIGHUP and when the config file changes.

Why it exists: a service manager expects ``serve`` to stop when told, whatever its MCP servers are doing, and to
say in one line why it cannot start. So:

- The first SIGTERM or SIGINT stops it. Start-up (servers still connecting) and reloads are abandoned at once,
  never waited out to their ``connect_timeout_ms``; ``engine.stop()`` runs under ``STOP_DEADLINE_S`` (phone calls
  first: farewell and Asterisk release inside ``engine.telephony.farewell.STOP_BUDGET_S``; each server's child is
  SIGKILLed within ``engine.mcp.connection.KILL_AFTER_S`` of the stop), and should anything still hang past the
  deadline, every MCP child's process group is killed and ``serve`` exits 1. The whole stop fits in 3 s.
- A second SIGTERM or SIGINT while stopping kills every child's process group and exits at once (128 + signal).
- SIGHUP reloads; so does a change to the config file, seen through ``watchfiles`` (the directory is watched, so
  an atomic save's rename is seen too; changes within ``WATCH_DEBOUNCE_MS`` become one reload).
- A port that cannot be bound is one line naming the address and the config key, exit 1, no traceback; so is a
  required store (``engine.store_required``) that cannot be reached.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from engine.cli.common import EXIT_FAILED, emit_error, imports_without_gc, load, print_json, remember_secrets
from engine.core.heap import freeze_startup_heap

log = logging.getLogger(__name__)

#: The whole of ``engine.stop()`` after the first signal; past it the children are killed and serve exits 1. Phone
#: calls take up to ``engine.telephony.farewell.STOP_BUDGET_S`` of it; exiting takes the rest of 3 s.
STOP_DEADLINE_S = 2.8
#: Changes to the config file closer together than this become one reload (milliseconds).
WATCH_DEBOUNCE_MS = 300
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Signals:
    """The first stop signal sets ``stop``; a second one kills every child and exits the process at once."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.stop = asyncio.Event()
        self.reload = asyncio.Event()

    def install(self) -> None:
        for sig in _STOP_SIGNALS:
            self.loop.add_signal_handler(sig, self._on_stop, sig)
        self.loop.add_signal_handler(signal.SIGHUP, self.reload.set)

    def remove(self) -> None:
        for sig in (*_STOP_SIGNALS, signal.SIGHUP):
            self.loop.remove_signal_handler(sig)

    def _on_stop(self, sig: int) -> None:
        if self.stop.is_set():
            force_exit(f"second {signal.Signals(sig).name}: killing the MCP servers and exiting now", 128 + sig)
        log.info("%s: stopping", signal.Signals(sig).name)
        self.stop.set()


def force_exit(why: str, code: int) -> None:
    """Kill every MCP child's process group and leave now, without unwinding (nothing else can be trusted to end)."""
    from engine.mcp.transport_watch import kill_all_groups

    kill_all_groups()
    print(f"ava-engine: {why}", file=sys.stderr, flush=True)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(code)


async def unless_stopped(work: Awaitable[Any], stop: asyncio.Event) -> bool:
    """Run ``work`` until it ends (True) or ``stop`` is set first (False: ``work`` is cancelled).

    A cancelled ``Engine.start`` stops what it had started before it ends; should that not end within
    ``STOP_DEADLINE_S``, the children are killed and the process exits (the stop must always finish).
    """
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((task, stopper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if task.done():
        task.result()  # its exception, if any, is the caller's
        return True
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=STOP_DEADLINE_S)
    if not done:
        force_exit(
            f"start-up did not end within {STOP_DEADLINE_S:g} s of the stop; killed the MCP servers", EXIT_FAILED
        )
    if not task.cancelled() and task.exception() is not None:  # it failed on its way out: say so, we stop anyway
        log.warning("abandoned on stop: %s", task.exception())
    return False


async def watch_file(path: Path, changed: Callable[[], None], stop: asyncio.Event) -> None:
    """Call ``changed`` whenever ``path`` is written, replaced or removed, until ``stop`` is set."""
    from watchfiles import awatch

    name = path.name

    def ours(_change: Any, changed_path: str) -> bool:
        return Path(changed_path).name == name

    async for _changes in awatch(
        path.parent,
        watch_filter=ours,
        stop_event=stop,
        debounce=WATCH_DEBOUNCE_MS,
        step=50,
        recursive=False,
        rust_timeout=1000,
    ):
        changed()


def bind_failure(e: OSError, settings: Any, config: Path) -> str:
    """One line for an HTTP port that cannot be bound (the HTTP server's own message when it has one)."""
    text = str(e)
    if "engine.http" in text:
        return f"{config}: {text}"
    http = settings.engine.http
    return (
        f"{config}: cannot listen on {http.host}:{http.port} (engine.http.host / engine.http.port): "
        f"{e.strerror or e}; is another ava-engine running?"
    )


async def cmd_serve(args: argparse.Namespace) -> int:
    with imports_without_gc():
        from engine.app import Engine
        from engine.store.component import StoreStartError

    settings = load(args, default_level="info")  # a daemon logs its servers' lifecycle
    path: Path = args.config_path
    engine = Engine(settings, config_path=path, serve_http=True)
    signals = _Signals(asyncio.get_running_loop())
    signals.install()
    watcher: asyncio.Task[None] | None = None

    async def reload() -> None:
        await reload_from(engine, path)

    code = 0
    if args.watch:  # watching from before start-up: a save made while servers connect is not missed
        watcher = asyncio.create_task(watch_file(path, signals.reload.set, signals.stop), name="serve:config-watch")
        await asyncio.sleep(0)  # let it set up its inotify watch now
    try:
        try:
            started = await unless_stopped(engine.start(), signals.stop)
        except OSError as e:  # the HTTP port: in use, not permitted, no such address
            emit_error(bind_failure(e, settings, path), args.json)
            return EXIT_FAILED
        except StoreStartError as e:  # engine.store_required and Redis is not there
            emit_error(f"{path}: {e}", args.json)
            return EXIT_FAILED
        if started:
            _announce(engine, args.json)
            freeze_startup_heap()  # a call's audio never waits for a full GC pass over start-up objects
            while not signals.stop.is_set():
                if await unless_stopped(signals.reload.wait(), signals.stop):
                    signals.reload.clear()
                    await unless_stopped(reload(), signals.stop)
    finally:
        signals.stop.set()  # also ends the config watch (a bind error ends serve without a signal)
        code = await _stop(engine, code)
        if watcher is not None:
            await asyncio.wait({watcher}, timeout=1.5)  # ``stop`` is set: it ends within one watch step
        signals.remove()
    if not args.json:
        print("ava-engine stopped", flush=True)
    return code


async def reload_from(engine: Any, path: Path) -> None:
    """Reload ``path`` into the running engine (SIGHUP, a saved file). ``Engine.reload`` publishes
    ``config.reloaded``; a file that does not load keeps the running config and is published here, as an error."""
    from engine.config import ConfigError, load_settings
    from engine.events import ConfigReloaded

    try:
        new = load_settings(path)
    except ConfigError as e:
        log.error("config reload failed, keeping the running config: %s", e)
        engine.bus.publish(ConfigReloaded(error=str(e)[:500]))
        return
    remember_secrets(new)
    await engine.reload(new)
    log.info("config reloaded from %s", path)


def _announce(engine: Any, as_json: bool) -> None:
    url = engine.api_url()
    states: dict[str, str] = {s["id"]: s["state"] for s in engine.server_status()["servers"]}
    if as_json:
        print_json({"serving": True, "http": url, "servers": states})
    else:
        print(f"ava-engine serving{' on ' + url if url else ''}; " + ", ".join(f"{k} {v}" for k, v in states.items()))
    sys.stdout.flush()


async def _stop(engine: Any, code: int) -> int:
    """``engine.stop()`` within ``STOP_DEADLINE_S``; past it, kill the children and exit 1 (it did not stop cleanly)."""
    stopping = asyncio.ensure_future(engine.stop())
    done, _ = await asyncio.wait({stopping}, timeout=STOP_DEADLINE_S)
    if not done:
        force_exit(f"the engine did not stop within {STOP_DEADLINE_S:g} s; killed the MCP servers", EXIT_FAILED)
    if stopping.exception() is not None:
        log.error("stopping the engine failed: %s", stopping.exception())
        return EXIT_FAILED
    return code

"""This console's engine as the operator is told of it: the header's sub-title (starting, running, failed, replay,
attached; the counts at a glance; the config file), and why a key that needs the engine does nothing.

Why apart from the app (``console.app`` is wiring): one job, reading a few of the console's fields, given the
console as ``StatusHost`` instead of the app class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from console.ports import Notifier
from console.widgets.header import Glance, api_url, glance_line

if TYPE_CHECKING:
    from pathlib import Path

    from console.attach import AttachLink
    from console.format import Clock
    from console.state import ConsoleState
    from engine import Engine


class StatusHost(Notifier, Protocol):
    """The console's fields the header's sub-title is made of, and the sub-title itself."""

    sub_title: str
    config_path: Path
    attach_url: str | None
    link: AttachLink | None
    engine: Engine | None
    engine_error: str | None
    engine_running: bool
    state: ConsoleState
    glance: Glance

    @property
    def clock(self) -> Clock: ...

    @property
    def attached(self) -> bool: ...

    @property
    def replay_only(self) -> bool: ...


def engine_status(host: StatusHost) -> str:
    """What the header says about the engine: starting, running, or failed."""
    if host.replay_only:
        return "replay (no engine)"
    if host.link is not None:
        return host.link.header()
    if host.engine_error:
        return "engine failed"
    return "engine running" if host.engine_running else "engine starting…"


def show_engine_status(host: StatusHost) -> None:
    """The header's sub-title: the engine's status until it runs (first, so a narrow header keeps it), and the
    config file."""
    if host.attached:
        link = host.link
        head = link.header() if link is not None else f"attaching to {host.attach_url}…"
        host.sub_title = f"{head} · {glance_line(host.state, host.glance, host.clock.now(), None)}"
        return
    status = "" if host.engine_running else f"{engine_status(host)} · "
    if host.engine_running:  # at a glance: calls, servers up/failed, recent errors, the HTTP API if served
        status = f"{glance_line(host.state, host.glance, host.clock.now(), api_url(host.engine))} · "
    host.sub_title = f"{status}{host.config_path}"


def require_engine(host: StatusHost, what: str = "") -> Engine | None:
    """This console's running engine, or None after saying why not (starting, failed, replay, attached)."""
    if host.link is not None or host.attached:
        desc = host.link.description if host.link is not None else host.attach_url
        host.notify(
            f"{what + ': ' if what else ''}not available when attached to {desc} (it needs this console's own engine)",
            title="attached",
            severity="warning",
        )
        return None
    if host.engine is None or not host.engine_running:
        host.notify(host.engine_error or "the engine is still starting", title="engine", severity="warning")
        return None
    return host.engine

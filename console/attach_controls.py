"""The app's attach side (``ava-console --attach URL``): make the remote client, follow it, and take the engines'
comings and goings.

Why a part of its own (the app builds and holds it, given the console as ``AttachHost``): the app module is
wiring; this is the one place that starts an ``AttachLink`` (``console.attach``) and turns ``EnginesChanged``
into the engine list, lost calls and the header, as ``ReplayControls`` does for recordings.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Protocol

from console.attach import AttachLink, EnginesChanged
from console.ports import Notifier, Workers
from console.state import Changes, ServerRow

if TYPE_CHECKING:
    from textual.message import Message

    from console.approvals import ApprovalQueue
    from console.event_pump import EventPump
    from console.format import Clock
    from console.screen_feed import ScreenFeed
    from console.state import ConsoleState
    from engine import RemoteEngines


class AttachHost(Notifier, Workers, Protocol):
    """What the attach part sets on the console (its link, the engine error) and feeds (state, screens, header)."""

    link: AttachLink | None
    engine_error: str | None
    pump: EventPump
    clock: Clock
    state: ConsoleState
    approvals: ApprovalQueue
    feed: ScreenFeed

    def post_message(self, message: Message) -> bool: ...

    def show_engine_status(self) -> None: ...


class AttachControls:
    """Engines elsewhere (``--attach URL``): the client, following it, and the engines' comings and goings."""

    def __init__(self, host: AttachHost, url: str | None, token: str | None, remote: RemoteEngines | None) -> None:
        self.host, self.url, self.token, self.remote = host, url, token, remote

    @property
    def attached(self) -> bool:
        """Whether this console follows engines elsewhere (``--attach``) instead of running its own."""
        return self.url is not None or self.remote is not None

    def start(self) -> None:
        """Attach in a worker, following the engines until the console quits."""
        self.host.run_worker(self._follow(), group="attach", name="attach", exclusive=True, exit_on_error=False)

    async def _follow(self) -> None:
        """Make the client (a bad URL says so and leaves the console up), then follow it until the console quits."""
        app = self.host
        client = self.remote
        if client is None:
            from engine import open_remote

            try:
                options: dict[str, str] = {"approver": f"ava-console@{socket.gethostname()}"}  # approvals wait for it
                if self.token:  # http(s) only
                    options["token"] = self.token
                client = open_remote(self.url or "", **options)
            except Exception as e:  # an unknown scheme, a malformed URL: the message names the URL (no secret)
                app.engine_error = f"cannot attach: {e}"
                app.notify(app.engine_error, title="attach", severity="error", timeout=15)
                app.show_engine_status()
                return
        app.link = AttachLink(client, app.pump.interval)
        app.show_engine_status()
        app.feed.rebuild()
        await app.link.run(app.post_message)

    def changed(self, message: EnginesChanged) -> None:
        """Engines joined or left, or the link went down or came back: the engine list, the lost engines' calls,
        the header."""
        app = self.host
        link = app.link
        if link is None:
            return
        was = link.connected
        for info in message.joined:
            app.run_worker(self._engine_tools(info.id), group="attach-tools", exit_on_error=False)
        for engine_id in link.apply(message):
            changes = app.state.lose_engine(engine_id, link.engines[engine_id].reason, app.clock.now())
            app.approvals.forget_engine(engine_id)
            app.feed.tell("show_approvals")
            app.feed.dispatch(changes)
            app.notify(
                f"engine {engine_id} {link.engines[engine_id].reason}; its live calls are lost",
                title="attach",
                severity="warning",
                timeout=10,
            )
        if message.link is not None and was is not None and was != link.connected:
            if link.connected:
                app.notify(f"connection to {link.description} is back", title="attach")
            else:
                app.notify(
                    f"connection to {link.description} lost: {link.problem}",
                    title="attach",
                    severity="error",
                    timeout=10,
                )
        app.show_engine_status()
        app.feed.tell("show_engines")

    async def _engine_tools(self, engine_id: str) -> None:
        app = self.host
        link = app.link
        if link is None:
            return
        try:
            await link.fetch_tools(engine_id)
        except Exception as e:  # gone again, or no answer: the tools the calls use still show
            app.notify(f"engine {engine_id}: its tools could not be listed: {e}", title="attach", severity="warning")
            return
        app.feed.tell("show_engine_tools")
        app.feed.dispatch(self._engine_servers(engine_id))
        app.show_engine_status()  # the header counts them

    def _engine_servers(self, engine_id: str) -> Changes:
        """A joined engine's MCP servers as it listed them, for the Servers screen and the header (servers that
        settled before this console attached send no ``server.state``); a state an event already gave is newer."""
        from engine import call_ref

        app, changes = self.host, Changes()
        link = app.link
        for snap in link.servers.get(engine_id, []) if link is not None else []:
            ref = call_ref(engine_id, str(snap["id"]))
            if ref not in app.state.servers:
                app.state.servers[ref] = ServerRow(
                    ref,
                    str(snap.get("state") or "?"),
                    restarts=int(snap.get("restarts") or 0),
                    last_error=snap.get("last_error"),
                    ts=app.clock.now(),
                    transport=str(snap.get("transport") or ""),
                    protocol_version=str(snap.get("protocol_version") or ""),
                )
                changes.servers.add(ref)
        return changes

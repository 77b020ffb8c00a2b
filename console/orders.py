"""The one seam for the operator's commands: tier overrides, tools on/off, end call, steering, approvals, transfer.

Why it exists: the same key must act on a call of this console's own engine or on a call of an engine elsewhere
(``--attach``). Every screen hands the command here by name (``engine.remote.base.COMMANDS``) with the console's key
for the call (or approval): a local engine runs the method of that name; an attached console splits the key
(``split_call_ref``) and sends the command to the engine that owns the call. The answer — or the failure, naming
the engine — comes back as a toast, and to the caller's ``done`` for anything more (a table to redraw).

A local engine's synchronous commands (a tier, a tool switch, an approval) act at once, as before; the others, and
every remote one, run in a worker so a slow turn or a slow link never blocks the screen.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from console.attach import describe_error
from console.ports import Notifier, Workers
from console.replay import is_replayed

if TYPE_CHECKING:
    from console.attach import AttachLink
    from engine import Engine

#: Commands whose target is an approval (the rest name a call).
APPROVAL_COMMANDS = frozenset({"approve_tool", "deny_tool"})
#: How long a remote command may take before the console says it got no answer (seconds).
REMOTE_TIMEOUT_S = 5.0

Done = Callable[[dict[str, Any]], str | None]


class OrdersHost(Notifier, Workers, Protocol):
    """What the commands need of the console: its engine, or the attached engines' link; toasts; workers."""

    link: AttachLink | None

    @property
    def attached(self) -> bool: ...

    def require_engine(self, what: str = "") -> Engine | None: ...


class HasOrders(Protocol):
    @property
    def orders(self) -> Orders: ...


def call_label(ref: str | None) -> str:
    """A call (or approval) as a toast names it: ``call-3 on engine e1`` for an attached engine's, else the id."""
    if not ref:
        return "-"
    engine_id, sep, local = ref.partition("/")
    return f"{local} on engine {engine_id}" if sep else ref


class Orders:
    """Runs an operator command where its call lives and tells the operator how it went."""

    def __init__(self, app: OrdersHost) -> None:
        self.app = app
        #: Every command sent to an attached engine: (engine, command, arguments), oldest first (tests read it).
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def set_default_tier(self, tier: str) -> None:
        """The operator's default tier for every call (``auto``: the engine decides again)."""
        label = tier.upper() if tier != "auto" else "auto"
        self.run("set_tier", None, {"tier": tier}, title="tier", done=lambda _a: f"default tier: {label}")

    def set_call_tier(self, call_id: str | None, tier: str) -> None:
        """The selected call's tier (``call_id`` None: the operator is told to select one)."""
        if not self.app.attached and self.app.require_engine() is None:  # says why (starting, failed, a replay)
            return
        if call_id is None:
            self.app.notify("select a call first (F1 Calls)", title="tier", severity="warning")
            return
        label = tier.upper() if tier != "auto" else "auto"
        self.run(
            "set_tier", call_id, {"tier": tier}, title="tier", done=lambda _a: f"{call_label(call_id)}: tier {label}"
        )

    def run(
        self,
        command: str,
        target: str | None,
        args: Mapping[str, Any],
        *,
        title: str,
        done: Done | None = None,
        failed: Callable[[str], None] | None = None,
    ) -> None:
        """Run ``command`` on ``target`` (a call key, an approval key, or None: the engine's default / every
        engine's). ``done(answer)`` returns the toast's text (None: no toast); a failure is an error toast."""
        app = self.app
        if is_replayed(target):  # a replayed call is history: no key on it reaches an engine
            app.notify(f"{target} is a replay: history, nothing to act on", title=title, severity="warning")
            return
        link = app.link
        if link is not None:
            self._remote(command, target, dict(args), title, done, failed)
            return
        engine = app.require_engine()
        if engine is None:
            return
        try:
            result = _call(engine, command, target, args)
        except Exception as e:  # unknown call, ended call, a refused text: the engine's reason
            self._fail(title, str(e), failed)
            return
        if inspect.isawaitable(result):

            async def finish() -> None:
                try:
                    answer = await result
                except Exception as e:  # the call ended meanwhile, the provider refused
                    self._fail(title, str(e), failed)
                    return
                self._done(title, _answer(answer), done)

            app.run_worker(finish(), group="orders", name=command, exit_on_error=False)
            return
        self._done(title, _answer(result), done)

    def _remote(
        self,
        command: str,
        target: str | None,
        args: dict[str, Any],
        title: str,
        done: Done | None,
        failed: Callable[[str], None] | None,
    ) -> None:
        from engine import split_call_ref

        link = self.app.link
        assert link is not None
        if target is None and command == "set_tier":  # the default tier: every live engine's
            targets: list[tuple[str, str | None]] = [(e, None) for e in link.live_engines()]
            if not targets:
                self._fail(title, f"no live engine at {link.description}", failed)
                return
        else:
            try:
                engine_id, call = split_call_ref(target or "")
            except ValueError as e:
                self._fail(title, str(e), failed)
                return
            targets = [(engine_id, call)]
        for engine_id, local in targets:
            key = "approval_id" if command in APPROVAL_COMMANDS else "call_id"
            sent = {key: local, **args}
            self.sent.append((engine_id, command, sent))
            self.app.run_worker(
                self._send(engine_id, command, sent, title, done, failed),
                group="orders",
                name=f"{command}@{engine_id}",
                exit_on_error=False,
            )

    async def _send(
        self,
        engine_id: str,
        command: str,
        args: dict[str, Any],
        title: str,
        done: Done | None,
        failed: Callable[[str], None] | None,
    ) -> None:
        link = self.app.link
        assert link is not None
        try:
            answer = await link.client.send(engine_id, command, args, REMOTE_TIMEOUT_S)
        except Exception as e:  # RemoteError: gone, refused, failed there, no answer in time
            self._fail(title, describe_error(engine_id, e), failed)
            return
        self._done(title, {**answer, "engine": engine_id}, done)

    def _done(self, title: str, answer: dict[str, Any], done: Done | None) -> None:
        text = done(answer) if done is not None else None
        if text:
            engine_id = answer.get("engine")
            if engine_id and engine_id not in text:
                text = f"{text} (engine {engine_id})"
            self.app.notify(text, title=title)

    def _fail(self, title: str, message: str, failed: Callable[[str], None] | None) -> None:
        self.app.notify(message, title=title, severity="error")
        if failed is not None:
            failed(message)


def _call(engine: Engine, command: str, target: str | None, args: Mapping[str, Any]) -> Any:
    """The local engine's method of the command's name, with the target as its first argument."""
    fn = getattr(engine, command, None)
    if fn is None:
        raise RuntimeError(f"{command} is not supported by this console's engine")
    key = "approval_id" if command in APPROVAL_COMMANDS else "call_id"
    return fn(**{key: target}, **args)


def _answer(result: Any) -> dict[str, Any]:
    """A local method's return as the remote answer's shape (the command's JSON object)."""
    if isinstance(result, dict):
        return result
    if isinstance(result, bool):
        return {"restarted": result}
    if isinstance(result, str):
        return {"via": result}
    return {}


def toggle_tool(
    app: HasOrders, call_id: str, name: str, enabled: bool, apply: str, then: Callable[[], None] | None = None
) -> None:
    """Switch a tool on or off for a call, from its next turn or now (the turn in flight restarts), where the call
    lives; ``then`` runs once the engine answered (a tools table to redraw)."""
    mode = "now" if apply == "now" else "next_turn"
    state = "on" if enabled else "off"

    def done(answer: dict[str, Any]) -> str:
        if mode == "now":
            restarted = bool(answer.get("restarted"))
            how = "now: the turn in flight was restarted" if restarted else "now: no turn in flight, so next turn"
        else:
            how = "from the next turn"
        if then is not None:
            then()
        return f"{name} {state} for {call_label(call_id)}, {how}"

    app.orders.run(
        "set_tool_enabled", call_id, {"exposed_name": name, "enabled": enabled, "apply": mode}, title="tools", done=done
    )

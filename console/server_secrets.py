"""Where the server form's env and header values go when it saves: the OS keyring by default (issue 16 A3).

A row with "store in keyring" ticked (new rows are) is written as ``${keyring:SERVERID_KEY}`` and its value is
stored only after the operator said yes to the diff. A value that is a reference (``${VAR}``, ``${keyring:X}``)
is written as typed. A credential-looking value with the box unticked is written in plain text only after an
explicit yes to a question naming it; whatever is written, no diff shows a credential's value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.config_flow import save_document
from console.screens.modals import ConfirmScreen
from console.server_model import FormValues, keyring_name
from engine.config import looks_like_secret, set_secret
from engine.config.secrets import keyring_state

if TYPE_CHECKING:
    from console.console_port import Console
    from engine.config import ConfigDocument


@dataclass
class SecretPlan:
    """What a save does with the form's values: references to write, secrets to store, plain-text credentials."""

    #: "env:KEY" / "headers:KEY" -> the text written instead (``${keyring:NAME}``)
    refs: dict[str, str] = field(default_factory=dict)
    #: keyring name -> value, stored after the yes (never shown)
    store: dict[str, str] = field(default_factory=dict, repr=False)
    #: "env KEY" -> value: credential-looking values the operator keeps in the YAML (asked first)
    plain: dict[str, str] = field(default_factory=dict, repr=False)


def plan_secrets(f: FormValues, saved: Mapping[str, Any]) -> SecretPlan:
    """The plan for the rows of ``f``'s transport; ``saved`` is the entry as the file holds it now (unchanged
    plain values already in the file are not asked about again)."""
    plan = SecretPlan()
    sid = f.id.strip()
    kinds = {"stdio": ("env", f.env), "http": ("headers", f.headers), "sse": ("headers", f.headers)}
    if f.transport not in kinds:
        return plan
    kind, rows = kinds[f.transport]
    before = saved.get(kind) or {}
    for kv in rows:
        key = kv.key.strip()
        if not kv.value or "${" in kv.value:
            continue  # a reference (or nothing): written as typed
        if kv.keyring:
            name = keyring_name(sid, key)
            plan.refs[f"{kind}:{key}"] = f"${{keyring:{name}}}"
            plan.store[name] = kv.value
        elif looks_like_secret(key, kv.value) and str(before.get(key, "")) != kv.value:
            plan.plain[f"{kind} {key}"] = kv.value
    return plan


def save_with_secrets(
    screen: Any,
    doc: ConfigDocument,
    title: str,
    plan: SecretPlan,
    on_saved: Callable[[Any], None],
) -> None:
    """Ask about plain-text credentials (if any), then diff (values hidden) → store secrets → save."""
    app: Console = screen.capp

    def store() -> None:
        for name, value in plan.store.items():
            set_secret(name, value)
        if plan.store:
            where = keyring_state().where  # "the UNENCRYPTED file keyring (PATH)" for a plain file
            app.call_from_thread(app.notify, f"stored in {where}: {', '.join(plan.store)}", title="secrets")

    def save() -> None:
        save_document(app, doc, title, on_saved, hide=[*plan.plain.values(), *plan.store.values()], before_write=store)

    if not plan.plain:
        save()
        return
    names = ", ".join(plan.plain)

    def answered(yes: bool | None) -> None:
        if yes:
            save()
        else:
            screen._result(f"✖ not saved: tick 'store in keyring' for {names}", error=True)

    app.push_screen(
        ConfirmScreen(
            f"Write {names} into the YAML in plain text?",
            "It looks like a credential. y: write it in plain text (hidden in the diff) · "
            "n: go back and tick 'store in keyring'",
        ),
        answered,
    )

"""The console's keymap: every Binding has an id (remappable via ``console.keymap`` in the config).

App-wide keys switch screens and set tiers (the game master's keys: one each for FAST, STANDARD, DEEP and auto
on the selected call, and shifted for the global default). Screen keys live beside their screens but are listed
here too so ``validate_keymap`` can reject unknown ids with the list of known ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from textual.binding import Binding

TIER_KEYS = {"fast": "f5", "standard": "f6", "deep": "f7", "auto": "f8"}
# Shift+F5..F8: most terminals send modified F-keys (shift+f5); some send F17..F20 instead. Both are bound.
DEFAULT_TIER_KEYS = {"fast": "shift+f5,f17", "standard": "shift+f6,f18", "deep": "shift+f7,f19", "auto": "shift+f8,f20"}

SCREENS = {
    "calls": ("f1", "Calls"),
    "tools": ("f2", "Tool log"),
    "servers": ("f3", "Servers"),
    "budget": ("f4", "Budget"),
    "secrets": ("f9", "Secrets"),
    "outbox": ("f11", "Outbox"),
    "config": ("f10", "Config"),
    "engines": ("ctrl+g", "Engines"),
}


def app_bindings() -> list[Binding]:
    out: list[Binding] = []
    for mode, (key, title) in SCREENS.items():
        out.append(Binding(key, f"switch_mode('{mode}')", f"screen: {title}", id=f"screen_{mode}", show=False))
    for tier, key in TIER_KEYS.items():
        label = "auto" if tier == "auto" else tier.upper()
        out.append(
            Binding(key, f"tier('{tier}')", f"tier: {label} for the selected call", id=f"tier_{tier}", show=False)
        )
    for tier, key in DEFAULT_TIER_KEYS.items():
        label = "auto" if tier == "auto" else tier.upper()
        out.append(
            Binding(
                key, f"default_tier('{tier}')", f"tier: default {label} (all calls)", id=f"default_{tier}", show=False
            )
        )
    out.append(Binding("ctrl+o", "replay_open", "Replay a recorded call", id="replay_open", show=False))
    out.append(Binding("ctrl+r", "replay_speed", "Replay speed: 1×, 4×, instant", id="replay_speed", show=False))
    out.append(Binding("ctrl+q", "quit", "Quit", id="quit", priority=True))
    # priority: Tab moves the focus as the app takes the key, before the keys queued behind it are handed out (a
    # password manager's name, Tab, secret burst would otherwise type the secret into the visible name field)
    out.append(Binding("tab", "focus_next", "Next field", id="focus_next", show=False, priority=True))
    out.append(Binding("shift+tab", "focus_previous", "Previous field", id="focus_previous", show=False, priority=True))
    return out


# Screen bindings (declared on the screens; repeated here for keymap validation and the README).
SCREEN_BINDING_IDS: dict[str, str] = {
    "call_new": "start a test call (softphone)",
    "call_end": "end the selected call",
    "call_talk": "focus the talk box",
    "call_focus": "back to the calls table",
    "call_view": "the selected call's latency waterfall and speaking timeline",
    "view_close": "leave the waterfall and timeline",
    "call_export": "export the selected call's transcript, tools and tiers (Markdown, beside its recording)",
    "recording_play": "replay the highlighted recording",
    "recording_cancel": "leave the recordings dialog",
    "op_listen": "operator: listen to the selected phone call",
    "op_whisper_agent": "operator: whisper to the agent (the caller does not hear)",
    "op_whisper_caller": "operator: whisper to the caller (the agent does not hear)",
    "op_takeover": "operator: take the phone call over (the AI leaves)",
    "op_off": "operator: leave the call, or hand it back to the AI",
    "op_transfer": "operator: transfer the selected phone call (a tools.extensions destination, blind or warm)",
    "transfer_mode": "switch the transfer between blind and warm",
    "transfer_cancel": "leave the transfer dialog (nothing is transferred)",
    "leave_save": "an edited form's Esc question: save (send, store, …) what was typed",
    "leave_discard": "an edited form's Esc question: discard what was typed and close the form",
    "leave_back": "an edited form's Esc question: go back to the form (nothing lost)",
    "voice_call": "start a voice call on the local mic and speaker",
    "voice_mute": "mute or unmute the microphone",
    "voice_ptt": "push-to-talk: start talking, press again to send",
    "voice_devices": "choose the microphone and speaker",
    "audio_rescan": "rescan audio devices",
    "audio_use": "use the chosen audio devices",
    "audio_cancel": "leave the audio devices dialog",
    "approval_approve": "approve the tool call marked ▶ (the selected call's oldest waiting, else the oldest)",
    "approval_deny": "deny the tool call marked ▶: it never runs",
    "approval_deny_reason": "deny the tool call marked ▶ with a reason the model is told",
    "approval_next": "mark the next tool call waiting for approval (y / x then answer that one)",
    "approval_reason_cancel": "leave the deny-with-a-reason dialog (nothing is denied)",
    "elicitation_accept": "send the answer to a tool's question (the form's values)",
    "elicitation_decline": "decline a tool's question",
    "elicitation_cancel": "cancel a tool's question (dismissed without a choice)",
    "tool_toggle_next": "toggle the highlighted tool, from the next turn",
    "tool_toggle_now": "toggle the highlighted tool now (restart the turn)",
    "steer_say": "live steering: make the agent say a line next",
    "steer_whisper": "live steering: a hidden instruction for the agent's next turn",
    "steer_cancel": "leave the steering dialog",
    "log_filter": "filter the tool log",
    "log_status": "cycle the status filter",
    "log_detail": "show an invocation's arguments and result",
    "log_focus": "back to the tool log table",
    "detail_close": "close the invocation detail",
    "server_test": "test the selected server",
    "server_restart": "restart the selected server",
    "server_toggle": "enable/disable the selected server for this run",
    "server_toggle_save": "enable/disable the selected server and save it to the config",
    "server_add": "add a server",
    "server_edit": "edit the selected server",
    "server_remove": "remove the selected server",
    "server_import": "import Claude Desktop / VS Code JSON",
    "server_add_source": "add a server from a registry server.json, npm/PyPI package or URL (fills the form)",
    "server_tools": "the selected server's tools: schemas, annotations, call one",
    "server_describe": "describe the selected server: PID, uptime, command, env keys, errors",
    "server_sign_in": "sign in to the selected remote server (OAuth): shows the URL, waits for the browser",
    "signin_close": "leave the sign-in dialog (a sign-in still waiting is cancelled)",
    "inspector_call": "call the selected tool with the form's arguments",
    "inspector_close": "leave the tool inspector",
    "describe_tools": "the described server's tools",
    "describe_close": "leave the server description",
    "outbox_retry": "send the highlighted e-mail again now",
    "outbox_drop": "drop the highlighted e-mail from the outbox",
    "secret_set": "add a secret (asks before replacing one of the same name)",
    "secret_replace": "replace the selected secret's value",
    "secret_rename": "rename the selected secret",
    "secret_delete": "delete a secret",
    "config_reload": "reload the config file",
    "config_validate": "validate the config file",
    "confirm_yes": "answer yes in a confirmation",
    "confirm_no": "answer no in a confirmation",
    "diff_save": "save after reading the diff",
    "diff_cancel": "leave the diff without saving",
    "secret_cancel": "leave the secret entry",
    "name_cancel": "leave the name entry",
    "import_cancel": "leave the import dialog",
    "import_inputs_cancel": "leave the import's questions for its inputs (nothing is imported)",
    "add_source_cancel": "leave the add-from-registry dialog",
    "form_test": "test the unsaved server form",
    "form_save": "save the server form",
    "form_cancel": "leave the form",
    "budget_context": "next context in the budget view",
    "table_filter": "filter the focused table's rows (Enter: back to the table, Esc: clear)",
    "table_first": "first row of the focused table",
    "table_last": "last row of the focused table",
    "filter_clear": "clear a table's filter and close it",
    "key_help": "show the keys of this screen and the app-wide keys",
    "help_close": "close the key help",
}


def known_ids() -> set[str]:
    return {b.id for b in app_bindings() if b.id} | set(SCREEN_BINDING_IDS)


def validate_keymap(keymap: Mapping[str, str], known: Iterable[str] | None = None) -> list[str]:
    """Problems with a ``console.keymap`` (unknown ids, empty keys); empty when it is fine."""
    ids = set(known) if known is not None else known_ids()
    problems: list[str] = []
    for action_id, key in keymap.items():
        if action_id not in ids:
            problems.append(f"console.keymap.{action_id}: unknown action id (known: {', '.join(sorted(ids))})")
        elif not key.strip():
            problems.append(f"console.keymap.{action_id}: the key is empty")
    return problems

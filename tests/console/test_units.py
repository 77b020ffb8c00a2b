"""Unit tests of the console's pure parts: state from events, the server form's rules."""

from __future__ import annotations

import sys

from console.server_model import KV, FormValues, check_field, from_config, model_errors, to_config
from console.state import ConsoleState
from engine.events import CallEnded, CallStarted, TierChanged, ToolCompleted, ToolRequested


def test_state_merges_requested_and_completed() -> None:
    st = ConsoleState()
    ch = st.apply(
        [
            CallStarted(call_id="c1", context="demo", provider="p"),
            ToolRequested(call_id="c1", tool_call_id="t1", exposed_name="x", server="s", tool="x"),
        ]
    )
    assert ch.calls_added == ["c1"] and len(ch.invocations_added) == 1
    ch = st.apply(
        [
            ToolCompleted(
                call_id="c1",
                tool_call_id="t1",
                exposed_name="x",
                server="s",
                tool="x",
                status="error",
                latency_ms=5.0,
                message="no",
            )
        ]
    )
    assert ch.invocations_changed[0].status == "error" and len(st.invocations) == 1
    assert st.percentile("s", 0.5) == 5.0
    ch = st.apply([TierChanged(call_id=None, old="auto", new="deep", reason="op"), CallEnded(call_id="c1", reason="x")])
    assert ch.default_tier == "deep" and ch.calls_removed == ["c1"] and "c1" in st.ended


def test_form_rules_and_round_trip() -> None:
    assert "lower-case" in check_field("id", "Bad id")
    assert "already exists" in check_field("id", "dice", taken={"dice"})
    assert "not found on PATH" in check_field("command", "no-such-prog-xyz")
    assert check_field("command", f"{sys.executable} -m x") == ""
    assert "http" in check_field("url", "ftp://x")
    assert "out of range" in check_field("connect_timeout_ms", "0")
    assert "tools[0]" in check_field("tools", "- {name: a, bogus: 1}")
    f = FormValues(id="w", command="python -m w", max_restarts="2", env=[KV("T", "${keyring:W_T}", True)])
    data = to_config(f)
    assert data == {
        "transport": "stdio",
        "command": ["python", "-m", "w"],
        "env": {"T": "${keyring:W_T}"},
        "restart": {"max_restarts": 2},
    }
    back = from_config("w", data)
    assert back.command == "python -m w" and back.env[0].keyring and back.max_restarts == "2"
    assert "url" in model_errors({"transport": "http"})


def test_every_console_binding_id_can_be_remapped() -> None:
    """Each Binding id declared anywhere in the console is known to ``console.keymap`` validation."""
    import importlib
    import pkgutil

    import console.screens
    from console.app import AvaConsole
    from console.bindings import known_ids

    declared: set[str] = {b.id for b in AvaConsole.BINDINGS if hasattr(b, "id") and b.id}  # type: ignore[union-attr]
    for mod_info in pkgutil.iter_modules(console.screens.__path__):
        module = importlib.import_module(f"console.screens.{mod_info.name}")
        for obj in vars(module).values():
            for b in getattr(obj, "BINDINGS", []) if isinstance(obj, type) else []:
                if getattr(b, "id", None):
                    declared.add(b.id)
    assert len(declared) > 30
    assert declared - known_ids() == set()


def test_server_form_keeps_an_inprocess_servers_args() -> None:
    raw = {
        "transport": "inprocess",
        "target": "engine.servers.aviation_atis.server:create",
        "args": ["--metar-file", "m.txt"],
    }
    assert to_config(from_config("aviation_atis", raw)) == raw
    bundled = {"transport": "bundled", "target": "engine.servers.rules.server:create"}
    assert to_config(from_config("rules", bundled)) == bundled


def test_describe_shows_an_oauth_servers_sign_in_without_a_token() -> None:
    from console.screens.server_describe import describe_rows, oauth_text

    now = 1_800_000_000.0
    auth = {"type": "oauth", "signed_in": True, "expires_at": now + 125, "can_refresh": True, "scope": "tools"}
    text = oauth_text(auth, now)
    assert text.startswith("OAuth: signed in, token expires ") and "(in 2 min 05 s)" in text
    assert text.endswith("refreshes by itself, scope tools")
    assert "token expired " in (expired := oauth_text({**auth, "expires_at": now - 5, "can_refresh": False}, now))
    assert "no refresh token" in expired
    assert "not signed in" in oauth_text({"type": "oauth", "signed_in": False})
    assert "keyring" in oauth_text({"type": "oauth", "signed_in": None, "error": "no usable OS keyring"})
    rows = dict(describe_rows("prot", {"transport": "http", "url": "https://x/mcp", "auth": auth}, None))
    assert rows["sign-in"].startswith("OAuth: signed in")
    assert "sign-in" not in dict(describe_rows("fx", {"transport": "stdio", "command": ["x"]}, None))

"""Tool inspector and server description from the Servers screen (issue 16 B.6 and B.7), by keyboard.

The inspector lists a server's tools with their annotations, shows each one's input schema, builds a call form
from it (string, integer, enum, boolean, array, nested object as JSON), refuses to call with a field that is wrong
and says which, and shows the result as the model gets it and as the caller hears it (the tool's speech
template). The description shows PID, uptime, command line, env keys but never their values, tool count and
the last errors with times.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.app import AvaConsole
from console.screens.server_describe import error_lines, uptime_text
from console.tool_form import collect, fields_for
from tests.console.conftest import FIXTURE_SERVER, servers_up

SERVERS = f"""  servers:
    insp:
      transport: inprocess
      target: tests.fixtures.mcp_servers.inspector_server:make
      tools:
        - name: book
          speech_template: "Booked {{booked}} for {{guests}}."
    fx:
      command: ["{{python}}", "{FIXTURE_SERVER}"]
      env: {{LOG_LEVEL: debug, FX_TOKEN: "tok-secret-value-123"}}
"""


def _config(path: Path) -> Path:
    path.write_text(path.read_text().replace("  servers: {}\n", SERVERS))
    return path


def _text(app: AvaConsole, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def _servers(pilot: Any, app: AvaConsole, wait: Any, sid: str) -> None:
    await wait(pilot, lambda: app.engine_running, within=30)
    assert app.engine is not None
    await wait(pilot, lambda: servers_up(app, sid), within=30)
    await pilot.press("f3")
    await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
    table = app.screen.query_one("#servers")
    await wait(pilot, lambda: sid in [k.value for k in table.rows])  # type: ignore[attr-defined]
    table.move_cursor(row=table.get_row_index(sid))  # type: ignore[attr-defined]
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_inspect_and_call_a_tool(config_path: Path, wait: Any, size: tuple[int, int]) -> None:
    app = AvaConsole(_config(config_path))
    async with app.run_test(size=size) as pilot:
        await _servers(pilot, app, wait, "insp")
        await pilot.press("o")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolInspector")
        tools = app.screen.query_one("#tool-list")
        await wait(pilot, lambda: tools.row_count == 2)  # type: ignore[attr-defined]
        assert "destructive" in str(tools.get_row("mcp_insp_book"))  # type: ignore[attr-defined]
        assert "read-only" in str(tools.get_row("mcp_insp_lookup"))  # type: ignore[attr-defined]
        await wait(pilot, lambda: bool(app.screen.query("#arg-guests")))
        schema = _text(app, "#tool-schema")
        assert '"destructiveHint": true' in schema and '"guests"' in schema
        # a wrong field: not called, the field named
        app.screen.query_one("#arg-name").focus()
        await pilot.press(*"Ann", "tab", *"two")
        await pilot.press("ctrl+t")
        await wait(pilot, lambda: "need attention" in _text(app, "#call-status"))
        assert "not a whole number" in _text(app, "#argmsg-guests")
        assert app.focused is not None and app.focused.id == "arg-guests"
        await pilot.press(*["backspace"] * 3, "2")
        app.screen.query_one("#arg-tags").value = "window, quiet"  # type: ignore[attr-defined]
        app.screen.query_one("#arg-extra").text = '{"note": "birthday"}'  # type: ignore[attr-defined]
        await pilot.press("ctrl+t")
        await wait(pilot, lambda: "success" in _text(app, "#call-status"), within=20)
        assert _text(app, "#call-spoken") == "“Booked Ann for 2.”"
        model = json.loads(_text(app, "#call-model"))
        assert model["status"] == "success" and model["message"] == "Booked Ann for 2."
        assert model["data"]["tags"] == ["window", "quiet"] and model["data"]["extra"] == {"note": "birthday"}
        # a long text result: what the caller hears is cut to something speakable
        tools.move_cursor(row=tools.get_row_index("mcp_insp_lookup"))  # type: ignore[attr-defined]
        await wait(pilot, lambda: bool(app.screen.query("#arg-name")) and not app.screen.query("#arg-guests"))
        app.screen.query_one("#arg-name").value = "Bo"  # type: ignore[attr-defined]
        await pilot.press("ctrl+t")
        await wait(pilot, lambda: "success" in _text(app, "#call-status"), within=20)
        spoken = _text(app, "#call-spoken")
        assert len(spoken) <= 302 and len(json.dumps(json.loads(_text(app, "#call-model"))["data"])) > 600
        await pilot.press("escape")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")


async def test_describe_a_server(config_path: Path, wait: Any) -> None:
    app = AvaConsole(_config(config_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await _servers(pilot, app, wait, "fx")
        await pilot.press("v")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServerDescribe")
        facts = _text(app, "#describe-facts")
        assert app.engine is not None
        pid = next(s["pid"] for s in app.engine.server_status()["servers"] if s["id"] == "fx")
        assert f"PID          {pid}" in facts
        assert "fixture_server.py" in facts and "{python}" not in facts  # the command as run
        assert "FX_TOKEN, LOG_LEVEL" in facts and "tok-secret-value-123" not in facts and "debug" not in facts
        assert "uptime" in facts and "tools" in facts
        assert "(none)" in _text(app, "#describe-errors")
        await pilot.press("o")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolInspector")
        await pilot.press("escape")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServerDescribe")
        await app.engine.mcp.supervisors["fx"].stop("operator test")  # an error the view must show with its time
        await wait(pilot, lambda: "operator test" in _text(app, "#describe-errors"), within=10)


def test_form_fields_from_a_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "number"},
            "kind": {"enum": ["a", "b"]},
            "flags": {"type": "array", "items": {"type": "boolean"}},
            "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "obj": {"type": "object", "properties": {"x": {"type": "string"}}},
            "name": {"type": "string"},
        },
        "required": ["name", "n"],
    }
    specs = fields_for(schema)
    assert [s.name for s in specs][:2] == ["n", "name"] and {s.name: s.kind for s in specs}["opt"] == "integer"
    args, problems = collect(specs, {"n": "1.5", "kind": "b", "flags": "true, false", "obj": '{"x": "y"}'})
    assert problems == {"name": "required"}
    assert args == {"n": 1.5, "kind": "b", "flags": [True, False], "obj": {"x": "y"}}
    _, problems = collect(specs, {"name": "x", "n": "1", "kind": "c", "flags": "[true, 3]", "obj": "{"})
    assert set(problems) == {"kind", "flags", "obj"} and "one of a, b" in problems["kind"]


def test_uptime_and_error_times() -> None:
    assert uptime_text(None) == "-" and uptime_text(5) == "5 s" and uptime_text(3725) == "1 h 02 min"
    lines = error_lines({"errors": [{"at": 1000.0, "error": "first"}, {"at": 1060.0, "error": "second"}]}, now=1090)
    assert "second" in lines[0] and "(30 s ago)" in lines[0] and "1 min 30 s ago" in lines[1]

"""One YAML dialect: the server form's YAML box and the scripted provider's scripts read like the config file.

Before, the form and the scripts used PyYAML (YAML 1.1: ``on``/``no`` are booleans, ``1e3`` and ``0o17`` are text)
while the loader uses ruamel.yaml (YAML 1.2: the other way round), so the same text meant two different things.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.server_model import FormValues, check_tools, from_config, to_config
from engine.config import ConfigDocument, ConfigError, dump_yaml_fragment, load_settings_text, parse_yaml_fragment
from engine.providers.script import ScriptError, load_script

TOKENS = ["on", "no", "yes", "off", "On", "1e3", "0o17", "~", "0x1F", "2025-06-18", "null", "true"]


def tools_box(token: str) -> str:
    return f"- name: roll\n  probe_args:\n    v: {token}\n"


def through_form(token: str) -> Any:
    data = to_config(FormValues(id="s", command="python -m x", tools=tools_box(token)))
    return data["tools"][0]["probe_args"]["v"]


def through_loader(token: str) -> Any:
    box = "".join(f"      {line}\n" for line in tools_box(token).splitlines())
    text = f"mcp:\n  servers:\n    s:\n      command: [python, -m, x]\n      tools:\n{box}"
    probe_args = load_settings_text(text, "config.yaml").mcp.servers["s"].tools[0].probe_args
    assert probe_args is not None
    return probe_args["v"]


@pytest.mark.parametrize("token", TOKENS)
def test_form_and_loader_read_a_value_alike(token: str) -> None:
    form, loader = through_form(token), through_loader(token)
    assert (type(form), form) == (type(loader), loader)
    assert parse_yaml_fragment(f"v: {token}") == {"v": loader}


def test_yaml_1_2_values() -> None:
    assert [through_form(t) for t in ("on", "no", "yes", "off", "1e3", "0o17", "~")] == [
        "on",
        "no",
        "yes",
        "off",
        1000.0,
        15,
        None,
    ]


@pytest.mark.parametrize("token", ["on", "no", "1e3", "~", "0o17", "plain"])
def test_form_accepts_a_tool_name_exactly_when_the_loader_does(token: str) -> None:
    text = f"mcp:\n  servers:\n    s:\n      command: [python, -m, x]\n      tools:\n        - name: {token}\n"
    try:
        load_settings_text(text, "config.yaml")
        loader_ok = True
    except ConfigError:
        loader_ok = False
    assert (check_tools(f"- name: {token}") == "") is loader_ok


@pytest.mark.parametrize("text", ["on", "0o17", "1e3", "~", "2025-06-18", "yes please", "123"])
def test_form_round_trip_keeps_text_that_looks_like_another_type(text: str) -> None:
    """A string in the config shown in the YAML box and saved again is still that string."""
    raw = {"transport": "stdio", "command": ["python", "-m", "x"], "tools": [{"name": "t", "probe_args": {"v": text}}]}
    form = from_config("s", raw)
    assert to_config(form)["tools"] == raw["tools"]
    assert parse_yaml_fragment(dump_yaml_fragment(raw["tools"])) == raw["tools"]


def test_form_keeps_what_the_file_says(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "mcp:\n  servers:\n    s:\n      command: [python]\n      tools:\n"
        "        - name: t\n          probe_args: {a: on, b: '0o17', c: 0o17}\n"
    )
    raw = ConfigDocument.load(path).get(("mcp", "servers", "s"))
    assert to_config(from_config("s", raw))["tools"] == [{"name": "t", "probe_args": {"a": "on", "b": "0o17", "c": 15}}]


def test_fragment_errors_name_the_line() -> None:
    assert check_tools("- name: a\n  description: [").startswith("line 2: YAML syntax error")
    assert "line 2, tools[0].description: YAML tags" in check_tools("- name: a\n  description: !x y")
    assert "duplicate key 'name'" in check_tools("- name: a\n  name: b")
    with pytest.raises(ConfigError, match=r"^tools:1: YAML syntax error"):
        parse_yaml_fragment("[", "tools")


def test_scripts_read_like_the_config(tmp_path: Path) -> None:
    p = tmp_path / "script.yaml"
    p.write_text(
        "intents:\n  - name: lights\n    patterns: ['lights']\n"
        "    tools: [{name: switch, args: {state: on, level: 1e3, mode: 0o17}}]\n"
    )
    args = load_script(p).intents[0].tools[0].args
    assert args == {"state": "on", "level": 1000.0, "mode": 15}
    p.write_text("greeting: hi\ngreeting: again\n")
    with pytest.raises(ScriptError, match=r"script\.yaml:\d+: greeting: duplicate key"):
        load_script(p)
    p.write_text("intents: [\n")
    with pytest.raises(ScriptError, match=r"script\.yaml:2: YAML syntax error"):
        load_script(p)

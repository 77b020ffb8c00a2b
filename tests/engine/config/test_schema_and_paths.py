"""JSON schema export and config path resolution (first run copies the demo config)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest

import engine.config as config_pkg
from engine.config import ConfigError, json_schema, json_schema_text, resolve_config_path


def test_schema_covers_every_section_and_forbids_unknown_keys() -> None:
    schema = json_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert set(schema["properties"]) == {
        "engine",
        "providers",
        "budget",
        "mcp",
        "contexts",
        "tools",
        "softphone",
        "asterisk",
        "console",
        "recording",
    }
    assert schema["additionalProperties"] is False
    defs = schema["$defs"]
    assert defs["RestartConfig"]["additionalProperties"] is False
    assert "json" in defs["LoggingConfig"]["properties"]  # the alias, as written in YAML
    assert defs["McpConfig"]["properties"]["servers"]["propertyNames"]["pattern"] == "^[a-z][a-z0-9_]{0,31}$"
    assert json.loads(json_schema_text()) == schema


def test_schema_accepts_references_for_numbers() -> None:
    port = json_schema()["$defs"]["HttpConfig"]["properties"]["port"]
    kinds = [member.get("type") for member in port["anyOf"]]
    assert kinds == ["integer", "string"]
    assert port["anyOf"][0]["maximum"] == 65535


def test_schema_validates_the_full_example(configs_dir: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from engine.config import ConfigDocument

    data = json.loads(json.dumps(ConfigDocument.load(configs_dir / "full.yaml").data))
    jsonschema.validate(data, json_schema())
    data["engine"]["http"]["prot"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, json_schema())


def test_explicit_path_wins(tmp_path: Path) -> None:
    assert resolve_config_path(str(tmp_path / "x.yaml")) == tmp_path / "x.yaml"
    assert resolve_config_path("~/cfg.yaml") == Path.home() / "cfg.yaml"


def test_first_run_copies_the_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_dir = tmp_path / "user-config"
    monkeypatch.setattr(config_pkg.platformdirs, "user_config_dir", lambda app: str(user_dir / app))
    demo = tmp_path / "default.yaml"
    demo.write_text("# demo\nengine: {}\n")
    target = resolve_config_path(None, default=demo)
    assert target == user_dir / "ava-console" / "config.yaml"
    assert target.read_text() == "# demo\nengine: {}\n"
    target.write_text("# mine\n")
    assert resolve_config_path(None, default=demo).read_text() == "# mine\n"  # never overwritten


def test_missing_demo_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config_pkg.platformdirs, "user_config_dir", lambda app: str(tmp_path / app))
    with pytest.raises(ConfigError, match=r"the demo config to copy to .* is missing; pass --config PATH"):
        resolve_config_path(None, default=tmp_path / "nope.yaml")


def test_default_demo_location_is_repo_config_dir() -> None:
    assert config_pkg.DEFAULT_CONFIG == Path(__file__).resolve().parents[3] / "config" / "default.yaml"


def test_elicitation_takes_a_word_or_the_full_form() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from engine.config.models import ContextConfig

    word = ContextConfig.model_validate({"provider": "p", "elicitation": "caller"}).elicitation
    assert (word.ask, word.timeout_ms, word.attempts) == ("caller", 30_000, 2)
    assert ContextConfig.model_validate({"provider": "p"}).elicitation.ask == "decline"
    context: dict[str, Any] = {"provider": "p"}
    base = {"providers": {}, "contexts": {"c": context}}
    for value in ("operator", {"ask": "decline", "timeout_ms": 500}):
        context["elicitation"] = value
        jsonschema.validate(base, json_schema())
    for bad in ("maybe", {"ask": "caller", "timeout_ms": 0}, {"ask": "caller", "when": 1}):
        with pytest.raises(pydantic.ValidationError):
            ContextConfig.model_validate({"provider": "p", "elicitation": bad})
    context["elicitation"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(base, json_schema())

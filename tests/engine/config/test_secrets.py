"""Secrets: keyring store + index, masking, references, and the canary that must never leak."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.config import (
    ConfigDocument,
    ConfigError,
    SecretsError,
    delete_secret,
    get_secret,
    list_secrets,
    load_settings,
    load_settings_text,
    mask,
    references,
    set_secret,
)
from engine.config.secrets import INDEX_NAME, SERVICE
from tests.fixtures.memory_keyring import MemoryKeyring

ENV = {"AVA_TEST_PORT": "8123"}


def test_full_example_loads(full_keyring: MemoryKeyring, configs_dir: Path) -> None:
    settings = load_settings(configs_dir / "full.yaml", env=ENV)
    assert settings.engine.http.port == 8123
    assert settings.engine.logging.json_format is True
    assert settings.providers["voice"].brain == "gpt"
    assert settings.mcp.servers["weather"].headers["Authorization"].get_secret_value() == "Bearer weather-token-333"
    assert settings.mcp.servers["dice"].tools[0].expose_as == "roll_dice"
    assert settings.contexts["support"].tier.default == "fast"
    assert settings.asterisk.password is not None
    assert settings.asterisk.password.get_secret_value() == "not-a-secret"
    assert settings.tools.extensions["sales"].destination == "PJSIP/2001"
    assert settings.console.keymap == {"tier_deep": "f3"}
    # every top-level section is present in the example
    raw = ConfigDocument.load(configs_dir / "full.yaml").data
    assert set(raw) == set(type(settings).model_fields)


def test_canary_never_printed_by_settings(
    full_keyring: MemoryKeyring, configs_dir: Path, canary: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = load_settings(configs_dir / "full.yaml", env=ENV)
    assert settings.providers["gpt"].api_key is not None
    assert settings.providers["gpt"].api_key.get_secret_value() == canary
    for text in (str(settings), repr(settings), settings.model_dump_json(), str(settings.model_dump())):
        assert canary not in text
    assert canary not in caplog.text


@pytest.mark.parametrize(
    "snippet",
    [
        "mcp:\n  servers:\n    w:\n      transport: http\n      url: ${keyring:openai_key}\n",
        "mcp:\n  servers:\n    w:\n      command: [x]\n      mode: ${keyring:openai_key}\n",
        "providers:\n  p:\n    type: ${keyring:openai_key}\n",
        "engine:\n  http:\n    port: ${keyring:openai_key}\n",
        "mcp:\n  servers:\n    w:\n      command: [x]\n      tools:\n"
        "        - name: t\n          expose_as: ${CANARY}\n",
        "providers:\n  p:\n    type: openai_chat\n    api_key: ${CANARY}\n    api_kye: ${keyring:openai_key}\n",
    ],
)
def test_canary_never_in_error_messages(
    snippet: str, full_keyring: MemoryKeyring, canary: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ConfigError) as info:
        load_settings_text(snippet, "c.yaml", env={"CANARY": canary})
    rendered = str(info.value) + repr(info.value) + repr(info.value.issues)
    assert info.value.issues[0].line is not None
    assert canary not in rendered
    assert canary[:12] not in rendered
    assert canary not in caplog.text


def test_saved_config_keeps_reference_not_value(
    full_keyring: MemoryKeyring, tmp_path: Path, canary: str, configs_dir: Path
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text((configs_dir / "full.yaml").read_text())
    doc = ConfigDocument.load(path)
    doc.set(("providers", "gpt", "model"), "gpt-4.1")
    settings = doc.save(env=ENV)
    assert settings is not None and settings.providers["gpt"].model == "gpt-4.1"
    saved = path.read_text()
    assert "api_key: ${keyring:openai_key}" in saved
    assert canary not in saved
    assert canary not in doc.diff() and canary not in Path(str(path) + ".bak").read_text()


def test_secret_store_roundtrip_and_index(memory_keyring: MemoryKeyring) -> None:
    assert list_secrets() == []
    set_secret("openai_key", "sk-aaaa")
    set_secret("b.key-2", "v2")
    set_secret("openai_key", "sk-bbbb")  # replace keeps one index entry
    assert list_secrets() == ["b.key-2", "openai_key"]
    assert get_secret("openai_key") == "sk-bbbb"
    assert memory_keyring.get_password(SERVICE, INDEX_NAME) == '["b.key-2", "openai_key"]'
    assert delete_secret("openai_key") is True
    assert delete_secret("openai_key") is False
    assert get_secret("openai_key") is None
    assert list_secrets() == ["b.key-2"]


def test_corrupt_index_is_recovered(memory_keyring: MemoryKeyring, caplog: pytest.LogCaptureFixture) -> None:
    memory_keyring.set_password(SERVICE, INDEX_NAME, "{not json")
    assert list_secrets() == []
    set_secret("x", "value")
    assert list_secrets() == ["x"]


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, INDEX_NAME, "semi;colon"])
def test_bad_secret_names(name: str, memory_keyring: MemoryKeyring) -> None:
    with pytest.raises(SecretsError):
        set_secret(name, "v")


def test_empty_value_refused(memory_keyring: MemoryKeyring) -> None:
    with pytest.raises(SecretsError, match="empty value"):
        set_secret("k", "")


@pytest.mark.parametrize("call", [lambda: set_secret("k", "v"), lambda: get_secret("k"), list_secrets])
def test_no_backend_is_explained(call: Callable[[], object], no_keyring: None) -> None:
    with pytest.raises(SecretsError) as info:
        call()
    assert "no usable OS keyring" in str(info.value) and "keyrings.cryptfile" in str(info.value)


def test_mask_shows_no_character_of_the_secret() -> None:
    """``secrets get`` used to show 7 characters of a long secret (``sk-…9f3a``): now a length hint only."""
    assert mask("sk-proj-abcdefghijk9f3a") == "set (23 characters)"
    assert mask("x") == "set (1 character)"
    assert mask("") == "(not set)"
    assert mask(None) == "(not set)"
    for value in ("sk-CANARY-1234567890-9f3a", "ZQ", "ÄÖÜßé-secret"):
        assert mask(value) == f"set ({len(value)} characters)"


def test_references_from_text_and_document(configs_dir: Path) -> None:
    text = (configs_dir / "full.yaml").read_text()
    expected = {
        "http_token": ["engine.http.auth_token"],
        "mcp_token": ["engine.mcp_server.auth_token"],
        "openai_key": ["providers.gpt.api_key"],
        "smtp_password": ["tools.email.password"],
        "weather_token": ["mcp.servers.weather.headers.Authorization"],
    }
    assert references(text) == expected
    assert references(ConfigDocument.load(configs_dir / "full.yaml").data) == expected
    assert references("a: ['$${keyring:no}', '${keyring:k}']\nb: {c: '${keyring:k}'}\n") == {"k": ["a[1]", "b.c"]}

"""${VAR}, ${VAR:-default}, $${ escapes, ${keyring:NAME} and {python}: unit and through the loader."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.config import ConfigError, load_settings_text
from engine.config.expand import ExpansionError, Reference, expand, parse, references
from tests.fixtures.memory_keyring import MemoryKeyring


def _no_secret(name: str) -> str:
    raise ExpansionError(f"no secret {name}")


def ex(text: str, env: dict[str, str] | None = None) -> str:
    return expand(text, env=env or {}, lookup_secret=_no_secret)


@pytest.mark.parametrize(
    ("text", "env", "out"),
    [
        ("plain", {}, "plain"),
        ("${A}", {"A": "1"}, "1"),
        ("x-${A}-y", {"A": "mid"}, "x-mid-y"),
        ("${A:-dflt}", {}, "dflt"),
        ("${A:-dflt}", {"A": ""}, "dflt"),
        ("${A:-}", {}, ""),
        ("${A}", {"A": ""}, ""),
        ("${A:-a:-b}", {}, "a:-b"),
        ("$${A}", {"A": "1"}, "${A}"),
        ("$$${A}", {"A": "1"}, "$${A}"),
        ("cost $5 {x}", {}, "cost $5 {x}"),
        ("$", {}, "$"),
        ("${A}${B}", {"A": "1", "B": "2"}, "12"),
    ],
)
def test_expand(text: str, env: dict[str, str], out: str) -> None:
    assert ex(text, env) == out


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("${MISSING}", "environment variable MISSING is not set"),
        ("${", "unterminated '${'"),
        ("${1A}", "is not a valid reference"),
        ("${A B}", "is not a valid reference"),
        ("${}", "is not a valid reference"),
        ("${keyring:}", "names no valid secret"),
        ("${keyring:a b}", "names no valid secret"),
        ("${A:-${B}}", "nested references are not supported"),
    ],
)
def test_expand_errors(text: str, fragment: str) -> None:
    with pytest.raises(ExpansionError) as info:
        ex(text)
    assert fragment in info.value.message


def test_parse_and_references() -> None:
    assert parse("a${X:-1}b${keyring:k}") == ["a", Reference("env", "X", "1"), "b", Reference("keyring", "k")]
    assert references("$${keyring:no} ${keyring:yes} ${bad ref") == [Reference("keyring", "yes")]


def test_revealed_collects_substituted_values_but_not_defaults() -> None:
    revealed: set[str] = set()
    expand("${A} ${B:-dflt} ${keyring:k}", env={"A": "from-env"}, lookup_secret=lambda n: "s3cret", revealed=revealed)
    assert revealed == {"from-env", "s3cret"}


_text = st.text(alphabet=st.sampled_from(list("$ {}:-_aZ9k\\\n'\"")), max_size=40)


@given(_text)
def test_expansion_of_arbitrary_text_only_raises_expansion_error(text: str) -> None:
    try:
        ex(text, {"a": "A", "Z": "z"})
    except ExpansionError as exc:
        assert exc.message


@given(st.text(max_size=60).filter(lambda t: "$" not in t))
def test_text_without_dollar_is_unchanged(text: str) -> None:
    assert ex(text) == text


@given(st.text(alphabet=st.characters(blacklist_characters="}"), max_size=30))
def test_escape_always_yields_the_literal(body: str) -> None:
    assert ex("$${" + body.replace("$", "") + "}") == "${" + body.replace("$", "") + "}"


@given(_text)
def test_loader_with_arbitrary_string_values_raises_only_config_error(text: str) -> None:
    import json

    doc = "contexts:\n  c:\n    provider: p\n    prompt: " + json.dumps(text) + "\nproviders:\n  p: {type: ollama}\n"
    try:
        settings = load_settings_text(doc, "h.yaml", env={"a": "A"}, lookup_secret=_no_secret)
    except ConfigError as exc:
        assert all(i.file == "h.yaml" and i.line == 4 and i.path == "contexts.c.prompt" for i in exc.issues)
    else:
        assert "${" not in settings.contexts["c"].prompt or "$${" in text


def test_env_in_numbers_and_defaults_through_loader() -> None:
    settings = load_settings_text(
        "engine:\n  http:\n    port: ${PORT}\n    host: ${HOST:-127.0.0.1}\n", "e.yaml", env={"PORT": "9001"}
    )
    assert settings.engine.http.port == 9001
    assert settings.engine.http.host == "127.0.0.1"


def test_missing_env_var_has_file_line_path_and_no_follow_on_error() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings_text("engine:\n  http:\n    port: ${PORT}\n", "e.yaml", env={})
    assert str(info.value) == (
        "e.yaml:3: engine.http.port: environment variable PORT is not set (set it, or give a default: ${PORT:-value})"
    )


def test_python_placeholder_only_in_mcp_commands() -> None:
    settings = load_settings_text(
        "mcp:\n  servers:\n    s:\n      command: ['{python}', -m, x, '--py={python}']\n"
        "contexts:\n  c: {provider: p, prompt: 'say {python}'}\nproviders:\n  p: {type: ollama}\n",
        "p.yaml",
        env={},
    )
    assert settings.mcp.servers["s"].command == [sys.executable, "-m", "x", f"--py={sys.executable}"]
    assert settings.contexts["c"].prompt == "say {python}"


def test_keyring_reference_resolved(memory_keyring: MemoryKeyring) -> None:
    memory_keyring.set_password("ava-console", "openai_key", "sk-test-abcdef")
    settings = load_settings_text(
        "providers:\n  p:\n    type: openai_chat\n    api_key: ${keyring:openai_key}\n", "k.yaml", env={}
    )
    assert settings.providers["p"].api_key is not None
    assert settings.providers["p"].api_key.get_secret_value() == "sk-test-abcdef"


def test_missing_keyring_secret_message(memory_keyring: MemoryKeyring) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings_text("providers:\n  p:\n    type: openai_chat\n    api_key: ${keyring:openai_key}\n", "k.yaml")
    assert str(info.value) == (
        "k.yaml:4: providers.p.api_key: secret 'openai_key' is not in the keyring (service ava-console): "
        "set it with `ava-engine secrets set openai_key`"
    )


def test_no_keyring_backend_message(no_keyring: None) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings_text("providers:\n  p:\n    type: openai_chat\n    api_key: ${keyring:openai_key}\n", "k.yaml")
    text = str(info.value)
    assert text.startswith("k.yaml:4: providers.p.api_key: cannot read ${keyring:openai_key}: no usable OS keyring")
    assert "keyrings.cryptfile" in text
    assert "keyring.backends.fail.Keyring" in text


def test_config_without_keyring_references_never_touches_keyring(no_keyring: None) -> None:
    assert load_settings_text("engine: {}\n", "x.yaml").engine.http.port == 8090

"""One YAML library (ruamel.yaml): the config loader reads YAML 1.2 round-trip, as docs/configuration.md says, and
the built-in servers' data files (dice tables, rule corpora, aerodromes) keep the YAML 1.1 reading they always had,
through the same bounded loader, without PyYAML."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from ruamel.yaml.error import YAMLError

from engine.bounds.yaml_loader import MAX_YAML_DEPTH, YamlLimitError, safe_load
from engine.config import parse_yaml_fragment

ROOT = Path(__file__).resolve().parents[3]
TEXT = "a: yes\nb: on\nc: off\nd: 010\ne: 1:30\nf: 2024-01-02\n"


def test_the_config_reads_yaml_1_2() -> None:
    assert parse_yaml_fragment(TEXT) == {"a": "yes", "b": "on", "c": "off", "d": 10, "e": "1:30", "f": "2024-01-02"}


def test_the_servers_data_files_read_yaml_1_1_as_before() -> None:
    value = safe_load(TEXT)
    assert value["a"] is True and value["b"] is True and value["c"] is False
    assert (value["d"], value["e"], str(value["f"])) == (8, 90, "2024-01-02")


def test_a_bound_is_a_yaml_error_of_the_one_library() -> None:
    with pytest.raises(YAMLError, match="nested more than"):
        safe_load("[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1))
    assert issubclass(YamlLimitError, YAMLError)
    with pytest.raises(YAMLError, match="line 2"):
        safe_load("a: [1,\n")


def test_the_engine_imports_no_pyyaml_and_does_not_declare_it() -> None:
    code = (
        "import sys, engine.bounds.yaml_loader, engine.config, engine.servers.dice.tables, "
        "engine.servers.rules.corpus, engine.servers.aviation_atis.aerodromes; print('yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert not [d for d in deps if d.lower().startswith("pyyaml")]

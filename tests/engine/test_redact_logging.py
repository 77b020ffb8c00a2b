"""``engine.logging`` works: each key has an effect (level, file, json, max_bytes + backup_count, loggers), the
CLI's ``--log-level`` wins, and every handler it installs masks secrets. Before, the keys were accepted and
ignored: the CLI always logged warnings to stderr in one format and never wrote a file."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.config.models import LoggingConfig
from engine.core.logs import configure_logging
from engine.redaction.redactor import MASK, Redactor

AVA_ENGINE = Path(sys.executable).parent / "ava-engine"


@pytest.fixture(autouse=True)
def _restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
            h.close()
    root.setLevel(level)
    for name in ("test.loggers.noisy", "test.loggers.quiet"):
        logging.getLogger(name).setLevel(logging.NOTSET)


def cfg(**kw: object) -> LoggingConfig:
    return LoggingConfig.model_validate(kw)


def test_file_gets_the_level_and_secrets_are_masked(tmp_path: Path) -> None:
    configure_logging(
        cfg(level="info", file="logs/engine.log"), Redactor(["hunter2-secret"]), stream=None, base_dir=tmp_path
    )
    log = logging.getLogger("test.logging.file")
    log.debug("not written")
    log.info("written with %s", "hunter2-secret")
    try:
        raise RuntimeError("boom hunter2-secret")
    except RuntimeError:
        log.exception("failed")
    text = (tmp_path / "logs" / "engine.log").read_text()
    assert "not written" not in text and f"written with {MASK}" in text
    assert "RuntimeError: boom" in text and "hunter2-secret" not in text


def test_json_format(tmp_path: Path) -> None:
    configure_logging(cfg(file=str(tmp_path / "j.log"), json=True), Redactor(), stream=None)
    logging.getLogger("test.logging.json").warning("hello %d", 5)
    line = json.loads((tmp_path / "j.log").read_text().splitlines()[-1])
    assert line["level"] == "warning" and line["logger"] == "test.logging.json" and line["message"] == "hello 5"


def test_rotation(tmp_path: Path) -> None:
    configure_logging(cfg(file=str(tmp_path / "r.log"), max_bytes=500, backup_count=2), Redactor(), stream=None)
    log = logging.getLogger("test.logging.rotate")
    for i in range(100):
        log.warning("line %03d %s", i, "x" * 40)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["r.log", "r.log.1", "r.log.2"]


def test_per_logger_levels(tmp_path: Path) -> None:
    config = cfg(
        level="warning",
        file=str(tmp_path / "l.log"),
        loggers={"test.loggers.noisy": "debug", "test.loggers.quiet": "error"},
    )
    configure_logging(config, Redactor(), stream=None)
    logging.getLogger("test.loggers.noisy.child").debug("noisy debug")
    logging.getLogger("test.loggers.quiet").warning("quiet warning")
    logging.getLogger("test.loggers.other").info("other info")
    logging.getLogger("test.loggers.other").warning("other warning")
    text = (tmp_path / "l.log").read_text()
    assert "noisy debug" in text and "other warning" in text
    assert "quiet warning" not in text and "other info" not in text


def test_stderr_level_cli_override_and_reconfigure(tmp_path: Path) -> None:
    import io

    out = io.StringIO()
    configure_logging(cfg(), Redactor(), stream=out)  # level not set in the config: stderr keeps warnings
    logging.getLogger("test.logging.stderr").info("info one")
    configure_logging(cfg(level="info"), Redactor(), stream=out)  # set: stderr follows it
    logging.getLogger("test.logging.stderr").info("info two")
    configure_logging(cfg(level="error"), Redactor(), stream=out, cli_level="debug")  # --log-level wins
    logging.getLogger("test.logging.stderr").debug("debug three")
    text = out.getvalue()
    assert "info one" not in text and "info two" in text and "debug three" in text
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_ava_engine_handler", False)]
    assert len(ours) == 1  # each call replaced the handlers of the one before


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AVA_ENGINE), "--config", str(config), *args], capture_output=True, text=True, timeout=60, cwd=config.parent
    )


def test_cli_applies_engine_logging_and_log_level_overrides_it(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("engine:\n  logging: {level: debug, file: logs/ava.log, json: true}\n")
    p = _cli(config, "check")
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in (tmp_path / "logs" / "ava.log").read_text().splitlines()]
    assert any(x["level"] == "debug" and "ava-engine check" in x["message"] for x in lines)
    assert any(json.loads(line)["level"] == "debug" for line in p.stderr.splitlines())  # stderr: same level
    before = len(lines)
    p = _cli(config, "--log-level", "warning", "check")
    assert p.returncode == 0, p.stderr
    assert len((tmp_path / "logs" / "ava.log").read_text().splitlines()) == before and p.stderr == ""

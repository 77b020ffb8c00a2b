"""Media in an MCP tool result stays out of ``data``: kind, MIME type, size and SHA-256 of the bytes, never base64.

``data`` goes to the model's provider, events, logs, recordings and ``mcp call --json``; an image there was 64,000
characters of base64 (server-filesystem's ``read_media_file`` repeats its image block in ``structuredContent``).
Run through the installed entry point against ``tests/fixtures/mcp_servers/media_server.py``, which answers with
media each way real servers do: content blocks, structured content, an embedded blob, JSON text, a ``data:`` URI.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
MEDIA_SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "media_server.py"
sys.path.insert(0, str(MEDIA_SERVER.parent))
from media_server import payload  # noqa: E402

TOOLS = ["md_read_media_file", "md_voice_note", "md_attachment", "small_attachment", "md_json_image", "md_data_uri"]


def config(tmp_path: Path) -> Path:
    command = [sys.executable, str(MEDIA_SERVER)]
    path = tmp_path / "config.yaml"
    path.write_text(
        "engine:\n  http: {enabled: false}\nmcp:\n  servers:\n"
        f"    md:\n      command: {json.dumps(command)}\n"
        f"    small:\n      command: {json.dumps([*command, '--size', '3000'])}\n"
    )
    return path


def mcp_call(config: Path, tool: str) -> tuple[str, dict[str, Any]]:
    assert ENTRY_POINT.exists(), f"{ENTRY_POINT} is missing: install the package (make test does) first"
    done = subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), "mcp", "call", tool, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads(done.stdout)


def media(kind: str, mime: str, size: int = 48_000, **more: Any) -> dict[str, Any]:
    return {
        "type": kind,
        **more,
        "mime_type": mime,
        "size_bytes": size,
        "sha256": hashlib.sha256(payload(size)).hexdigest(),
    }


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, dict[str, Any]]]:
    """One ``mcp call`` per tool, all at once: six CLI runs one after another took most of a loaded run's 120 s."""
    cfg = config(tmp_path_factory.mktemp("media"))
    with ThreadPoolExecutor(len(TOOLS)) as pool:
        return dict(zip(TOOLS, pool.map(lambda tool: mcp_call(cfg, f"mcp_{tool}"), TOOLS), strict=True))


@pytest.mark.parametrize("tool", TOOLS)
def test_no_base64_in_the_output(calls: dict[str, tuple[str, dict[str, Any]]], tool: str) -> None:
    out, result = calls[tool]
    assert result["status"] == "success", result
    encoded = base64.b64encode(payload(3000 if tool.startswith("small") else 48_000)).decode()
    assert encoded[:40] not in out and encoded[-40:] not in out
    assert len(out) < 2_000, out[:300]


def test_an_image_block_and_its_structured_copy_are_summaries(calls: dict[str, tuple[str, dict[str, Any]]]) -> None:
    _, result = calls["md_read_media_file"]
    image = media("image", "image/png")
    assert result["data"] == {"result": {"content": [image]}, "attachments": [image]}


def test_audio_in_structured_content_keeps_its_neighbours(calls: dict[str, tuple[str, dict[str, Any]]]) -> None:
    _, result = calls["md_voice_note"]
    audio = media("audio", "audio/wav")
    assert result["message"] == "Your voice note."
    assert result["data"] == {"result": {"content": [audio], "seconds": 3}, "attachments": [audio]}


@pytest.mark.parametrize("tool", ["md_attachment", "small_attachment"])
def test_an_embedded_blob_is_summarised_whatever_its_size(
    calls: dict[str, tuple[str, dict[str, Any]]], tool: str
) -> None:
    _, result = calls[tool]
    size = 3000 if tool.startswith("small") else 48_000
    doc = media("resource", "application/pdf", size, uri="file:///tmp/report.pdf")
    assert result["data"] == {"result": "The report.", "attachments": [doc]}
    assert result["message"] == "The report. 1 attached document."


def test_json_text_and_data_uris_are_summarised(calls: dict[str, tuple[str, dict[str, Any]]]) -> None:
    assert calls["md_json_image"][1]["data"] == media("image", "image/jpeg", caption="a cat")
    assert calls["md_data_uri"][1]["data"] == {"name": "logo", "src": media("image", "image/gif")}

"""The e-mail tools are built-ins callable like any tool with the installed ``ava-engine mcp call``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
AVA = Path(sys.executable).parent / "ava-engine"
SCRIPT = ROOT / "tests" / "engine" / "email" / "scripts" / "mail.yaml"


def test_request_transcript_and_summary_through_mcp_call(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "engine: {http: {enabled: false}}\nmcp: {enabled: false}\n"
        f"providers:\n  desk: {{type: scripted, script: {SCRIPT}}}\n"
        "contexts:\n  desk: {provider: desk, prompt: x, tools: [request_transcript, send_email_summary]}\n"
        "tools:\n  email:\n    enabled: true\n    smtp_host: 127.0.0.1\n    smtp_port: 9\n"
        "    from_address: ava@example.com\n    admin_address: admin@example.com\n"
        "    outbox: outbox.sqlite3\n    check_domains: false\n",
        encoding="utf-8",
    )

    def call(name: str, args: dict[str, object]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(AVA), "--config", str(config), "mcp", "call", name, "--args", json.dumps(args), "--context", "desk"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    read_back = call("request_transcript", {"email_address": "john dot smith at gmail dot com"})
    assert read_back.returncode == 0, read_back.stderr
    assert "john dot smith at gmail dot com. Is that right?" in read_back.stdout
    assert '"address": "john.smith@gmail.com"' in read_back.stdout and '"queued": false' in read_back.stdout
    summary = call("send_email_summary", {})
    assert summary.returncode == 0 and "queued for the administrator" in summary.stdout

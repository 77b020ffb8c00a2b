"""On a voice call the caller hears "one moment" while a tool waits for the operator's approval.

A "vault" context on a pipeline provider (scripted brain) whose tool is listed under ``approve:``; an approver
that answers only once the announcement has been played: the caller hears the configured approval message, then
the answer; the tool runs once, after the approval.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, ProviderConfig
from engine.events import AnnouncementPlayed, ToolApprovalRequested
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult
from engine.voice.pipeline import VoiceCall
from engine.voice.stt import Recognizer
from engine.voice.wav_backend import WavBackend
from tests.engine.voice.helpers import DEMO_CONFIG, RATE, caller_wav, demo_settings

SCRIPT = """
greeting: "Vault line."
intents:
  - name: vault
    patterns: ['\\bvault\\b']
    examples: ["open the vault"]
    tools: [{name: open_vault}]
    reply: "{result}"
  - name: bye
    patterns: ['\\bgoodbye\\b']
    examples: ["goodbye"]
    tools: [{name: hangup_call, args: {farewell_message: "Bye now."}}]
fallback: "Say open the vault."
"""
MESSAGE = "One moment while I ask the keeper."
ANSWER = "The vault is open."


@pytest.fixture(scope="module")
def recognizer() -> Recognizer:
    return Recognizer()


async def test_one_moment_while_the_operator_decides(tmp_path: Path, recognizer: Recognizer) -> None:
    settings = demo_settings(tmp_path)
    script = tmp_path / "vault.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    settings.mcp.enabled = False
    settings.engine.approvals.message = MESSAGE
    settings.providers["vault_script"] = ProviderConfig(type="scripted", script=str(script))
    settings.providers["vault_voice"] = ProviderConfig(
        type="pipeline", brain="vault_script", voice="en-us", options={"rate": 190}
    )
    settings.contexts["vault"] = ContextConfig(
        provider="vault_voice", tools=["open_vault", "hangup_call"], approve=["open_vault"]
    )
    runs: list[dict[str, Any]] = []

    async def open_vault(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        runs.append(args)
        return ToolResult.success(ANSWER)

    tool = FunctionTool(ToolDefinition(name="open_vault", description="Open the vault."), open_vault)
    engine = Engine(settings, config_path=DEMO_CONFIG, extra_tools=[tool])
    engine.attach_approver("test")
    caller_wav(tmp_path / "in.wav", 2.0, [("open the vault", "en-us", 175, 9.0), ("goodbye", "en-us", 175, 3)])

    async def operator() -> list[str]:
        """Approves each request once its "one moment" was played; returns what it heard played first."""
        heard: list[str] = []
        with engine.bus.subscribe(types={ToolApprovalRequested.type, AnnouncementPlayed.type}) as sub:
            waiting: str | None = None
            while True:
                ev = await sub.get()
                if isinstance(ev, ToolApprovalRequested):
                    waiting = ev.approval_id
                elif isinstance(ev, AnnouncementPlayed) and waiting is not None:
                    heard.append(ev.text)
                    assert runs == []  # nothing ran while the caller heard "one moment"
                    engine.approve_tool(waiting)
                    return heard

    async with engine:
        approver = asyncio.create_task(operator())
        backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", sample_rate=RATE, timeline=True)
        call = VoiceCall(engine.voice_parts, backend, "vault", recognizer=recognizer)
        await call.run()
        heard = await asyncio.wait_for(approver, 5)
    assert heard == [MESSAGE]
    kinds = [(p.kind, p.text) for p in call.playbacks]
    assert kinds[:3] == [("greeting", "Vault line."), ("announcement", MESSAGE), ("reply", ANSWER)]
    assert runs == [{}]

"""The scripted provider: a deterministic dialog policy for demos, tests and IVR-style flows without an LLM.

It goes through the same provider interface as the real providers, so tool calls take the identical engine path
(allowlist, validation, timeout, events, metrics) and a script can stand in for a model in any context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.config.models import ProviderConfig
from engine.core.templates import prompt_values, render
from engine.providers.base import Provider, ProviderSession, ToolCallRequest, Turn, TurnReply
from engine.providers.script import Intent, Script, load_script, resolve_asset_path
from engine.sessions.history import Message
from engine.sessions.session import CallSession
from engine.text.spoken_numbers import digits_in_text


class ScriptedProvider(Provider):
    type = "scripted"

    def __init__(self, name: str, config: ProviderConfig, base_dir: Path | None = None) -> None:
        super().__init__(name, config)
        assert config.script is not None
        path = resolve_asset_path(config.script, base_dir)
        self.script: Script = load_script(path)
        self._compiled = self.script.compiled()

    def open_session(self, session: CallSession) -> ProviderSession:
        return ScriptedSession(self)

    def match(self, text: str) -> tuple[Intent, dict[str, str]] | None:
        candidates = [text]
        digits = digits_in_text(text)
        if digits != text:
            candidates.append(digits)
        for intent, patterns in self._compiled:
            for rx in patterns:
                for cand in candidates:
                    m = rx.search(cand)
                    if m:
                        return intent, {k: v for k, v in m.groupdict().items() if v is not None}
        return None


class ScriptedSession(ProviderSession):
    def __init__(self, provider: ScriptedProvider) -> None:
        self.provider = provider

    async def greeting(self, session: CallSession) -> str | None:
        g = self.provider.script.greeting
        return render(g, prompt_values(session)) if g else None

    async def run_turn(self, turn: Turn) -> TurnReply:
        user = next((i for i in reversed(turn.history) if isinstance(i, Message) and i.role == "user"), None)
        values: dict[str, Any] = prompt_values(turn.session)
        if user is None:
            return TurnReply(render(self.provider.script.fallback, values))
        found = self.provider.match(user.text)
        if found is None:
            return TurnReply(render(self.provider.script.fallback, values))
        intent, groups = found
        values.update(groups)
        if not intent.tools:
            return TurnReply(render(intent.reply, values))
        calls = [ToolCallRequest(t.name, {k: _render_arg(v, values) for k, v in t.args.items()}) for t in intent.tools]
        results = await turn.tools.call_tools(calls)
        values["result"] = " ".join(r.message for r in results if r.message)
        values["results"] = [r.payload() for r in results]
        values["data"] = results[0].data if results else None
        failed = any(r.status != "success" for r in results)
        template = intent.error_reply if failed and intent.error_reply else intent.reply
        return TurnReply(render(template, values), tool_rounds=1, meta={"intent": intent.name})


def _render_arg(value: Any, values: dict[str, Any]) -> Any:
    """Templates in argument values; a value that is exactly one placeholder keeps the group's text."""
    if isinstance(value, str):
        return render(value, values)
    if isinstance(value, dict):
        return {k: _render_arg(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_render_arg(v, values) for v in value]
    return value

"""The pipeline provider (``type: pipeline``): local STT → a text "brain" provider → local TTS.

The provider itself only thinks through its brain: its session delegates greeting, tool updates and every turn
to a session of the brain provider (the scripted provider or any text LLM provider), so tool calls take the
engine's one path. The audio loop around it (backend, VAD, recogniser, synthesiser) is the voice driver
``engine.voice.pipeline.VoiceCall``; this provider is the config's way of naming the brain and the voice
settings (``voice`` and ``options``: see ``engine.voice.options``) for that driver.

A provider is built from its own config entry only, so the brain is attached afterwards with ``bind`` (the
engine binds every pipeline provider once all providers are built; ``bind_pipelines`` does that for a dict).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.config.models import ProviderConfig, SoftphoneConfig
from engine.providers.base import Provider, ProviderError, ProviderSession, Turn, TurnReply
from engine.sessions.session import CallSession
from engine.tools.view import ToolView
from engine.voice.options import VoiceOptions


class PipelineProvider(Provider):
    type = "pipeline"

    def __init__(self, name: str, config: ProviderConfig, base_dir: Path | None = None) -> None:
        super().__init__(name, config)
        if not config.brain:
            raise ProviderError(name, "a pipeline provider needs 'brain': the name of the provider that thinks")
        self.brain_name: str = config.brain
        self.base_dir = base_dir
        # Validate the voice options now, so a bad key fails at config time, not on the first call.
        self.voice_options(SoftphoneConfig())
        self.brain: Provider | None = None

    def voice_options(self, softphone: SoftphoneConfig) -> VoiceOptions:
        """The softphone's voice settings with this provider's ``voice`` and ``options`` applied."""
        try:
            return VoiceOptions.from_softphone(softphone).with_overrides(
                self.config.voice, self.config.options, f"providers.{self.name}.options"
            )
        except ValueError as exc:
            raise ProviderError(self.name, str(exc)) from exc

    def bind(self, providers: Mapping[str, Provider]) -> None:
        """Attach the brain from the engine's providers (by the configured name)."""
        brain = providers.get(self.brain_name)
        if brain is None or brain is self:
            known = ", ".join(sorted(n for n in providers if n != self.name)) or "none"
            raise ProviderError(self.name, f"brain {self.brain_name!r} is not another provider (known: {known})")
        if isinstance(brain, PipelineProvider):
            raise ProviderError(self.name, f"brain {self.brain_name!r} is itself a pipeline; name a text provider")
        self.brain = brain

    def script_phrases(self) -> list[str] | None:
        """The brain's expected phrases (scripted brain), for the recogniser's grammar; None for an LLM brain."""
        return provider_phrases(self.brain) if self.brain is not None else None

    def open_session(self, session: CallSession) -> ProviderSession:
        if self.brain is None:
            raise ProviderError(
                self.name,
                f"not bound to its brain {self.brain_name!r} (the engine binds pipelines after building providers)",
            )
        return PipelineSession(self, self.brain.open_session(session))

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]:
        return self.brain.render_tools(view) if self.brain is not None else view.declarations()


class PipelineSession(ProviderSession):
    """One call's pipeline session: every call goes to the brain's session."""

    def __init__(self, provider: PipelineProvider, brain: ProviderSession) -> None:
        self.provider = provider
        self.brain = brain

    async def run_turn(self, turn: Turn) -> TurnReply:
        reply = await self.brain.run_turn(turn)
        reply.meta.setdefault("brain", self.provider.brain_name)
        return reply

    async def greeting(self, session: CallSession) -> str | None:
        return await self.brain.greeting(session)

    async def update_tools(self, view: ToolView) -> None:
        await self.brain.update_tools(view)

    async def aclose(self) -> None:
        await self.brain.aclose()


def provider_phrases(provider: Provider | None) -> list[str] | None:
    """Expected phrases of a scripted provider (directly or as a pipeline's brain); None otherwise."""
    if isinstance(provider, PipelineProvider):
        return provider.script_phrases()
    script = getattr(provider, "script", None)
    phrases = getattr(script, "phrases", None)
    if callable(phrases):
        found = phrases()
        if isinstance(found, list) and all(isinstance(p, str) for p in found):
            return found
    return None


def bind_pipelines(providers: Mapping[str, Provider]) -> None:
    """Bind every pipeline provider in ``providers`` to its brain (idempotent)."""
    for p in providers.values():
        if isinstance(p, PipelineProvider):
            p.bind(providers)

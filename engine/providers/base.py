"""The provider interface: one shape for scripted, text LLM and realtime voice providers.

A provider never stores conversation state of its own: each turn it gets a snapshot of the call's canonical
history and the call's tool view, renders its own payload from them, and asks the engine to run tools through a
``ToolGateway`` (so every call goes through ``Engine.execute_tool``: allowlist, validation, timeout, events,
metrics). Realtime providers keep a socket open, but push tool changes through ``update_tools`` and still execute
tools through the gateway.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from engine.config.models import ProviderConfig
from engine.sessions.history import HistoryItem, ToolResultItem
from engine.sessions.session import CallSession
from engine.usage.report import UsageReport

if TYPE_CHECKING:  # an annotation only: `ava-engine check` builds providers without the tool machinery
    from engine.tools.view import ToolView


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call as the model made it; ``name`` is already mapped back to the exposed name."""

    name: str
    arguments: str | dict[str, Any] | None
    provider_id: str | None = None


class ToolGateway(Protocol):
    async def call_tools(self, calls: Sequence[ToolCallRequest]) -> list[ToolResultItem]:
        """Record the calls in history, run them concurrently through the engine, return results in order."""
        ...


TextSink = Callable[[str], Awaitable[None] | None]


@dataclass(slots=True)
class Turn:
    session: CallSession
    system_prompt: str
    history: tuple[HistoryItem, ...]
    view: ToolView
    tools: ToolGateway
    on_text: TextSink | None = None
    #: A history reader that includes items added during this turn (tool calls and results).
    current_history: Callable[[], tuple[HistoryItem, ...]] | None = None

    def live_history(self) -> tuple[HistoryItem, ...]:
        return self.current_history() if self.current_history is not None else self.history


@dataclass(slots=True)
class TurnReply:
    text: str
    tool_rounds: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    #: What the provider reported using for this turn, every request of its tool loop summed (None: nothing).
    usage: UsageReport | None = None


class ProviderError(RuntimeError):
    """A provider failed in a way the caller should hear about (with the provider's own message)."""

    def __init__(self, provider: str, message: str, status: int | None = None) -> None:
        self.provider = provider
        self.status = status
        super().__init__(f"{provider}: {message}")


class ProviderSession(ABC):
    """One call's connection to a provider."""

    @abstractmethod
    async def run_turn(self, turn: Turn) -> TurnReply:
        """Answer the last user message, calling tools through ``turn.tools`` as the model asks."""

    async def greeting(self, session: CallSession) -> str | None:
        """The provider's own greeting, when it has one (the context's greeting wins)."""
        return None

    async def update_tools(self, view: ToolView) -> None:
        """Tell a stateful provider its tools changed; request/response providers re-render per request."""
        return None

    async def aclose(self) -> None:
        return None


class Provider(ABC):
    """A configured provider instance (``providers.<name>`` in the config)."""

    type: str = ""

    def __init__(self, name: str, config: ProviderConfig) -> None:
        self.name = name
        self.config = config

    def required(self, key: str, example: str = "") -> str:
        """``config.<key>`` (a text field), or a ValueError naming the provider, its type, the key and ``example``."""
        value = getattr(self.config, key)
        if not value:
            article = "an" if self.type[:1] in ("a", "e", "i", "o", "u") else "a"
            hint = f" (e.g. {example})" if example else ""
            raise ValueError(f"providers.{self.name}: {article} {self.type} provider needs {key!r}{hint}")
        return str(value)

    @abstractmethod
    def open_session(self, session: CallSession) -> ProviderSession: ...

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]:
        """Exactly the tools array this provider's request carries for ``view`` (canonical by default)."""
        return view.declarations()

    async def aclose(self) -> None:
        return None

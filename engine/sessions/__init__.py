"""Live calls and their canonical history."""

from engine.sessions.history import History, HistoryItem, Message, ToolCallItem, ToolResultItem
from engine.sessions.session import CallSession
from engine.sessions.snapshot import CallInfo, ToolState
from engine.sessions.store import InMemorySessionStore, SessionStore

__all__ = [
    "CallInfo",
    "CallSession",
    "History",
    "HistoryItem",
    "InMemorySessionStore",
    "Message",
    "SessionStore",
    "ToolCallItem",
    "ToolResultItem",
    "ToolState",
]

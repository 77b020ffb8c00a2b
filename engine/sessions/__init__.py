"""Live calls and their canonical history."""

from engine.sessions.history import History, HistoryItem, Message, ToolCallItem, ToolResultItem
from engine.sessions.session import CallSession
from engine.sessions.store import InMemorySessionStore, SessionStore

__all__ = [
    "CallSession",
    "History",
    "HistoryItem",
    "InMemorySessionStore",
    "Message",
    "SessionStore",
    "ToolCallItem",
    "ToolResultItem",
]

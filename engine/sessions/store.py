"""Where live calls are kept. An interface, so a shared store (e.g. Redis) can replace the in-memory one."""

from __future__ import annotations

from abc import ABC, abstractmethod

from engine.sessions.session import CallSession


class SessionStore(ABC):
    @abstractmethod
    def add(self, session: CallSession) -> None: ...

    @abstractmethod
    def get(self, call_id: str) -> CallSession | None: ...

    @abstractmethod
    def remove(self, call_id: str) -> CallSession | None: ...

    @abstractmethod
    def all(self) -> list[CallSession]: ...


class InMemorySessionStore(SessionStore):
    def __init__(self) -> None:
        self._sessions: dict[str, CallSession] = {}

    def add(self, session: CallSession) -> None:
        if session.call_id in self._sessions:
            raise ValueError(f"call {session.call_id} already exists")
        self._sessions[session.call_id] = session

    def get(self, call_id: str) -> CallSession | None:
        return self._sessions.get(call_id)

    def remove(self, call_id: str) -> CallSession | None:
        return self._sessions.pop(call_id, None)

    def all(self) -> list[CallSession]:
        return list(self._sessions.values())

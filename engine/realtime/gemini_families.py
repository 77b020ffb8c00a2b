"""Gemini Live model families: how each one accepts text from the client, as its documentation says.

Why it exists: Gemini Live models differ in what a client may send during a call, and breaking a family's rule
is not a soft failure — Gemini 3.1 Live closes the socket with 1007 "Request contains an invalid argument." on a
mid-call ``clientContent`` (reference/real-behaviour.md, "Gemini Live"). Every path that puts text into a live
session (greeting, announcement, say-now, whisper, the apply-now "continue", the transcript replayed after a
fresh reconnect) asks this table for its route, so each rule has one home.

The table (patterns are matched against the model name without ``models/``, case-insensitive):

==========================  ==================================  =============  ===============  ===============
family                      model names                         mid-call       initial history  mid-call text
                                                                clientContent  needs            goes as
                                                                               historyConfig
==========================  ==================================  =============  ===============  ===============
``gemini-3.1-live``         ``gemini-3.1-*live*``               no             yes              realtimeInput
``gemini-2.5-native-audio`` ``gemini-2.5-flash-native-audio*``  yes            no               clientContent
``gemini-live-2.5``         ``gemini-live-2.5-*``               yes            no               clientContent
``gemini-2.0-flash-live``   ``gemini-2.0-flash-live*``          yes (kept)     no (kept)        clientContent
``other``                   anything else                       yes (kept)     no (kept)        clientContent
==========================  ==================================  =============  ===============  ===============

Sources: 3.1 Live — ``clientContent`` only to seed the initial history, and only with
``setup.historyConfig.initialHistoryInClientContent``; text during the conversation through ``realtimeInput``
(real-behaviour.md; the SDK's ``HistoryConfig``: the server takes ``clientContent`` until one has
``turnComplete: true`` — that history triggers no model call — then the conversation runs on ``realtimeInput``).
2.5 models accept mid-call ``clientContent`` (real-behaviour.md). The reference files state no rule for 2.0 Flash
Live nor for other models (3.8 Live included: only its NON_BLOCKING default is documented), so those keep the
adapter's earlier behaviour, marked "kept" above. ``options.family`` picks a row by name for a model the
patterns do not know.

What a route cannot carry: ``realtimeInput.text`` is always the caller's side of the conversation and the model
may answer it at once, so on a ``realtimeInput`` family a whisper (a note for the next reply) can draw an answer;
``clientContent`` with ``turnComplete: false`` is the only way to add text without one, and 3.1 refuses it mid-call.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

TextRoute = Literal["clientContent", "realtimeInput"]


@dataclass(frozen=True, slots=True)
class Family:
    """One row of the table: what models of this family accept from the client."""

    id: str
    patterns: tuple[str, ...]
    #: ``clientContent`` is accepted during the conversation (not only as the initial history).
    mid_call_client_content: bool
    #: Initial history in ``clientContent`` is accepted only after ``setup.historyConfig`` announces it.
    history_needs_config: bool
    #: How text reaches the model during the call.
    text_route: TextRoute
    #: True when the reference files state this family's rule (False: the adapter's earlier behaviour is kept).
    documented: bool

    @property
    def rule(self) -> str:
        """The family's rule in one sentence, for notices."""
        if not self.mid_call_client_content:
            return (
                f"{self.id} models take clientContent only to seed the initial history, with "
                "setup.historyConfig.initialHistoryInClientContent; text during the call goes as realtimeInput.text"
            )
        if self.documented:
            return f"{self.id} models take text during the call as clientContent turns"
        return (
            f"no documented rule for {self.id} models: text during the call goes as clientContent turns "
            "(set options.family to a row of the table if this model needs another route)"
        )

    def text_message(self, text: str, *, respond: bool = True) -> dict[str, Any]:
        """``text`` as this family takes it mid-call. ``respond=False`` (a note, no answer now) is honoured only by
        ``clientContent``; ``realtimeInput.text`` is caller input the model may answer."""
        if self.text_route == "realtimeInput":
            return {"realtimeInput": {"text": text}}
        return {"clientContent": {"turns": [{"role": "user", "parts": [{"text": text}]}], "turnComplete": respond}}

    def history_message(self, turns: list[dict[str, Any]]) -> dict[str, Any]:
        """Earlier turns as context: with ``historyConfig`` the history ends with ``turnComplete: true`` (which, in
        the initial-history phase, triggers no model call); otherwise ``turnComplete: false`` asks for no answer."""
        return {"clientContent": {"turns": turns, "turnComplete": self.history_needs_config}}


FAMILIES: tuple[Family, ...] = (
    Family("gemini-3.1-live", ("gemini-3.1-*live*",), False, True, "realtimeInput", True),
    Family("gemini-2.5-native-audio", ("gemini-2.5-flash-native-audio*",), True, False, "clientContent", True),
    Family("gemini-live-2.5", ("gemini-live-2.5-*",), True, False, "clientContent", True),
    Family("gemini-2.0-flash-live", ("gemini-2.0-flash-live*",), True, False, "clientContent", False),
    Family("other", ("*",), True, False, "clientContent", False),
)
FAMILY_IDS: tuple[str, ...] = tuple(f.id for f in FAMILIES)


def family_for(model: str, chosen: str = "auto") -> Family:
    """The family of ``model`` (``models/…`` or bare), or the row named ``chosen`` when it is not ``auto``."""
    if chosen != "auto":
        for f in FAMILIES:
            if f.id == chosen:
                return f
        raise ValueError(f"unknown Gemini Live model family {chosen!r} (one of auto, {', '.join(FAMILY_IDS)})")
    name = model.rsplit("/", 1)[-1].lower()
    return next(f for f in FAMILIES if any(fnmatchcase(name, p) for p in f.patterns))

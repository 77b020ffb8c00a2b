"""The events the engine tells the world about, and the bus they travel on: the public API's ``engine.events``.

Every event class lives in a module of this package by what it is about (``catalog``: calls, tools, tiers, servers,
the softphone; ``turns``: the latency waterfall; ``email``, ``elicitation``, ``usage``: those features'); ``bus`` is
the ``EventBus`` and ``text`` renders an event as a sentence. This face imports them all, so importing any one module
of the package first loads every event class (and gives each its fast constructor, ``fast_init``). The package's own
modules never import this face, only each other.
"""

from __future__ import annotations

from engine.events.bus import EventBus, Subscription
from engine.events.catalog import (
    AnnouncementPlayed,
    AnnouncementRequested,
    CallEnded,
    CallMonitorChanged,
    CallStarted,
    CallTransferAnswered,
    CallTransferCancelled,
    CallTransferFailed,
    CallTransferStarted,
    ConfigReloaded,
    EngineError,
    Event,
    ProviderRateLimits,
    RateLimit,
    ServerStateChanged,
    SoftphoneLevel,
    SoftphoneStateChanged,
    SteeringInjected,
    TierChanged,
    ToolApprovalRequested,
    ToolApprovalResolved,
    ToolCompleted,
    ToolProgressed,
    ToolRejected,
    ToolRequested,
    ToolsChanged,
    ToolsOmitted,
    TranscriptAdded,
    TurnOverBudget,
)
from engine.events.elicitation import ElicitationRequested, ElicitationResolved, ElicitationWaiting
from engine.events.email import EmailFailed, EmailQueued, EmailRecipient, EmailSent
from engine.events.fast_init import fast_frozen_init
from engine.events.text import describe_event
from engine.events.turns import SpeakingChanged, TurnStage, TurnTimings
from engine.events.usage import BudgetAlert, CallUsage, UsageUpdated

__all__ = [
    "AnnouncementPlayed",
    "AnnouncementRequested",
    "BudgetAlert",
    "CallEnded",
    "CallMonitorChanged",
    "CallStarted",
    "CallTransferAnswered",
    "CallTransferCancelled",
    "CallTransferFailed",
    "CallTransferStarted",
    "CallUsage",
    "ConfigReloaded",
    "ElicitationRequested",
    "ElicitationResolved",
    "ElicitationWaiting",
    "EmailFailed",
    "EmailQueued",
    "EmailRecipient",
    "EmailSent",
    "EngineError",
    "Event",
    "EventBus",
    "ProviderRateLimits",
    "RateLimit",
    "ServerStateChanged",
    "SoftphoneLevel",
    "SoftphoneStateChanged",
    "SpeakingChanged",
    "SteeringInjected",
    "Subscription",
    "TierChanged",
    "ToolApprovalRequested",
    "ToolApprovalResolved",
    "ToolCompleted",
    "ToolProgressed",
    "ToolRejected",
    "ToolRequested",
    "ToolsChanged",
    "ToolsOmitted",
    "TranscriptAdded",
    "TurnOverBudget",
    "TurnStage",
    "TurnTimings",
    "UsageUpdated",
    "describe_event",
]

# Every event class named here (``__subclasses__`` would also hold the classes ``dataclass(slots=True)`` replaced).
for _cls in [c for c in list(globals().values()) if isinstance(c, type) and issubclass(c, Event)]:
    fast_frozen_init(_cls)

"""``AsteriskLink``: what the engine's telephony parts share of the Asterisk they work in.

Why it exists: the Stasis app, the operator's line (``engine.telephony.monitor``), each call's transfers
(``engine.telephony.transfer``) and the media connection (``engine.telephony.connect``) talk to the same ARI client
under the same settings, name what they create with the same ``ResourceIds`` (``engine.telephony.owned``), mark it
in the same set of the engine's own channels (whose events are not new callers) and start their background work with
the same ``spawn``. The Stasis app builds this once and hands it on, instead of each part taking those five one by
one and working out the default ids again. It is frozen: a reload that keeps the connection gives the app a new
link (``StasisApp.reconfigure``); a call's transfers keep the one of when the call began.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config.models import AsteriskConfig
from engine.core.tasks import Spawn
from engine.telephony.ari import AriClient
from engine.telephony.owned import ResourceIds


@dataclass(frozen=True)
class AsteriskLink:
    ari: AriClient
    config: AsteriskConfig
    ids: ResourceIds
    #: Channels the engine created itself (media, snoop, originated): their events are not new callers.
    own: set[str]
    spawn: Spawn

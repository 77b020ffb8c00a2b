"""Provider tool-call ids rendered from canonical ids (``tc_7``), so any provider can continue any history.

The stateless APIs only need the ids inside one request to agree (assistant call ↔ result), but each has its
own shape and limits: OpenAI call ids are ``call_…`` and at most 40 characters, Anthropic's are ``toolu_…`` and
match ``^[a-zA-Z0-9_-]+$``, Gemini's are free-form and optional. Rendering them deterministically from the
canonical id means the same call has the same id in every request of every provider, before and after a
provider switch or an apply-now restart; the provider's own id stays recorded in the canonical history
(``ToolCallItem.provider_ids``) and ``canonical_from`` reads a rendered id back.
"""

from __future__ import annotations

import re

from engine.providers.rendering.names import short_hash

PREFIX = {
    "openai_chat": "call_",
    "openai_responses": "call_",
    "openai_realtime": "call_",
    "ollama": "call_",
    "anthropic": "toolu_",
    "gemini": "",
    "gemini_live": "",
    "deepgram_agent": "fc_",
    "elevenlabs_agent": "",
}
MAX_LEN = 40
_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def provider_call_id(provider_type: str, canonical_id: str) -> str:
    """``tc_7`` → ``call_tc_7`` (OpenAI), ``toolu_tc_7`` (Anthropic), ``tc_7`` (Gemini) …"""
    safe = _SAFE.sub("_", canonical_id)
    out = PREFIX.get(provider_type, "") + safe
    if len(out) > MAX_LEN:
        keep = MAX_LEN - len(PREFIX.get(provider_type, "")) - 9
        out = PREFIX.get(provider_type, "") + safe[:keep] + "_" + short_hash(canonical_id, 8)
    return out


def canonical_from(provider_type: str, provider_id: str) -> str | None:
    """The canonical id a rendered id came from (None for ids the provider minted itself)."""
    prefix = PREFIX.get(provider_type, "")
    if provider_id.startswith(prefix):
        rest = provider_id[len(prefix) :]
        if re.fullmatch(r"tc_\d+", rest):
            return rest
    return None

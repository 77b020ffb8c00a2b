"""ElevenLabs Agents: the conversation socket's own messages, built and read in one place.

Why it exists: the adapter (elevenlabs_agent.py) holds the socket, the tool tasks and reconnects; what each
message looks like (reference/wire-formats.md §8.5, the SDK's ``conversation.py``) lives here: the
``conversation_initiation_client_data`` a conversation opens with (only the overrides the agent's
``platform_settings.overrides`` allow — ElevenLabs refuses the conversation otherwise), the audio formats of
``conversation_initiation_metadata``, the ``contextual_update`` that carries the conversation so far into a
reconnected one, and which server messages are read and deliberately not used.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from engine.providers.base import ToolCallRequest, ToolGateway
from engine.providers.rendering.names import NameMap
from engine.providers.textloop import result_text
from engine.realtime.elevenlabs_tools import allowed_overrides, override_allowed
from engine.realtime.session import PCMU_8K, AudioSpec, ProviderNotice
from engine.sessions.history import HistoryItem, Message
from engine.sessions.session import CallSession

log = logging.getLogger(__name__)

#: ElevenLabs' format names (``asr_input_format.py`` / ``tts_output_format.py``) that carry raw audio.
FORMATS: dict[str, AudioSpec] = {"ulaw_8000": PCMU_8K} | {
    f"pcm_{r}": AudioSpec("pcm16", r) for r in (8000, 16000, 22050, 24000, 44100, 48000)
}
DEFAULT_FORMAT = "pcm_16000"
#: Server messages read and deliberately not used (voice activity, the agent's internals, metadata).
QUIET = frozenset(
    {
        "vad_score",
        "agent_response_metadata",
        "context_usage",
        "asr_initiation_metadata",
        "tentative_user_transcript",
        "agent_chat_response_part",
        "mcp_connection_status",
        "agent_tool_response",
        "agent_tool_request",
        "agent_tool_response_full_payload",
        "guardrail_triggered",
        "agent_response_correction",
    }
)
#: Messages of the conversation so far carried into a reconnected conversation.
HISTORY_CONTEXT = 20


def audio_spec(name: Any, where: str) -> AudioSpec:
    spec = FORMATS.get(str(name or DEFAULT_FORMAT))
    if spec is None:
        known = ", ".join(FORMATS)
        raise ValueError(f"the agent's {where} audio format {name!r} is not raw audio the engine plays ({known})")
    return spec


class Metadata(NamedTuple):
    conversation_id: str
    input_spec: AudioSpec
    output_spec: AudioSpec


def read_metadata(msg: Mapping[str, Any]) -> Metadata:
    """``conversation_initiation_metadata``: the conversation id and the negotiated formats (ValueError when the
    agent is set to a format that is not raw audio, e.g. mp3)."""
    ev = msg.get("conversation_initiation_metadata_event")
    ev = ev if isinstance(ev, Mapping) else {}
    return Metadata(
        str(ev.get("conversation_id") or ""),
        audio_spec(ev.get("user_input_audio_format"), "input"),
        audio_spec(ev.get("agent_output_audio_format"), "output"),
    )


def initiation(
    agent: Mapping[str, Any],
    session: CallSession,
    *,
    instructions: str,
    greeting: str | None,
    greet: bool,
    voice: str | None,
) -> tuple[dict[str, Any], list[str]]:
    """The first client message and the overrides the agent does not allow (its own settings are used).

    ``greet`` False (a reconnect) asks for an empty first message, so the agent waits instead of greeting again.
    """
    allowed = allowed_overrides(agent)
    over: dict[str, Any] = {}
    skipped: list[str] = []
    if instructions:
        if override_allowed(allowed, "agent", "prompt", "prompt"):
            over["prompt"] = {"prompt": instructions}
        else:
            skipped.append("prompt")
    first = (greeting or "") if greet else ""
    if first or not greet:  # no context greeting on a first connect: the agent's own first message
        if override_allowed(allowed, "agent", "first_message"):
            over["first_message"] = first
        else:
            skipped.append("first_message")
    override: dict[str, Any] = {"agent": over} if over else {}
    if voice:
        if override_allowed(allowed, "tts", "voice_id"):
            override["tts"] = {"voice_id": voice}
        else:
            skipped.append("voice")
    dyn = {"call_id": session.call_id, "caller_name": session.caller_name, "caller_number": session.caller_number}
    msg: dict[str, Any] = {"type": "conversation_initiation_client_data"}
    if override:
        msg["conversation_config_override"] = override
    msg["dynamic_variables"] = {k: v for k, v in dyn.items() if v}
    return msg, skipped


def context_update(history: Sequence[HistoryItem]) -> dict[str, Any] | None:
    """A ``contextual_update`` with the conversation so far (None when nothing was said yet)."""
    lines = [
        f"{'Caller' if i.role == 'user' else 'Agent'}: {i.text}"
        for i in history
        if isinstance(i, Message) and i.role in ("user", "assistant")
    ][-HISTORY_CONTEXT:]
    if not lines:
        return None
    text = "This call continues an earlier conversation (the connection was renewed). So far:\n" + "\n".join(lines)
    return {"type": "contextual_update", "text": text}


def read_audio(ev: Mapping[str, Any]) -> tuple[int, bytes]:
    """An ``audio_event``: its ``event_id`` and the decoded audio (ValueError when it is not base64)."""
    try:
        return int(ev.get("event_id", 0)), base64.b64decode(str(ev.get("audio_base_64", "")), validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"audio_base_64 is not base64: {e}") from None


async def tool_result(
    gateway: ToolGateway, names: NameMap, tcid: str, call: Mapping[str, Any], provider: str
) -> dict[str, Any]:
    """Run one ``client_tool_call`` through the engine and build its ``client_tool_result`` (``tool_call_id``
    exactly as sent; ``is_error`` for every result that is not a success, a tool the call was not shown too)."""
    name = str(call.get("tool_name") or "")
    params = call.get("parameters")
    request = ToolCallRequest(names.exposed_name(name), params if isinstance(params, dict) else {}, provider_id=tcid)
    try:
        (result,) = await gateway.call_tools([request])
        text, is_error = result_text(result), result.status != "success"
    except Exception as e:  # the gateway failed: the agent still gets an answer and the call goes on
        log.exception("%s: tool call %s (%s) failed in the engine", provider, tcid, name)
        text, is_error = f"the tool failed in the engine: {type(e).__name__}", True
    return {"type": "client_tool_result", "tool_call_id": tcid, "result": text, "is_error": is_error}


def agent_action_notice(provider: str, kind: str, msg: Mapping[str, Any]) -> ProviderNotice:
    """A notice for what the agent did without the engine: ``dtmf_request`` (it wants keypad tones sent; the
    engine has no way to send tones into the call, so the operator is told) or ``mcp_tool_call`` (it ran a tool on
    its own MCP server; the engine did not run it), also logged. The SDK declares neither payload: read leniently."""
    body = msg.get(kind) if isinstance(msg.get(kind), Mapping) else msg.get(f"{kind}_event")
    body = body if isinstance(body, Mapping) else {}
    if kind == "dtmf_request":
        digits = next((body[k] for k in ("dtmf_tones", "digits", "dtmf", "tones") if isinstance(body.get(k), str)), "")
        what = f"the agent asks to send the keypad tones {digits[:40]!r}" if digits else "the agent asks to send tones"
        notice = ProviderNotice(f"{provider}: {what}; the engine cannot send tones on this call", code=kind)
    else:
        tool = str(body.get("tool_name") or body.get("name") or "a tool")[:80]
        state = f" ({str(body['state'])[:40]})" if body.get("state") else ""
        notice = ProviderNotice(
            f"{provider}: the agent called {tool} on its own MCP server{state}; not run by the engine", code=kind
        )
    log.warning("%s", notice.message)
    return notice

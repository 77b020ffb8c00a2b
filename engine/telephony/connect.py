"""Connecting a phone call's media: answer the caller, make the call's bridge and the AI's media channel, bridge them.

Why it exists apart from the Stasis app: this is the one place that asks Asterisk for a call's resources, under
the ids of ``engine.telephony.owned`` (so a later run can find them), for either media path: RTP
``externalMedia`` (Asterisk says where to send through ``UNICASTRTP_LOCAL_ADDRESS``/``PORT``) or chan_websocket
(the engine connects in to ``/media/<MEDIA_WEBSOCKET_CONNECTION_ID>``; Asterisk answers it only when the socket is
up). Either way the media channel is bridged only on its ``StasisStart``, which comes after Asterisk's reply
(``AriClient.entering``).
"""

from __future__ import annotations

from engine.config.models import AsteriskConfig
from engine.telephony.ari import AriClient, AriError
from engine.telephony.link import AsteriskLink
from engine.telephony.phone_call import PhoneCall
from engine.telephony.rtp import PortPool, RtpStream
from engine.telephony.ws_media import WsMedia, WsMediaError, media_url


async def connect_media(link: AsteriskLink, pool: PortPool, call: PhoneCall) -> None:
    """Answer the caller, make the call's bridge and media channel, and bridge the two once the media channel
    entered Stasis; the link's ``own`` learns the media channel."""
    ari, config, ids, own = link.ari, link.config, link.ids, link.own
    await ari.answer(call.channel_id)
    bridge_id = ids.make("call", call.channel_id)
    bridge = await ari.create_bridge(bridge_id, kind="mixing", name=f"ava {call.channel_id}")
    call.bridge_id = bridge["id"]
    media_id = ids.make("em", call.channel_id)
    own.add(media_id)
    what = "POST /channels/externalMedia"
    async with ari.entering(media_id, what) as entered:
        if config.media == "websocket":
            await _connect_ws_media(ari, config, call, media_id)
        else:
            call.stream = await RtpStream.bind(config.rtp_host, pool)
            media = await ari.external_media(f"{config.rtp_host}:{call.stream.port}", channel_id=media_id)
            call.media_channel_id = media["id"]
            variables = media.get("channelvars") or {}
            host, port = variables.get("UNICASTRTP_LOCAL_ADDRESS"), str(variables.get("UNICASTRTP_LOCAL_PORT", ""))
            if not host or not port.isdigit():
                raise AriError(what, "Asterisk did not say where to send RTP (UNICASTRTP_LOCAL_ADDRESS/PORT missing)")
            call.stream.set_remote(str(host), int(port))
        await entered.wait(config.request_timeout_s)
    await ari.add_to_bridge(call.bridge_id, [call.channel_id, media_id])


async def _connect_ws_media(ari: AriClient, config: AsteriskConfig, call: PhoneCall, media_id: str) -> None:
    """chan_websocket: ask for ``WebSocket/INCOMING`` and connect in (Asterisk answers it, and it enters Stasis,
    only once the socket is up)."""
    media = await ari.external_media(
        "", channel_id=media_id, encapsulation="none", transport="websocket", connection_type="server"
    )
    call.media_channel_id = media["id"]
    connection = str((media.get("channelvars") or {}).get("MEDIA_WEBSOCKET_CONNECTION_ID", ""))
    if not connection:
        raise AriError(
            "POST /channels/externalMedia",
            "Asterisk did not say which media WebSocket to connect to (MEDIA_WEBSOCKET_CONNECTION_ID missing)",
        )
    try:
        call.stream = await WsMedia.connect(media_url(config.ari_url, connection), timeout_s=config.request_timeout_s)
    except WsMediaError as e:
        raise AriError("media WebSocket", str(e)) from None

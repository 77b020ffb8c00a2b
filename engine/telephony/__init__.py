"""Telephony: Asterisk hands calls to the engine over ARI; media flows over RTP (externalMedia) or chan_websocket.

``ari`` is the REST + events client, ``rtp`` one call's media stream; the Stasis call lifecycle, the media
backends and the call-control tools build on them.
"""

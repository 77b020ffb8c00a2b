"""Realtime (speech-to-speech) calls, all in one place: the providers (OpenAI Realtime, Gemini Live, Deepgram Voice
Agent, ElevenLabs Agents) and what drives a call on them.

``session`` holds the audio-native interface every adapter implements, ``audio`` the format negotiation and
conversion, ``socket`` the bounded WebSocket they share; each adapter is a module of its own. ``calls`` starts a
realtime call for the call manager; ``call``, ``host``, ``relay``, ``input``, ``playout`` and ``asking`` are its
voice driver (the caller's audio in, the provider's audio out, tools' questions on the line).
"""

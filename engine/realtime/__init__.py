"""Speech-to-speech providers (OpenAI Realtime, Gemini Live, Deepgram Voice Agent, ElevenLabs Agents).

``session`` holds the audio-native interface every adapter implements, ``audio`` the format negotiation and
conversion, ``socket`` the bounded WebSocket they share; each adapter is a module of its own.
"""

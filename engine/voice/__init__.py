"""Local voice building blocks: PCM frames and codecs, audio backends, endpointing, STT and TTS.

Nothing here imports a device library at import time: ``device_backend`` loads sounddevice/PortAudio only when
a device backend is made, so the engine runs headless on machines without audio.
"""

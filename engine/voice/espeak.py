"""ctypes binding to libespeak-ng as shipped by the ``espeakng-loader`` wheel (library + voice data).

espeak-ng is a process-wide singleton C library: one voice, one set of parameters and one synth callback at a
time. ``Espeak.instance()`` loads and initialises it once; every call that touches its state holds one lock, so
callers in several threads are serialised. Synthesis runs in synchronous mode and hands audio to a Python
callback chunk by chunk (``buffer_ms`` each), which is what lets the TTS stream before a long text is finished.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.voice.audio import Int16Array

_AUDIO_OUTPUT_SYNCHRONOUS = 0x02
_ESPEAK_CHARS_UTF8 = 1
_ESPEAK_RATE = 1
_ESPEAK_VOLUME = 2
_ESPEAK_PITCH = 3
_PHONEME_SEPARATOR_SPACE = ord(" ") << 8  # bits 8-23 of phonememode: separator between phonemes

RATE_RANGE = (80, 450)  # words per minute
PITCH_RANGE = (0, 100)

_SynthCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


class EspeakUnavailable(RuntimeError):
    """libespeak-ng (from the espeakng-loader package) could not be loaded or initialised."""


class _Voice(ctypes.Structure):
    _fields_ = (
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_char_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    )


@dataclass(frozen=True, slots=True)
class VoiceInfo:
    name: str
    language: str
    identifier: str


def _load() -> tuple[ctypes.CDLL, str]:
    try:
        import espeakng_loader
    except ImportError as exc:
        raise EspeakUnavailable("the espeakng-loader package is not installed (pip install espeakng-loader)") from exc
    lib_path = espeakng_loader.get_library_path()
    try:
        lib = ctypes.CDLL(lib_path)
        data_path = espeakng_loader.get_data_path()
    except (OSError, RuntimeError) as exc:
        raise EspeakUnavailable(f"cannot load libespeak-ng from {lib_path}: {exc}") from exc
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetSynthCallback.restype = None
    lib.espeak_SetSynthCallback.argtypes = [_SynthCallback]
    lib.espeak_SetVoiceByName.restype = ctypes.c_int
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.restype = ctypes.c_int
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.restype = ctypes.c_int
    lib.espeak_Synth.argtypes = [
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
    lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int]
    lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_Voice))
    lib.espeak_ListVoices.argtypes = [ctypes.c_void_p]
    return lib, data_path


class Espeak:
    """The one espeak-ng instance of this process. Use ``Espeak.instance()``; all methods are thread-safe."""

    _instance: Espeak | None = None
    _instance_lock = threading.Lock()

    def __init__(self, buffer_ms: int = 100) -> None:
        self._lib, data_path = _load()
        rate = self._lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, buffer_ms, data_path.encode(), 0)
        if rate <= 0:
            raise EspeakUnavailable(f"espeak_Initialize failed (returned {rate}) with data path {data_path}")
        self.sample_rate: int = rate
        self.buffer_ms = buffer_ms
        self.lock = threading.RLock()
        self._on_audio: Callable[[Int16Array], bool] | None = None
        self._callback = _SynthCallback(self._dispatch)  # keep a reference: C holds only the pointer
        self._lib.espeak_SetSynthCallback(self._callback)

    @classmethod
    def instance(cls) -> Espeak:
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _dispatch(self, wav: ctypes._Pointer[ctypes.c_short], n: int, _events: int | None) -> int:
        if self._on_audio is None or not wav or n <= 0:
            return 0
        samples = np.ctypeslib.as_array(wav, shape=(n,)).astype(np.int16, copy=True)
        try:
            keep_going = self._on_audio(samples)
        except BaseException:  # never let an exception unwind through C; abort synthesis instead
            return 1
        return 0 if keep_going else 1

    def voices(self) -> list[VoiceInfo]:
        with self.lock:
            arr = self._lib.espeak_ListVoices(None)
            out: list[VoiceInfo] = []
            i = 0
            while arr[i]:
                v = arr[i].contents
                langs = (v.languages or b"\x00")[1:].split(b"\x00")[0]  # first byte is the priority
                out.append(
                    VoiceInfo(
                        name=(v.name or b"").decode(errors="replace"),
                        language=langs.decode(errors="replace"),
                        identifier=(v.identifier or b"").decode(errors="replace"),
                    )
                )
                i += 1
            return out

    def _configure(self, voice: str, rate: int, pitch: int) -> None:
        if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
            raise ValueError(f"espeak rate must be {RATE_RANGE[0]}..{RATE_RANGE[1]} words per minute, got {rate}")
        if not PITCH_RANGE[0] <= pitch <= PITCH_RANGE[1]:
            raise ValueError(f"espeak pitch must be {PITCH_RANGE[0]}..{PITCH_RANGE[1]}, got {pitch}")
        if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise ValueError(
                f"espeak voice {voice!r} not found; use a language code such as 'en-us' or 'en-gb', "
                "optionally with a variant ('en-us+f3')"
            )
        self._lib.espeak_SetParameter(_ESPEAK_RATE, rate, 0)
        self._lib.espeak_SetParameter(_ESPEAK_PITCH, pitch, 0)
        self._lib.espeak_SetParameter(_ESPEAK_VOLUME, 100, 0)

    def synth(
        self,
        text: str,
        on_audio: Callable[[Int16Array], bool],
        voice: str = "en-us",
        rate: int = 175,
        pitch: int = 50,
    ) -> None:
        """Synthesise ``text``, calling ``on_audio(samples)`` for each chunk (espeak's native rate).

        ``on_audio`` returns False to abort. Blocks until synthesis ends; holds the library lock throughout.
        """
        data = text.encode("utf-8")
        with self.lock:
            self._configure(voice, rate, pitch)
            self._on_audio = on_audio
            try:
                err = self._lib.espeak_Synth(data, len(data) + 1, 0, 0, 0, _ESPEAK_CHARS_UTF8, None, None)
            finally:
                self._on_audio = None
        if err not in (0, 1):  # 1 = EE_BUFFER_FULL is impossible in synchronous mode; anything else is real
            raise RuntimeError(f"espeak_Synth failed with error {err}")

    def phonemes(self, text: str, voice: str = "en-us") -> list[list[str]]:
        """espeak's phoneme mnemonics for ``text``: one list of phoneme tokens (stress marks kept) per word."""
        with self.lock:
            self._configure(voice, 175, 50)
            buf = ctypes.c_char_p(text.encode("utf-8"))
            ptr = ctypes.c_char_p(ctypes.cast(buf, ctypes.c_void_p).value)
            clauses: list[str] = []
            while ptr.value:
                out = self._lib.espeak_TextToPhonemes(ctypes.byref(ptr), _ESPEAK_CHARS_UTF8, _PHONEME_SEPARATOR_SPACE)
                if out is None:
                    break
                clauses.append(out.decode("utf-8", errors="replace"))
        words: list[list[str]] = []
        for clause in clauses:
            for word in clause.split("  "):
                tokens = word.split()
                if tokens:
                    words.append(tokens)
        return words

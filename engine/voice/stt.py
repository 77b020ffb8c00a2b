"""Speech to text with pocketsphinx 5: a grammar of the expected phrases first, the general model as fallback.

pocketsphinx's general English language model is weak on short commands (it hears "roll two dice with six sides"
as "oh it's the site"), but a small JSGF grammar built from the phrases the agent expects makes it exact. So:

* ``set_phrases(patterns)`` builds the grammar (see ``engine.voice.phrases`` for the pattern syntax) and makes
  sure every word has a pronunciation: the model's CMU dictionary, then the user dictionary, then espeak-ng
  phonemes mapped to ARPAbet; a word none of these can spell raises ``PronunciationError`` naming it.
* ``decode(audio)`` runs the grammar search. **Fallback rule**: the grammar result is accepted only when it is
  a whole sentence the phrases allow. pocketsphinx's grammar search returns nothing, an empty string, or a
  partial path (``"roll a"``) when the speech does not fit the grammar; in all those cases the utterance is
  decoded again with the general language model and that text is returned (``source="lm"``). pocketsphinx's
  Python scores are per-search normalised and not comparable across searches, so no score threshold is used.
  Known limit: speech outside the grammar that happens to fit a whole phrase acoustically is still accepted.
* ``transcribe(audio)`` is the async form: decoding runs in a worker thread, never on the event loop.

Audio is PCM16 mono; anything not at 16 kHz is resampled. The acoustic model was trained on real recordings,
which always have a noise floor; perfectly clean audio (synthetic speech, digital silence between words) makes
the decoder swallow words into silence (measured: 13/24 phrases right for espeak's default voice without, 24/24
with). So before decoding a deterministic Gaussian noise floor at ``noise_floor_dbfs`` (default -60 dBFS, below
any real microphone's own floor) is mixed in; ``None`` turns that off. pocketsphinx's dither is on as well.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from engine.voice.audio import AudioFrame
from engine.voice.g2p import PronunciationError, espeak_pronunciation, load_user_dictionary
from engine.voice.phrases import PhraseSet, normalize_text

SAMPLE_RATE = 16000
_GRAMMAR = "expected"
_LM = "general"


class SttUnavailable(RuntimeError):
    """pocketsphinx or its English model is missing."""


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str  # normalised words ("" when nothing was recognised)
    source: Literal["grammar", "lm", "none"]
    grammar_text: str | None  # what the grammar search said, accepted or not (None without a grammar)
    duration: float  # seconds of audio decoded
    cpu_s: float = 0.0  # CPU seconds the decoding took (``transcribe``; the offline pipeline's usage)


class Recognizer:
    """One pocketsphinx decoder; calls are serialised by a lock, so one instance may serve several tasks."""

    def __init__(
        self,
        *,
        user_dictionary: str | Path | None = None,
        use_espeak_g2p: bool = True,
        fallback: bool = True,
        model_dir: str | Path | None = None,
        noise_floor_dbfs: float | None = -60.0,
    ) -> None:
        try:
            import pocketsphinx
        except ImportError as exc:
            raise SttUnavailable("pocketsphinx is not installed (pip install pocketsphinx)") from exc
        base = Path(model_dir) if model_dir else Path(pocketsphinx.get_model_path()) / "en-us"
        self._hmm = base / "en-us"
        self._dict = base / "cmudict-en-us.dict"
        self._lm_path = base / "en-us.lm.bin"
        for p in (self._hmm, self._dict, self._lm_path):
            if not p.exists():
                raise SttUnavailable(f"pocketsphinx English model file missing: {p}")
        config = pocketsphinx.Config(
            hmm=str(self._hmm), dict=str(self._dict), lm=None, loglevel="FATAL", dither=True, seed=1
        )
        self._decoder = pocketsphinx.Decoder(config)
        self._lock = threading.Lock()
        self._lm_loaded = False
        self.fallback = fallback
        self.noise_floor_dbfs = noise_floor_dbfs
        self.use_espeak_g2p = use_espeak_g2p
        self.user_words: dict[str, list[str]] = load_user_dictionary(user_dictionary) if user_dictionary else {}
        self.phrases: PhraseSet | None = None
        self.added_words: dict[str, list[str]] = {}

    # -- dictionary -------------------------------------------------------------------------------------------
    def pronunciation(self, word: str) -> list[str] | None:
        with self._lock:
            phones = self._decoder.lookup_word(word)
        return phones.split() if phones else None

    def add_word(self, word: str, phones: list[str]) -> None:
        with self._lock:
            self._add_word_locked(word, phones)

    def _add_word_locked(self, word: str, phones: list[str]) -> None:
        try:
            self._decoder.add_word(word, " ".join(phones), True)
        except RuntimeError as exc:
            raise PronunciationError(f"pocketsphinx rejected the pronunciation {phones} for {word!r}") from exc
        self.added_words[word] = list(phones)

    def _resolve_locked(self, word: str) -> None:
        if self._decoder.lookup_word(word) is not None:
            return
        phones = self.user_words.get(word)
        if phones is None:
            if not self.use_espeak_g2p:
                raise PronunciationError(
                    f"the word {word!r} is not in the recogniser's dictionary; add it to a user dictionary"
                )
            phones = espeak_pronunciation(word)
        self._add_word_locked(word, phones)

    # -- grammar ----------------------------------------------------------------------------------------------
    def set_phrases(self, patterns: list[str]) -> PhraseSet:
        """Build and activate the grammar for ``patterns``; returns the parsed phrases."""
        phrases = PhraseSet(patterns)
        with self._lock:
            for word in sorted(phrases.words):
                self._resolve_locked(word)
            self._decoder.add_jsgf_string(_GRAMMAR, phrases.jsgf(_GRAMMAR))
            self.phrases = phrases
        return phrases

    def clear_phrases(self) -> None:
        """Forget the grammar: every utterance goes to the general language model."""
        with self._lock:
            self.phrases = None

    # -- decoding ---------------------------------------------------------------------------------------------
    def _run_locked(self, search: str, pcm: bytes) -> str | None:
        self._decoder.activate_search(search)
        self._decoder.start_utt()
        self._decoder.process_raw(pcm, full_utt=True)
        self._decoder.end_utt()
        hyp = self._decoder.hyp()
        return None if hyp is None else hyp.hypstr

    def _general_locked(self, pcm: bytes) -> str:
        if not self._lm_loaded:
            self._decoder.add_lm_file(_LM, str(self._lm_path))
            self._lm_loaded = True
        return normalize_text(self._run_locked(_LM, pcm) or "")

    def _prepare(self, audio: AudioFrame) -> bytes:
        samples = audio.resampled(SAMPLE_RATE).samples
        if self.noise_floor_dbfs is None or samples.size == 0:
            return samples.astype("<i2").tobytes()
        sigma = 32768.0 * 10 ** (self.noise_floor_dbfs / 20.0)
        noise = np.random.default_rng(samples.size).normal(0.0, sigma, samples.size)
        mixed = np.clip(samples.astype(np.float64) + noise, -32768, 32767)
        return mixed.astype("<i2").tobytes()

    def decode(self, audio: AudioFrame) -> Transcript:
        """Recognise one utterance (blocking; see ``transcribe`` for the async form)."""
        if not isinstance(audio, AudioFrame):
            raise TypeError(f"decode needs an AudioFrame, got {type(audio).__name__}")
        pcm = self._prepare(audio)
        with self._lock:
            grammar_text: str | None = None
            if self.phrases is not None:
                grammar_text = self._run_locked(_GRAMMAR, pcm)
                if grammar_text is not None and grammar_text in self.phrases:
                    return Transcript(grammar_text, "grammar", grammar_text, audio.duration)
                if not self.fallback:
                    return Transcript("", "none", grammar_text, audio.duration)
            text = self._general_locked(pcm)
        return Transcript(text, "lm" if text else "none", grammar_text, audio.duration)

    async def transcribe(self, audio: AudioFrame) -> Transcript:
        """``decode`` in a worker thread, so the event loop never waits on pocketsphinx; with its CPU seconds."""
        return await asyncio.to_thread(self._timed_decode, audio)

    def _timed_decode(self, audio: AudioFrame) -> Transcript:
        start = time.thread_time()  # this worker thread's own CPU time: other calls' work is not counted
        transcript = self.decode(audio)
        return dataclasses.replace(transcript, cpu_s=time.thread_time() - start)


def default_model_dir() -> str:
    """Where pocketsphinx keeps its bundled English model."""
    import pocketsphinx

    return os.path.join(pocketsphinx.get_model_path(), "en-us")

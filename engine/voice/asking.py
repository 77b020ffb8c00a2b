"""A voice call's side of a tool's question to the caller (engine.elicitation): hear the answer mid-turn.

Why it exists: the voice driver handles one utterance at a time, and while a turn runs (its tool is waiting for
the caller's answer) the next utterance would queue behind it — so the caller could never answer. While the
engine waits for the caller (``elicitation.waiting`` with ``who: caller``) this takes the next utterance instead:
it is transcribed against a grammar of the expected answers (``expect``: numbers in range, yes/no, the enum's
choices, the refusals "never mind", "no thanks"; the general model as fallback) and handed to
``engine.caller_answered``, never to a new turn. Free text and a spelled address come with no grammar: the general
model alone listens (open dictation, ``engine.elicitation.dialogue``), not the call's own grammar.

When the caller's audio ends (a file ran out) every question hears silence, an answer not understood: the
question is declined after its attempts instead of waiting for its timeout. On file runs the ``Pacer`` stops the
input while the agent thinks; while the engine listens for the answer the input runs on (``Pacer.listening``),
and stops again while the answer is understood. Slow-tool announcements are held back while a question is open
on the call ("one moment" would talk over the question). A realtime call (engine.realtime.asking) gives a
factory instead of a recognizer: pocketsphinx is built (in a worker thread) only once a question opens on it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from engine.events import ElicitationRequested, ElicitationResolved, ElicitationWaiting
from engine.voice.g2p import PronunciationError
from engine.voice.pacing import Pacer
from engine.voice.phrases import PhraseError
from engine.voice.stt import Recognizer
from engine.voice.vad import Utterance

log = logging.getLogger(__name__)


class CallerEar(Protocol):
    """Where a call hands the caller's words while a tool's question waits for them (a ``VoiceHost`` is one)."""

    def caller_answered(self, call_id: str, text: str) -> bool: ...


class CallerQuestions:
    def __init__(
        self,
        engine: CallerEar,
        recognizer: Recognizer | Callable[[], Recognizer],
        pacer: Pacer,
        call_id: Callable[[], str | None],
        phrases: list[str] | None,
    ) -> None:
        self.engine, self.pacer, self._call_id = engine, pacer, call_id
        self._recognizer = recognizer
        self._building = threading.Lock()
        self._phrases = phrases
        #: Questions open on this call (requested for the caller, not yet resolved).
        self.open: set[str] = set()
        #: The answers the engine now listens for (None: it is not listening).
        self.expect: list[str] | None = None
        self.heard: list[str] = []
        self._input_ended = False
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def recognizer(self) -> Recognizer:
        """The call's recognizer (built here on first use when a factory was given: call from a worker thread)."""
        with self._building:
            if not isinstance(self._recognizer, Recognizer):
                self._recognizer = self._recognizer()
            return self._recognizer

    @property
    def listening(self) -> bool:
        return self.expect is not None

    def on_event(self, ev: Any) -> None:
        if isinstance(ev, ElicitationRequested) and ev.ask == "caller":
            self.open.add(ev.elicitation_id)
        elif isinstance(ev, ElicitationWaiting) and ev.who == "caller":
            self.expect = list(ev.expect)
            self.pacer.listening = True
            self.pacer.changed()
            if self._input_ended:
                self._silence()
        elif isinstance(ev, ElicitationResolved):
            self.open.discard(ev.elicitation_id)
            if not self.open:
                self._stop_listening()

    def input_ended(self) -> None:
        """The caller's audio ended (a file ran out): nothing more will be said, so every question hears silence."""
        self._input_ended = True
        if self.listening:
            self._silence()

    def _silence(self) -> None:
        self._stop_listening()
        call_id = self._call_id()
        if call_id is not None:
            self.engine.caller_answered(call_id, "")

    def _stop_listening(self) -> None:
        self.expect = None
        self.pacer.listening = False
        self.pacer.changed()

    def take(self, utt: Utterance) -> None:
        """The caller's next utterance: the answer to the question the engine listens for."""
        expect = self.expect or []
        self._stop_listening()
        self.pacer.add_busy(1)  # the file's clock stops while the answer is understood
        task = asyncio.create_task(self._answer(utt, expect), name=f"voice:{self._call_id()}:answer")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, utt: Utterance, expect: list[str]) -> None:
        try:
            try:
                text = await asyncio.to_thread(self._transcribe, utt, expect)
            except Exception as e:  # no recognizer (pocketsphinx missing) or a failed decode: not understood
                log.warning("the caller's answer could not be transcribed: %s: %s", type(e).__name__, e)
                text = ""
            self.heard.append(text)
            call_id = self._call_id()
            if call_id is not None and not self.engine.caller_answered(call_id, text):
                log.info("answer %r on %s came after the question ended", text, call_id)
        finally:
            self.pacer.add_busy(-1)

    def _transcribe(self, utt: Utterance, expect: list[str]) -> str:
        """Decode against the expected answers, then put the call's own grammar back."""
        try:
            if expect:
                self.recognizer.set_phrases(expect)
            else:  # open dictation (a spelled address): the general model, not the call's own grammar
                self.recognizer.clear_phrases()
            return self.recognizer.decode(utt.audio).text
        except (PhraseError, PronunciationError) as e:
            log.warning("the expected answers are not a grammar (%s): general model", e)
            self.recognizer.clear_phrases()
            return self.recognizer.decode(utt.audio).text
        finally:
            if self._phrases:
                self.recognizer.set_phrases(self._phrases)
            else:
                self.recognizer.clear_phrases()

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

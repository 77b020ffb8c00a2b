"""The elicitation desk: a tool's mid-call question (MCP elicitation) answered by the caller, the operator, or no one.

Why it exists: an MCP server may stop in the middle of a ``tools/call`` and ask for input (a 2025-era
``elicitation/create`` request, or a 2026-07-28 ``InputRequiredResult``; the SDK's one ``elicitation_callback``
serves both). The engine places the question on the call whose tool asked (``engine.elicitation.route``) and
follows that call's context: ``contexts.<name>.elicitation``:

* ``decline`` (the default): the server hears "decline" at once;
* ``operator``: it waits in a queue like the approval queue (``pending``, ``answer``) for the console's form,
  declined at once when no operator is attached;
* ``caller``: each field is asked on the call (``CallerVoice``) by its own words and type
  (``engine.elicitation.dialogue``), the caller's next utterance parsed into it (``engine.elicitation.answers``);
  the answers are read back together and a yes accepts them, typed and checked against the form; an answer not
  understood ``attempts`` times, or ``attempts`` read-backs refused → decline; "never mind" cancels and "no
  thanks" declines at any question. Only the required fields are asked (all of them when none is); an e-mail
  address is spelled and read back spelled (``engine.email.spoken``); a required URI or date-time cannot be
  spelled by voice and declines the question with a spoken reason. URL mode declines with a spoken reason, or
  with ``url: email`` the link is e-mailed to the caller (``engine.elicitation.links``) and the server told
  accept.

An accepted form gets the schema's ``default`` for each field it leaves out (``engine.elicitation.defaults``,
SEP-1034); with ``accept_defaults`` set (``ava-engine mcp call --accept-defaults``) every form is answered so.
Every question is checked first (``engine.elicitation.schema``: flat primitive forms only; anything else is
declined with a message naming the server and tool), the tool's own timeout stops while the question waits, and
the whole question is bounded by ``timeout_ms`` (then declined). Each one publishes ``elicitation.requested``,
``elicitation.waiting`` (who is being waited for) and exactly one ``elicitation.resolved``. A link shows whole in
``elicitation.requested`` only when it is for the operator (their dialog shows it); otherwise everything after its
host is masked, since a link may carry a sign-in token.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from contextlib import nullcontext
from datetime import date
from typing import Any

from prometheus_client import Counter

from engine.config.models import Settings
from engine.core.metrics import Metrics
from engine.elicitation import answers, dialogue
from engine.elicitation.defaults import accepted, answer_by_defaults
from engine.elicitation.links import ADDRESS_FIELD, LinkMail, LinkSender, masked_url
from engine.elicitation.links import Declined as _Declined
from engine.elicitation.pending import Ask, CallerVoice, ElicitationError, PendingElicitation, settle
from engine.elicitation.route import Asker
from engine.elicitation.schema import FormField, SchemaError, form_fields
from engine.elicitation.wire import Question, Reply, question, reply
from engine.events import EventBus, TranscriptAdded
from engine.events.elicitation import ElicitationRequested, ElicitationResolved, ElicitationWaiting
from engine.redaction.redactor import Redactor

log = logging.getLogger(__name__)


#: String formats a caller cannot reliably spell out by voice: a required one declines the question for the caller.
VOICELESS = ("uri", "date-time")
#: What the caller hears when the question is given up.
GIVE_UP = "I'm sorry, I couldn't get that, so I'll carry on without it."
#: What the caller hears after cancelling or declining a question by voice.
REFUSED = "All right, I'll carry on without it."


class ElicitationDesk:
    def __init__(
        self,
        bus: EventBus,
        metrics: Metrics,
        settings: Callable[[], Settings],
        redact: Redactor,
        voice: CallerVoice | None = None,
        today: Callable[[], date] = date.today,
        mail: LinkMail | None = None,
    ) -> None:
        self.bus, self._settings, self._redact, self.voice, self._today = bus, settings, redact, voice, today
        #: URL-mode questions e-mailed to the caller (``elicitation.url: email``), through ``mail``.
        self.links = LinkSender(mail)
        #: Every question is answered by the operator with its form's defaults, whatever the context says.
        self.accept_defaults = False
        self._ids = itertools.count(1)
        self._operators: dict[int, str] = {}
        self._keys = itertools.count(1)
        self._waiting: dict[str, Ask] = {}
        self._listening: dict[str, asyncio.Future[str]] = {}
        self._outcomes = Counter(
            "ai_agent_elicitations",
            "Questions MCP tools asked mid-call, by who answered and how.",
            ["ask", "action"],
            registry=metrics.registry,
        )

    # ---------------------------------------------------------------------------------------- operator side

    def attach(self, name: str) -> Callable[[], None]:
        """An operator (the console) can answer; returns the detach function (what waits is then declined)."""
        key = next(self._keys)
        self._operators[key] = name

        def detach() -> None:
            if self._operators.pop(key, None) is not None and not self._operators:
                for a in list(self._waiting.values()):
                    settle(a.future, ("decline", {}, f"the operator ({name}) left"))

        return detach

    def pending(self) -> list[PendingElicitation]:
        return [a.pending for a in self._waiting.values()]

    def answer(self, elicitation_id: str, action: str, content: dict[str, Any] | None = None) -> None:
        """The operator's answer: ``accept`` with ``content`` (checked against the form), ``decline`` or ``cancel``."""
        a = self._waiting.get(elicitation_id)
        if a is None or a.future.done():
            raise ElicitationError(f"no pending question {elicitation_id!r}")
        if action not in ("accept", "decline", "cancel"):
            raise ElicitationError(f"unknown answer {action!r} (accept, decline or cancel)")
        checked: dict[str, Any] = {}
        if action == "accept" and a.pending.mode == "form":
            try:
                who = f"server {a.pending.server!r}, tool {a.pending.tool!r}"
                checked = accepted(a.pending.fields, content or {}, who)
            except SchemaError as e:
                raise ElicitationError(str(e)) from None
        settle(a.future, (action, checked, ""))

    def call_ended(self, session: Any) -> None:
        """The call-end hook: what waits on that call ends with it (a 2025-era question runs on the SDK's own
        task, which the end of the call's turn does not cancel)."""
        self.links.call_ended(session.call_id)
        f = self._listening.pop(session.call_id, None)
        if f is not None and not f.done():
            f.set_exception(_Declined("engine", "the call ended"))
        for a in list(self._waiting.values()):
            if a.pending.call_id == session.call_id:
                settle(a.future, ("cancel", {}, "the call ended"))

    # ---------------------------------------------------------------------------------------- caller side

    def listening(self, call_id: str) -> bool:
        """Whether the caller's next words on ``call_id`` answer a question (not a new turn)."""
        f = self._listening.get(call_id)
        return f is not None and not f.done()

    def hear(self, call_id: str, text: str) -> bool:
        """The caller said ``text`` on ``call_id``; True when it answered a question waiting for it."""
        f = self._listening.get(call_id)
        if f is None or f.done():
            return False
        f.set_result(text)
        if text:
            self.bus.publish(TranscriptAdded(call_id=call_id, role="user", text=text))
        return True

    # ---------------------------------------------------------------------------------------- the question

    async def elicit(self, server: str, asker: Asker | None, in_flight: int, params: Question) -> Reply:
        """Answer one question from ``server``; ``asker`` is the call it belongs to (None: it cannot be placed)."""
        eid = f"el-{next(self._ids)}"
        url, schema = question(params)
        mode = "url" if url is not None else "form"
        ctx = asker.ctx if asker is not None else None
        session = ctx.session if ctx is not None else None
        cfg = self._settings().contexts.get(session.context) if session is not None else None
        ask = "operator" if self.accept_defaults else cfg.elicitation.ask if cfg is not None else "decline"
        timeout = (cfg.elicitation.timeout_ms if cfg is not None else 30_000) / 1000
        call_id = session.call_id if session is not None else ""
        exposed = asker.exposed_name if asker is not None else ""
        tool = asker.tool if asker is not None else "?"
        now = time.time()
        self.bus.publish(
            ElicitationRequested(
                elicitation_id=eid,
                call_id=call_id,
                tool_call_id=ctx.tool_call_id if ctx else "",
                exposed_name=exposed,
                server=server,
                tool=tool,
                ask=ask,
                mode=mode,
                message=self._redact(params.message),
                schema=self._redact.value(schema),
                url=None if url is None else self._redact(url) if ask == "operator" else masked_url(url),
                timeout_s=timeout,
                deadline=now + timeout,
            )
        )
        who = f"server {server!r}, tool {tool!r}"
        action, by, reason = "decline", "policy", ""
        content: dict[str, Any] = {}
        try:
            if asker is None:
                many = f"{in_flight} calls are in flight on it" if in_flight else "no tool call is waiting on it"
                raise _Declined("engine", f"{who}: the question cannot be placed on a call ({many})")
            if ctx is not None and ctx.is_probe:
                raise _Declined("engine", f"{who}: a calibration probe answers no questions")
            fields: list[FormField] = []
            if mode == "form":
                try:
                    fields = form_fields(schema)
                except SchemaError as e:
                    raise _Declined("engine", f"{who} asked with a form that cannot be shown: {e}") from None
            if self.accept_defaults:
                action, by, content = "accept", "operator", answer_by_defaults(who, url, fields)
                reason = "answered with the form's defaults"
            elif ask == "decline":
                raise _Declined("policy", f"the context {session.context if session else '?'!r} declines questions")
            else:
                hold = ctx.extras.get("hold") if ctx is not None else None
                with hold() if callable(hold) else nullcontext():
                    try:
                        async with asyncio.timeout(timeout):
                            if ask == "operator":
                                pending = PendingElicitation(
                                    eid,
                                    call_id,
                                    ctx.tool_call_id if ctx else "",
                                    server,
                                    tool,
                                    exposed,
                                    self._redact(params.message),
                                    mode,
                                    self._redact.value(schema),
                                    url,
                                    now + timeout,
                                    tuple(fields),
                                )
                                action, content, reason = await self._operator(pending)
                                by = "operator"
                            else:
                                by = "caller"
                                try:
                                    action, content = await self._caller(eid, params.message, fields, url, ctx, who)
                                except dialogue.Refused as r:
                                    action, reason = r.action, str(r)
                                    if self.voice is not None:
                                        await self.voice.say(call_id, REFUSED)
                    except TimeoutError:
                        raise _Declined("timeout", f"no answer within {timeout:g} seconds") from None
        except _Declined as d:
            action, content, by, reason = "decline", {}, d.by, d.reason
            if d.by in ("engine", "timeout"):
                log.warning("elicitation %s declined: %s", eid, d.reason)
            if ask == "caller" and d.by in ("timeout", "caller") and self.voice is not None and call_id:
                await self.voice.say(call_id, GIVE_UP)
        except asyncio.CancelledError:
            self._resolved(eid, call_id, ctx, exposed, ask, "cancel", "engine", "the call or its turn ended", {})
            raise
        self._resolved(eid, call_id, ctx, exposed, ask, action, by, reason, content)
        return reply(action, content, mode)

    def _resolved(
        self,
        eid: str,
        call_id: str,
        ctx: Any,
        exposed: str,
        ask: str,
        action: str,
        by: str,
        reason: str,
        content: dict[str, Any],
    ) -> None:
        self._outcomes.labels(ask, action).inc()
        self.bus.publish(
            ElicitationResolved(
                elicitation_id=eid,
                call_id=call_id,
                tool_call_id=ctx.tool_call_id if ctx else "",
                exposed_name=exposed,
                action=action,
                by=by,
                reason=self._redact(reason),
                content=self._redact.value(content),
            )
        )

    async def _operator(self, pending: PendingElicitation) -> tuple[str, dict[str, Any], str]:
        if not self._operators:
            raise _Declined("engine", "no operator is attached to answer it")
        a = Ask(pending)
        self._waiting[pending.elicitation_id] = a
        self.bus.publish(
            ElicitationWaiting(
                elicitation_id=pending.elicitation_id,
                call_id=pending.call_id,
                tool_call_id=pending.tool_call_id,
                who="operator",
                prompt=pending.message,
            )
        )
        try:
            return await asyncio.shield(a.future)
        finally:
            settle(a.future, ("cancel", {}, "no longer waited for"))
            self._waiting.pop(pending.elicitation_id, None)

    async def _caller(
        self, eid: str, message: str, fields: list[FormField], url: str | None, ctx: Any, who: str
    ) -> tuple[str, dict[str, Any]]:
        voice = self.voice
        call_id = ctx.session.call_id if ctx is not None and ctx.session is not None else ""
        if voice is None or not call_id:
            raise _Declined("engine", "there is no caller to ask (not on a call)")
        cfg = self._settings().contexts[ctx.session.context].elicitation
        if url is not None and cfg.url == "email":
            where = (call_id, ctx.tool_call_id)

            async def say(text: str) -> bool:
                return await voice.say(call_id, text)

            async def ask_address(prompt: str) -> str:
                got = await self._form(eid, where, "", [ADDRESS_FIELD], cfg.attempts, first=prompt)
                return str(got[ADDRESS_FIELD.name])

            await self.links.send(cfg, ctx.session, self._redact(message), url, say, ask_address)
            return "accept", {}
        if url is not None:
            await voice.say(call_id, f"{message} I can't open a web page on this call, so I'll skip that.")
            raise _Declined("policy", "a link cannot be opened on a voice call")
        asked = [f for f in fields if f.required] or fields  # the optional ones get their defaults
        unsayable = next((f for f in asked if f.format in VOICELESS), None)
        if unsayable is not None:
            await voice.say(call_id, f"{message} I can't take that on the phone, so I'll skip it.")
            raise _Declined("policy", f"{unsayable.label!r} ({unsayable.format}) cannot be answered by voice")
        content = await self._form(eid, (call_id, ctx.tool_call_id), message, asked, cfg.attempts)
        try:
            return "accept", accepted(fields, content, who)
        except SchemaError as e:  # the parser keeps to each field, so this is the engine's own mistake
            raise _Declined("engine", f"the caller's answers do not fit the form: {e}") from None

    async def _form(
        self,
        eid: str,
        where: tuple[str, str],
        message: str,
        asked: list[FormField],
        attempts: int,
        first: str | None = None,
    ) -> dict[str, Any]:
        """Ask each field in turn, read the answers back, and return them on a yes (typed, by field name); a no
        asks again, ``attempts`` rounds at most. ``first``: the opening question, when not the form's own."""
        today = self._today()
        for round_ in range(1, attempts + 1):
            answered: list[tuple[FormField, Any, str]] = []
            for i, f in enumerate(asked):
                prompt = first if first is not None and i == 0 else dialogue.question(message, f, i == 0)
                if round_ > 1 and i == 0:
                    prompt = f"Sorry, let's try again. {prompt}"
                answered.append(await self._field(eid, where, prompt, f, attempts, today))
            if all(f.kind == "boolean" for f in asked):  # a yes/no is its own confirmation
                return {f.name: value for f, value, _ in answered}
            heard = await self._listen(eid, where, dialogue.read_back(answered), dialogue.phrases(None))
            dialogue.raise_if_refused(None, heard)
            if answers.yes_no(heard):
                return {f.name: value for f, value, _ in answered}
        raise _Declined("caller", f"the caller did not confirm the answers {attempts} times")

    async def _field(
        self, eid: str, where: tuple[str, str], prompt: str, f: FormField, attempts: int, today: date
    ) -> tuple[FormField, Any, str]:
        """One field's answer: (field, typed value, what was heard); a refusal or ``attempts`` misses end it."""
        for _ in range(attempts):
            heard = await self._listen(eid, where, prompt, dialogue.phrases(f))
            dialogue.raise_if_refused(f, heard)
            value = answers.parse(f, heard, today)
            if value is not None:
                return f, value, heard
            prompt = f"Sorry, let's try again. {dialogue.question('', f, False)}"
        raise _Declined("caller", f"the caller's answer to {f.label!r} was not understood {attempts} times")

    async def _listen(self, eid: str, where: tuple[str, str], prompt: str, expect: list[str]) -> str:
        """Say ``prompt`` on the call and wait for the caller's next words (``hear``); ``where``: (call, tool call)."""
        assert self.voice is not None
        call_id, tool_call_id = where
        if not await self.voice.say(call_id, prompt):
            raise _Declined("engine", "this call has no voice to ask with (a realtime call without a voice driver)")
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._listening[call_id] = future
        self.bus.publish(
            ElicitationWaiting(
                elicitation_id=eid,
                call_id=call_id,
                tool_call_id=tool_call_id,
                who="caller",
                prompt=prompt,
                expect=expect,
            )
        )
        try:
            return await future
        finally:
            if self._listening.get(call_id) is future:
                del self._listening[call_id]

"""Every engine event as one sentence, for people: the console's event log and ``ava-engine call``'s text output.

Why it exists: the JSON lines are for scripts; an operator reading the log needs "c1: nobody approved dice in time,
so it was not run." rather than ``outcome=timed_out by=timeout``. One renderer for every consumer, so the console and
the CLI never word an event differently, and an event type added later still reads as words (its type spelled out),
never as ``key=value`` pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events.catalog import (
    AnnouncementPlayed,
    AnnouncementRequested,
    CallEnded,
    CallMonitorChanged,
    CallStarted,
    CallTransferAnswered,
    CallTransferCancelled,
    CallTransferFailed,
    CallTransferStarted,
    ConfigReloaded,
    EngineError,
    Event,
    ProviderRateLimits,
    ServerStateChanged,
    SoftphoneLevel,
    SoftphoneStateChanged,
    SteeringInjected,
    TierChanged,
    ToolApprovalRequested,
    ToolApprovalResolved,
    ToolCompleted,
    ToolProgressed,
    ToolRejected,
    ToolRequested,
    ToolsChanged,
    ToolsOmitted,
    TranscriptAdded,
    TurnOverBudget,
)
from engine.events.elicitation import ElicitationRequested, ElicitationResolved, ElicitationWaiting
from engine.events.email import EmailFailed, EmailQueued, EmailSent
from engine.events.turns import SpeakingChanged, TurnTimings
from engine.events.usage import BudgetAlert, CallUsage, UsageUpdated


def describe_event(ev: Event, *, with_call: bool = True) -> str:
    """``ev`` as one sentence. ``with_call``: start with the call's id (the console's log mixes calls; a CLI call
    prints one call, so it leaves the id out)."""
    render = _RENDERERS.get(type(ev).type)
    text = render(ev) if render is not None else _spelled_out(ev)
    call_id = getattr(ev, "call_id", None)
    if with_call and isinstance(call_id, str) and call_id:
        return f"{call_id}: {text}"
    first = text.split(" ", 1)[0]
    if any(c in first for c in "_-.") or any(c.isdigit() for c in first):
        return text  # an identifier (an exposed tool name) keeps its spelling
    return text[:1].upper() + text[1:]


def _spelled_out(ev: Event) -> str:
    """An event type this module does not know yet: its dotted type as words."""
    return ev.type.replace(".", " ").replace("_", " ") + "."


def _ms(value: float) -> str:
    return f"{value:.0f} ms"


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def _words(token: str) -> str:
    return token.replace("_", " ")


def _because(reason: str) -> str:
    return f": {reason}" if reason else ""


def _call_started(ev: CallStarted) -> str:
    caller = ev.caller_name or ev.caller_number or "unknown"
    return (
        f"{ev.direction} call started in context {ev.context} with provider {ev.provider}, "
        f"caller {caller}, tier {ev.tier.upper()}."
    )


def _call_ended(ev: CallEnded) -> str:
    return f"call ended after {_seconds(ev.duration_s)}{_because(_words(ev.reason))}."


def _usage(ev: CallUsage) -> str:
    u = ev.usage if not ev.usage.empty else None
    tin, tout = (u.input_tokens, u.output_tokens) if u else (ev.input_tokens, ev.output_tokens)
    audio_in, audio_out = (u.input_audio_s, u.output_audio_s) if u else (ev.input_audio_s, ev.output_audio_s)
    audio = f", with {_seconds(audio_in)} of audio in and {_seconds(audio_out)} out" if audio_in or audio_out else ""
    cost = f" and cost ${ev.cost:.4f}" if ev.priced else ""
    return f"{ev.provider} used {tin} tokens in and {tout} out{audio}{cost}."


def _usage_updated(ev: UsageUpdated) -> str:
    cost = f", ${ev.cost:.4f} (call ${ev.total_cost:.4f})" if ev.priced else ""
    return f"turn {ev.turn} used {ev.usage.input_tokens} tokens in and {ev.usage.output_tokens} out{cost}."


def _budget(ev: BudgetAlert) -> str:
    limits = " and ".join(
        x for x in (f"${ev.max_cost:g}" if ev.max_cost else "", f"{ev.max_tokens} tokens" if ev.max_tokens else "") if x
    )
    then = {"wrap_up": ": the agent wraps up", "ask_operator": ": the operator decides"}.get(ev.action or "", "")
    return f"the call has used {ev.fraction:.0%} of its budget ({limits}){then}."


_ROLES = {"user": "the caller", "assistant": "the agent", "operator": "the operator", "system": "the system"}


def _transcript(ev: TranscriptAdded) -> str:
    return f"{_ROLES.get(ev.role, ev.role)} said: {ev.text}"


def _requested(ev: ToolRequested) -> str:
    return f"asked for {ev.exposed_name}{' (a probe)' if ev.is_probe else ''}."


_OUTCOMES = {"error": "failed", "timeout": "timed out", "rejected": "was refused", "cancelled": "was cancelled"}


def _completed(ev: ToolCompleted) -> str:
    hit = " from the cache" if ev.cache_hit else ""
    if ev.status == "success":
        return f"{ev.exposed_name} answered in {_ms(ev.latency_ms)}{hit}: {ev.message}"
    what = _OUTCOMES.get(ev.status, f"ended {ev.status}")
    # the raw text, for the operator (the caller heard ToolResult.spoken)
    return f"{ev.exposed_name} {what} after {_ms(ev.latency_ms)}{hit}: {ev.message}"


def _progress(ev: ToolProgressed) -> str:
    of = f" of {ev.total:g}" if ev.total else ""
    return f"{ev.exposed_name} reports progress {ev.progress:g}{of}{_because(ev.message or '')}."


def _rejected(ev: ToolRejected) -> str:
    return f"{ev.exposed_name} was not run: {ev.reason}"


def _approval_requested(ev: ToolApprovalRequested) -> str:
    why = f" ({ev.reason})" if ev.reason else ""
    return f"{ev.exposed_name} waits up to {ev.timeout_s:g} s for the operator's approval{why}."


def _approval_resolved(ev: ToolApprovalResolved) -> str:
    name, why = ev.exposed_name, _because(ev.reason)
    if ev.outcome == "timed_out":
        return f"nobody approved {name} in time, so it was not run."
    if ev.outcome == "approved":
        return f"the {ev.by} approved {name}{why}."
    if ev.outcome == "denied":
        return f"the {ev.by} denied {name}{why}."
    return f"the wait for approval of {name} ended ({_words(ev.outcome)}){why}."


def _tier(ev: TierChanged) -> str:
    whose = "the call" if ev.call_id else "the default tier"
    return f"{whose} moved from {ev.old.upper()} to {ev.new.upper()}{_because(ev.reason)}."


def _tools_changed(ev: ToolsChanged) -> str:
    parts = []
    if ev.added:
        parts.append(f"{', '.join(ev.added)} switched on")
    if ev.removed:
        parts.append(f"{', '.join(ev.removed)} switched off")
    what = "; ".join(parts) or f"the tools changed (revision {ev.revision})"
    whom = "" if ev.call_id else " for all calls"
    when = "now (the turn restarted)" if ev.apply == "now" else "from the next turn"
    return f"{what}{whom}, applied {when}{_because(ev.reason)}."


def _omitted(ev: ToolsOmitted) -> str:
    left = f": {', '.join(ev.omitted)}" if ev.omitted else ""
    return f"{ev.provider} takes at most {ev.limit} tools, so {len(ev.omitted)} were left out{left}."


def _rate_limits(ev: ProviderRateLimits) -> str:
    parts = []
    for lim in ev.limits:
        left = f"{lim.remaining} of {lim.limit}" if lim.limit is not None else f"{lim.remaining}"
        reset = f" (resets in {lim.reset_seconds:g} s)" if lim.reset_seconds is not None else ""
        parts.append(f"{left} {lim.name} left{reset}")
    return f"{ev.provider} has {', '.join(parts) or 'no rate limits to report'}."


def _transfer_started(ev: CallTransferStarted) -> str:
    return f"{ev.mode} transfer to {ev.target} ({ev.destination}) started; it is ringing."


def _transfer_answered(ev: CallTransferAnswered) -> str:
    return f"{ev.target} answered and took the caller (hand-off {_ms(ev.handoff_ms)})."


def _transfer_failed(ev: CallTransferFailed) -> str:
    return f"the transfer to {ev.target} failed{_because(ev.reason)}."


def _transfer_cancelled(ev: CallTransferCancelled) -> str:
    return f"the transfer to {ev.target} was cancelled."


_MONITOR = {
    "off": "the operator left the call to the agent.",
    "listen": "the operator listens in.",
    "whisper": "the operator whispers to the agent; the caller does not hear it.",
    "takeover": "the operator took the call over from the agent.",
}


def _monitor(ev: CallMonitorChanged) -> str:
    return _MONITOR.get(ev.mode, f"the operator's place on the call is now {_words(ev.mode)}.")


_SERVER_STATES = {"up": "is up", "down": "is down", "disabled": "is switched off", "needs_sign_in": "needs a sign-in"}


def _server(ev: ServerStateChanged) -> str:
    state = _SERVER_STATES.get(ev.state, _words(ev.state))
    restarts = f" after {ev.restarts} restart{'' if ev.restarts == 1 else 's'}" if ev.restarts else ""
    err = f"; last error: {ev.last_error}" if ev.last_error else "."
    return f"server {ev.server} {state}{restarts}{err}"


_WHY_ANNOUNCED = {"slow_tool": "a slow tool", "approval": "an approval"}


def _announced(ev: AnnouncementPlayed) -> str:
    return f"the caller heard “{ev.text}” while waiting for {_WHY_ANNOUNCED.get(ev.reason, _words(ev.reason))}."


def _announce_requested(ev: AnnouncementRequested) -> str:
    why = _WHY_ANNOUNCED.get(ev.reason, _words(ev.reason))
    return f"the caller is told “{ev.text}” while {ev.exposed_name} waits ({why})."


def _steering(ev: SteeringInjected) -> str:
    if ev.hidden:
        return f"the operator whispered to the agent via {ev.via} (hidden from the caller): {ev.text}"
    return f"the operator had the agent say via {ev.via}: {ev.text}"


def _over_budget(ev: TurnOverBudget) -> str:
    return f"a turn's tools took {_ms(ev.latency_ms)}, over the {ev.tier.upper()} tier's budget of {ev.budget_ms} ms."


def _reloaded(ev: ConfigReloaded) -> str:
    if ev.error:
        return f"the config reload failed: {ev.error}"
    groups = ((ev.added, "added"), (ev.removed, "removed"), (ev.changed, "changed"))
    parts = [f"{name} {what}" for names, what in groups for name in names]
    return f"config reloaded: {'MCP server ' + ', '.join(parts) if parts else 'no MCP server changed'}."


def _error(ev: EngineError) -> str:
    return f"error: {ev.message}"


def _softphone(ev: SoftphoneStateChanged) -> str:
    extra = [w for w, on in (("muted", ev.muted), ("push-to-talk", ev.push_to_talk)) if on]
    return f"softphone {ev.state}{' (' + ', '.join(extra) + ')' if extra else ''}."


def _level(ev: SoftphoneLevel) -> str:
    return f"softphone input at {ev.level_dbfs:.0f} dBFS."


def _elicit_requested(ev: ElicitationRequested) -> str:
    how = "a web page" if ev.mode == "url" else "a question"
    return f"{ev.exposed_name} asks the {ev.ask} {how}: {ev.message}"


def _elicit_waiting(ev: ElicitationWaiting) -> str:
    return f"waiting for the {ev.who} to answer{_because(ev.prompt)}"


_ANSWERS = {"accept": "answered", "decline": "declined", "cancel": "cancelled"}


def _elicit_resolved(ev: ElicitationResolved) -> str:
    why = f" ({ev.reason})" if ev.reason else ""
    if ev.by == "timeout":
        return f"nobody answered {ev.exposed_name}'s question in time{why}."
    return f"the {ev.by} {_ANSWERS.get(ev.action, _words(ev.action))} {ev.exposed_name}'s question{why}."


def _email_queued(ev: EmailQueued) -> str:
    return f"a {ev.kind} e-mail ({ev.message_id}) is in the outbox{', held for review' if ev.held else ''}."


def _email_sent(ev: EmailSent) -> str:
    tries = f" on attempt {ev.attempts}" if ev.attempts > 1 else ""
    return f"the {ev.kind} e-mail ({ev.message_id}) was sent{tries}{' (possibly again)' if ev.resent else ''}."


def _email_failed(ev: EmailFailed) -> str:
    then = "the outbox gave up" if ev.final else "it will be retried"
    return f"sending the {ev.kind} e-mail ({ev.message_id}) failed on attempt {ev.attempts}, {then}: {ev.reason}"


def _timings(ev: TurnTimings) -> str:
    return f"turn {ev.turn} answered in {_ms(ev.latency_ms)} (budget {ev.budget_ms} ms, tier {ev.tier.upper()})."


def _speaking(ev: SpeakingChanged) -> str:
    verb = "started" if ev.speaking else "stopped"
    return f"the {ev.who} {verb} talking{' over the agent' if ev.barge_in else ''}."


_BY_TYPE: dict[str, Callable[[Any], str]] = {
    "call.usage": _usage,
    "usage.updated": _usage_updated,
    "usage.budget": _budget,
}
_RENDERERS: dict[str, Callable[[Any], str]] = _BY_TYPE | {
    cls.type: fn
    for cls, fn in (
        (CallStarted, _call_started),
        (CallEnded, _call_ended),
        (TranscriptAdded, _transcript),
        (ToolRequested, _requested),
        (ToolCompleted, _completed),
        (ToolProgressed, _progress),
        (ToolRejected, _rejected),
        (ToolApprovalRequested, _approval_requested),
        (ToolApprovalResolved, _approval_resolved),
        (TierChanged, _tier),
        (ToolsChanged, _tools_changed),
        (ToolsOmitted, _omitted),
        (ProviderRateLimits, _rate_limits),
        (CallTransferStarted, _transfer_started),
        (CallTransferAnswered, _transfer_answered),
        (CallTransferFailed, _transfer_failed),
        (CallTransferCancelled, _transfer_cancelled),
        (CallMonitorChanged, _monitor),
        (ServerStateChanged, _server),
        (AnnouncementPlayed, _announced),
        (AnnouncementRequested, _announce_requested),
        (SteeringInjected, _steering),
        (TurnOverBudget, _over_budget),
        (ConfigReloaded, _reloaded),
        (EngineError, _error),
        (SoftphoneStateChanged, _softphone),
        (SoftphoneLevel, _level),
        (ElicitationRequested, _elicit_requested),
        (ElicitationWaiting, _elicit_waiting),
        (ElicitationResolved, _elicit_resolved),
        (EmailQueued, _email_queued),
        (EmailSent, _email_sent),
        (EmailFailed, _email_failed),
        (TurnTimings, _timings),
        (SpeakingChanged, _speaking),
    )
}

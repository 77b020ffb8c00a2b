"""Core ``ava-engine`` commands: check, schema, tools, call (``secrets`` lives in ``engine.cli.secrets_commands``)."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from engine.bounds.json_text import valid_text
from engine.cli.common import UsageError, load, print_json, running_engine
from engine.sessions.steering import clean_steer_text


def register(sub: Any) -> None:
    p = sub.add_parser("check", help="validate the config and build every provider")
    p.add_argument("--connect", action="store_true", help="also reach every provider and Asterisk's ARI")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S", help="with --connect: seconds per target")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("schema", help="write the config's JSON schema (for editor completion)")
    p.add_argument("--output", "-o", help="file to write (default: stdout)")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("tools", help="the tool declarations a context (and provider) would receive")
    p.add_argument("--context", help="context name (default: every registered tool)")
    p.add_argument("--provider", help="provider TYPE (openai_chat, anthropic, gemini …); canonical when omitted")
    p.add_argument("--tier", choices=["fast", "standard", "deep"], help="latency tier (default: the context's)")
    p.add_argument("--strict", action="store_true", help="OpenAI strict mode schemas")
    p.set_defaults(func=cmd_tools)

    p = sub.add_parser("call", help="a text call through the real engine")
    p.add_argument("--context", required=True)
    step = {"action": _Step, "default": [], "metavar": "TEXT"}
    p.add_argument("--say", const="say", help="what the caller says (repeatable)", **step)
    p.add_argument("--say-now", const="say_now", help="steering: the agent says TEXT next", **step)
    p.add_argument("--whisper", const="whisper", help="steering: a hidden note for its next turn", **step)
    p.add_argument("--provider", help="a configured provider NAME to use instead of the context's")
    p.add_argument("--caller-name")
    p.add_argument("--caller-number")
    p.add_argument("--audio-in", metavar="WAV", help="a voice call: the caller's audio (PCM16 WAV) instead of --say")
    p.add_argument("--audio-out", metavar="WAV", help="with --audio-in: the agent's audio, on the input's timeline")
    p.set_defaults(func=cmd_call)


# ---------------------------------------------------------------------------------------------------- check, schema


def cmd_check(args: argparse.Namespace) -> int:
    from engine.providers.factory import create_provider

    settings = load(args)
    for name, cfg in settings.providers.items():
        create_provider(name, cfg, base_dir=args.config_path.parent)
    summary: dict[str, Any] = {
        "ok": True,
        "config": str(args.config_path),
        "providers": sorted(settings.providers),
        "contexts": sorted(settings.contexts),
        "mcp_servers": sorted(settings.mcp.servers),
    }
    if args.connect:
        from engine.cli.connect_check import report

        return report(args, settings, summary)
    if args.json:
        print_json(summary)
    else:
        print(
            f"{args.config_path}: OK — {len(summary['providers'])} providers, {len(summary['contexts'])} contexts, "
            f"{len(summary['mcp_servers'])} MCP servers"
        )
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from engine.config.schema import json_schema

    text = json.dumps(json_schema(), indent=2)
    if args.output:
        from pathlib import Path

        Path(args.output).write_text(text + "\n", encoding="utf-8")
        if args.json:
            print_json({"written": args.output})
        else:
            print(f"wrote {args.output}")
    else:
        print(text)
    return 0


# ---------------------------------------------------------------------------------------------------- tools


def _render(provider_type: str | None, view: Any, strict: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The tools array, and what the rendering left out or sent non-strict (``rendering`` in the JSON)."""
    if provider_type is None:
        return view.declarations(), {}
    from engine.providers.rendering import render_tools

    rendered = render_tools(provider_type, view, strict=strict)
    return rendered.tools, rendered.report()


async def cmd_tools(args: argparse.Namespace) -> int:
    settings = load(args)
    from engine.config.models import ProviderConfig

    if args.provider is not None:
        allowed = ProviderConfig.model_fields["type"].annotation.__args__  # type: ignore[union-attr]
        if args.provider not in allowed:
            raise UsageError(f"--provider: unknown provider type {args.provider!r} (one of: {', '.join(allowed)})")
    async with running_engine(args, settings) as engine:
        if args.context:
            if args.context not in settings.contexts:
                known = ", ".join(sorted(settings.contexts)) or "none"
                raise UsageError(f"--context: unknown context {args.context!r} (known: {known})")
            tier = args.tier or settings.contexts[args.context].tier.default
            view = engine.context_view(args.context, tier)
        else:
            tier = args.tier or "deep"
            view = engine.views.view(["*"], tier, None, 0, "")
        tools, rendering = _render(args.provider, view, args.strict)
        out: dict[str, Any] = {
            "context": args.context,
            "provider": args.provider,
            "tier": tier,
            "tools": tools,
        }
        if rendering:
            out["rendering"] = rendering
        # MCP tools' title, annotations and outputSchema (not part of what a provider receives)
        out["tool_info"] = {e.name: info() for e in view.tools if (info := getattr(e.tool, "info", None))}
        details = _details(engine, args.context, tier)
        if details is not None:
            out.update(details)
        else:
            out["hidden"] = [{"name": n, "reason": r} for n, r in view.hidden]
    if args.json:
        print_json(out)
        return 0
    print(f"context: {args.context or '(all tools)'}   tier: {tier}   provider: {args.provider or 'canonical'}")
    for decl in view.declarations():
        print(f"  {decl['name']:<40} {str(decl['description'])[:70]}")
    for h in out.get("hidden", []):
        print(f"  (hidden) {h['name']:<31} {h['reason']}")
    for name in rendering.get("omitted", []):
        print(f"  (left out) {name:<29} over the provider's limit of {rendering['limit']} tools")
    for row in rendering.get("non_strict", []):
        print(f"  (non-strict) {row['name']:<27} {row['reason']}")
    return 0


def _details(engine: Any, context: str | None, tier: str) -> dict[str, Any] | None:
    if context is None:
        return None
    report: dict[str, Any] = engine.tools_report(context, tier)
    return {k: v for k, v in report.items() if k not in ("context", "provider", "tier", "tools")}


# ---------------------------------------------------------------------------------------------------- call


class _Step(argparse.Action):
    """``--say``, ``--say-now``, ``--whisper``: each kept in its own list and, in command-line order, in ``steps``."""

    def __call__(self, parser: Any, ns: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        setattr(ns, self.dest, [*(getattr(ns, self.dest) or []), values])  # never the shared default list
        ns.steps = [*getattr(ns, "steps", []), (self.const, values)]


async def cmd_call(args: argparse.Namespace) -> int:
    settings = load(args)
    # argv with invalid UTF-8 arrives with lone surrogates (surrogateescape): made valid text here, where it enters
    for name in ("caller_name", "caller_number"):
        if getattr(args, name) is not None:
            setattr(args, name, valid_text(getattr(args, name)))
    if args.context not in settings.contexts:
        known = ", ".join(sorted(settings.contexts)) or "none"
        raise UsageError(f"--context: unknown context {args.context!r} (known: {known})")
    if args.provider and args.provider not in settings.providers:
        raise UsageError(f"--provider: {args.provider!r} is not a configured provider")
    if args.audio_in or args.audio_out:
        if args.say_now or args.whisper:
            raise UsageError("--say-now and --whisper steer a text call (--say), not an --audio-in call")
        return await _voice_call(args, settings)
    steps: list[tuple[str, str]] = [(kind, valid_text(text)) for kind, text in getattr(args, "steps", [])]
    for kind, text in steps:
        if kind != "say":
            try:
                clean_steer_text("say" if kind == "say_now" else kind, text)
            except ValueError as e:
                raise UsageError(f"--{kind.replace('_', '-')}: {e}") from None
    async with running_engine(args, settings) as engine:
        sub = engine.bus.subscribe(maxsize=100_000)
        printer = asyncio.create_task(_print_events(sub, args.json))
        session = await engine.start_call(
            args.context,
            provider=args.provider,
            caller_name=args.caller_name,
            caller_number=args.caller_number,
        )
        for kind, text in steps:
            if not session.active:
                break
            if kind == "whisper":
                await engine.whisper(session.call_id, text)
            elif kind == "say_now":
                await engine.say_now(session.call_id, text)
            else:
                await engine.user_said(session.call_id, text)
        if session.active:
            await engine.end_call(session.call_id, "caller finished")
        await asyncio.sleep(0)
        sub.close()
        await printer
    return 0


async def _voice_call(args: argparse.Namespace, settings: Any) -> int:
    """``call --audio-in/--audio-out``: the caller's WAV in, the agent's WAV out on the input's timeline. The local
    pipeline reads the WAV as fast as it can (its clock stops while it thinks); a realtime provider hears the
    caller itself, across a network, so the WAV is played to it at real-time pace (``RealtimeVoiceCall``)."""
    if not (args.audio_in and args.audio_out):
        raise UsageError("--audio-in and --audio-out go together (the caller's WAV and the agent's WAV)")
    if args.say:
        raise UsageError("--say and --audio-in are alternatives: the caller either types or speaks")
    from pathlib import Path

    from engine.realtime.driver import voice_call
    from engine.realtime.host import is_realtime
    from engine.voice.wav_backend import WavBackend

    if not await asyncio.to_thread(Path(args.audio_in).is_file):
        raise UsageError(f"--audio-in: no such file {args.audio_in}")
    async with running_engine(args, settings) as engine:
        try:
            live = is_realtime(engine.voice_parts, args.context, args.provider)
            backend = WavBackend(args.audio_in, args.audio_out, timeline=True, realtime=live)
        except (ValueError, OSError) as e:
            raise UsageError(f"--audio-in/--audio-out: {e}") from e
        sub = engine.bus.subscribe(maxsize=100_000)
        printer = asyncio.create_task(_print_events(sub, args.json))
        try:
            call = voice_call(
                engine.voice_parts,  # what a voice call uses of the engine, never the engine itself
                backend,
                args.context,
                provider=args.provider,
                caller_name=args.caller_name,
                caller_number=args.caller_number,
            )
            await call.run()
        finally:
            await backend.close()
            await asyncio.sleep(0)
            sub.close()
            await printer
    return 0


_CALL_EVENTS = {
    "call.started",
    "call.ended",
    "call.usage",
    "transcript.added",
    "tool.requested",
    "tool.completed",
    "tool.rejected",
    "tool.approval_requested",
    "tool.approval_resolved",
    "tier.changed",
    "tools.changed",
    "tools.omitted",
    "announcement.requested",
    "announcement.played",
    "turn.timings",  # --json only: the stage timings of each turn (the console's latency waterfall)
    "speaking.changed",
    "turn.over_budget",
    "engine.error",
    "steering.injected",
    "elicitation.requested",
    "elicitation.waiting",
    "elicitation.resolved",
}


async def _print_events(sub: Any, as_json: bool) -> None:
    from engine.bounds.json_text import require_valid
    from engine.events.bus import SkippedEvents, event_line

    skipped = SkippedEvents("cli")
    async for ev in sub:
        if ev.type not in _CALL_EVENTS:
            continue
        try:  # one event that cannot be printed is skipped (logged once): the call's other lines still come
            line = event_line(ev) if as_json else _human(ev)
            if line:
                print(require_valid(line), flush=True)
        except (TypeError, ValueError, RecursionError) as e:
            skipped.skip(ev, e)


#: The events ``call`` prints without ``--json`` besides the call's start, end and transcript, each after its mark.
_MARKS = {
    "tool.completed": "↳",
    "tool.rejected": "✗",
    "elicitation.waiting": "?",
    "elicitation.resolved": "?",
    "tier.changed": "⇅",
    "tools.changed": "⚙",
    "call.usage": "Σ",
    "engine.error": "!",
    "announcement.requested": "♪",
    "steering.injected": "✎",
}


def _human(ev: Any) -> str | None:
    from engine.events import describe_event

    t = ev.type
    if t == "call.started":
        return f"── call {ev.call_id} started (context {ev.context}, provider {ev.provider}, tier {ev.tier})"
    if t == "transcript.added":
        return f"{'agent' if ev.role == 'assistant' else 'you':>6}: {ev.text}"
    if t == "call.ended":
        return f"── call {ev.call_id} ended ({ev.reason}, {ev.duration_s:.1f} s)"
    mark = _MARKS.get(t)
    if mark is None or (t == "tools.changed" and not ev.call_id):
        return None
    return f"        {mark} {describe_event(ev, with_call=False)}"  # the console's log words it the same

"""Benchmark: rendering 200 tool declarations for every provider type, cold vs. with the revision cache.

Cold = names, schemas and wrappers rendered from the canonical declarations (what happens when a call's view
key changes); cached = the per-request cost once the view is unchanged (one lookup by view key). Prints the
per-request time of each and their ratio, in one run, against the goal of < 0.1 ms per cached request.

    .venv/bin/python bench/render.py [--tools 200] [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from engine.providers.rendering import PROVIDER_TYPES, ToolRenderer, render_tools
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult
from engine.tools.registry import ToolRegistry
from engine.tools.view import ToolView, ToolViewBuilder

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tool_schemas"
GOAL_MS = 0.1


async def _noop(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
    return ToolResult.success("ok")


def build_view(n: int) -> ToolView:
    schemas = [t for f in sorted(CORPUS.glob("*.json")) for t in json.loads(f.read_text())["tools"]]
    reg = ToolRegistry()
    for i in range(n):
        t = schemas[i % len(schemas)]
        name = f"mcp_bench_{i}_" + "".join(c if c.isalnum() else "_" for c in t["name"].lower())
        reg.register(FunctionTool(ToolDefinition(name[:64], t["description"], input_schema=t["inputSchema"]), _noop))
    return ToolViewBuilder(reg).view(["*"], "standard")


def per_call_ms(fn: Any, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) * 1000 / repeat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--tools", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    view = build_view(args.tools)
    print(f"{args.tools} tools, cold x{args.repeat}, cached x{args.repeat * 1000}")
    print(f"{'provider':<25}{'cold ms':>10}{'cached ms':>12}{'ratio':>10}  goal")
    worst = 0.0
    for ptype in PROVIDER_TYPES:
        for strict in (False, True) if ptype in ("openai_chat", "openai_responses") else (False,):
            cold = per_call_ms(lambda p=ptype, s=strict: render_tools(p, view, strict=s), args.repeat)
            r = ToolRenderer(ptype, strict=strict)
            r.render(view)
            cached = per_call_ms(lambda r=r: r.render(view), args.repeat * 1000)
            worst = max(worst, cached)
            label = ptype + (" strict" if strict else "")
            ok = "ok" if cached < GOAL_MS else "MISSED"
            print(f"{label:<25}{cold:>10.3f}{cached:>12.5f}{cold / cached:>9.0f}x  {ok}")
    print(f"worst cached request: {worst:.5f} ms (goal < {GOAL_MS} ms): {'met' if worst < GOAL_MS else 'MISSED'}")


if __name__ == "__main__":
    main()

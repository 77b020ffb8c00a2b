"""MCP elicitation: a tool's mid-call question answered by the caller, the operator, or declined (per context)."""

# engine.events re-exports this package's events: loading it first means a module of this package can be the first
# one a process imports (engine.elicitation.events needs engine.events.Event, and engine.events needs it back).
import engine.events  # noqa: F401

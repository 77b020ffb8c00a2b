"""The tool framework: definitions, results, the registry, per-call views and argument validation."""

from engine.tools.base import (
    FunctionTool,
    LatencyMeta,
    Tool,
    ToolCategory,
    ToolDefinition,
    ToolExecutionContext,
    ToolParameter,
    ToolResult,
)
from engine.tools.registry import ToolNameConflict, ToolRegistry
from engine.tools.view import ToolView, ToolViewBuilder

__all__ = [
    "FunctionTool",
    "LatencyMeta",
    "Tool",
    "ToolCategory",
    "ToolDefinition",
    "ToolExecutionContext",
    "ToolNameConflict",
    "ToolParameter",
    "ToolRegistry",
    "ToolResult",
    "ToolView",
    "ToolViewBuilder",
]

"""MCP elicitation: a tool's mid-call question answered by the caller, the operator, or declined (per context)."""

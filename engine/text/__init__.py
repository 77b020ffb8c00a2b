"""Text the engine reads from speech: one place for the readings every part shares (spoken numbers, …).

Why it exists: dice, scripts, e-mail addresses and elicitation answers all hear numbers as words; each used to parse
them its own way ("niner" was 9, None or a word; "one two three" was 123, 6 or "1 2 3"). This package imports
nothing of the engine, so the built-in MCP servers (separate processes) may import it too.
"""

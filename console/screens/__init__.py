"""The console's screens, one per file, each with its .tcss beside it."""

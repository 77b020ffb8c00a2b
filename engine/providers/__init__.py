"""Providers: render the canonical conversation and tool view for each LLM or voice provider."""

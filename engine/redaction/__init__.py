"""Masking secret values (the config's credentials) in events, logs, results and errors: one ``Redactor``."""

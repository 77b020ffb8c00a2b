"""Bounds on untrusted input: JSON text (depth, size, valid Unicode) and YAML (a bounded loader). Standalone: the
built-in servers import ``engine.bounds.yaml_loader``, so nothing here imports the rest of the engine."""

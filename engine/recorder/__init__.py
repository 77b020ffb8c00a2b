"""The flight recorder: every call's events as JSON lines (and its audio as WAV) in the user data folder.

Why a package of its own: recording is what the engine keeps after a call — it must never slow one down, never
hold a secret, and stay readable when the engine is killed. ``component`` subscribes to the bus and hands batches
to ``writer`` (a thread with a bounded queue: the disk is off the event loop); ``files`` names recordings and
enforces retention; ``codec`` reads them back (tolerating a torn last line) and turns lines into events again;
``summary`` and ``export`` make a call's transcript, tools and tiers into Markdown or JSON (``ava-engine export``);
``audio`` taps a voice call's audio backend.
"""

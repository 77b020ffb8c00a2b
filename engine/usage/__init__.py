"""What calls consume and what it costs: each provider's usage fields read into one ``UsageReport`` (report),
priced from ``providers.<name>.prices`` or the shipped, dated defaults (prices), summed per call by a
``UsageMeter`` (meter) that publishes ``usage.updated`` per turn (events), feeds the Prometheus counters and
guards the context's ``max_cost``/``max_tokens``. Import the submodules; the events are in ``engine.events``.
"""

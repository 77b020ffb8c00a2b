"""What calls consume and what it costs: each provider's usage fields read into one ``UsageReport`` (report),
priced from ``providers.<name>.prices`` or the shipped, dated defaults (prices), summed per call by a
``UsageMeter`` (meter) that publishes ``usage.updated`` per turn (events), feeds the Prometheus counters and
guards the context's ``max_cost``/``max_tokens``. Import the submodules: ``engine.events`` re-exports the events.
"""

# First, so that importing any submodule first still works: engine.events re-exports engine.usage.events, which
# needs engine.events' ``Event``; loading engine.events here runs that cycle in the one order that resolves.
import engine.events  # noqa: F401

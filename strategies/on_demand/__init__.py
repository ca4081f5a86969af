"""`on_demand`, memory the agent recalls with a tool: strategy (the class and its memory tool)."""

from strategies.on_demand.strategy import OnDemand

__all__ = ["OnDemand"]

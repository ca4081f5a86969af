"""`awm` and `awm_online`, Agent Workflow Memory offline and online: strategy (`awm`), online (`awm_online`)."""

from strategies.awm.strategy import AgentWorkflowMemory
from strategies.awm.online import AwmOnline

__all__ = ["AgentWorkflowMemory", "AwmOnline"]

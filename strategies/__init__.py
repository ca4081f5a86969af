"""Memory strategies behind one protocol. Import from here, not from the modules."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # strategies that call LiteLLM: no network price map

from strategies.declaration import Declaration
from strategies.options import option
from strategies.base import (
    EMPTY,
    Delivery,
    Embedder,
    Guideline,
    MemoryTool,
    MemoryToolError,
    ModelCall,
    StepView,
    Strategy,
    StrategyBase,
    TaskView,
    Trajectory,
    render_guidelines,
    report_call,
)
from strategies.registry import (StrategyContext, UnknownStrategy, available, check_memory, create, declaration,
                                 delivered_frame, known_options, learns_online, register, strategy_class,
                                 trial_streams, typed_options, uses_ground_truth, uses_memory, validate_options)

__all__ = [
    "Declaration", "option", "EMPTY", "Delivery", "Embedder", "Guideline", "MemoryTool", "MemoryToolError",
    "ModelCall", "StepView", "Strategy", "StrategyBase", "TaskView",
    "Trajectory", "render_guidelines", "report_call",
    "StrategyContext", "UnknownStrategy", "available", "check_memory", "create", "declaration", "delivered_frame",
    "known_options", "learns_online",
    "register", "strategy_class", "trial_streams", "typed_options", "uses_ground_truth", "uses_memory",
    "validate_options",
]
